package locked

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"calaf.io/calaf/tosca"
)

const profileURL = "oci://registry.example/acme/profile:1.0"

// fakeFetcher is a registry that names a digest now, serves one artifact, or is down.
type fakeFetcher struct {
	current string
	served  *Fetched
	down    bool
	fetches int
}

func (f *fakeFetcher) Current(context.Context, string) (string, error) {
	if f.down {
		return "", Unavailable(profileURL, errors.New("connection refused"))
	}
	return f.current, nil
}

func (f *fakeFetcher) Fetch(context.Context, string, string) (*Fetched, error) {
	f.fetches++
	if f.down {
		return nil, Unavailable(profileURL, errors.New("connection refused"))
	}
	return f.served, nil
}

// profileArchive is a profile CSAR: profile.yaml and a TOSCA.meta naming it.
func profileArchive(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, text := range map[string]string{
		"TOSCA-Metadata/TOSCA.meta": "TOSCA-Meta-File-Version: 1.1\nCSAR-Version: 1.1\nCreated-By: test\nEntry-Definitions: profile.yaml\n",
		"profile.yaml":              "tosca_definitions_version: tosca_simple_yaml_1_3\nnode_types:\n  acme.nodes.Thing:\n    derived_from: tosca.nodes.Root\n",
	} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(text))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// lockedPackage is a package importing profileURL, locked at digest and content.
func lockedPackage(t *testing.T, digest, content string) *tosca.Package {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "service.yaml"), []byte("tosca_definitions_version: tosca_simple_yaml_1_3\nimports:\n- "+profileURL+"\n"), 0o644)
	if digest != "" {
		os.WriteFile(filepath.Join(dir, tosca.LockFile), []byte("apiVersion: calaf.io/v1alpha1\nkind: ProfileLock\nimports:\n- url: "+profileURL+"\n  digest: "+digest+"\n  content: "+content+"\n"), 0o644)
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

// TestResolveFromTheLock: a locked import resolves by its digest — fetched once, then from
// the cache, and from the cache alone when the registry is down; a reference that names
// another digest now is a digest mismatch even when cached; an import the lock does not pin
// is refused, and so is one neither cached nor reachable (transient).
func TestResolveFromTheLock(t *testing.T) {
	ctx := context.Background()
	archive := profileArchive(t)
	digest := sha(archive)
	cache := &Cache{Dir: t.TempDir(), Limits: tosca.DefaultLimits()}
	registry := &fakeFetcher{current: digest, served: &Fetched{Digest: digest, Artifact: archive}}
	content := func() string {
		f := &Fetched{Digest: digest, Artifact: archive}
		if err := cache.Put(f); err != nil {
			t.Fatal(err)
		}
		pkg, _, err := cache.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(cache.Dir)
		return pkg.Digest
	}()
	pkg := lockedPackage(t, digest, content)
	resolver := &Resolver{Cache: cache, Fetcher: registry}

	resolved, res, err := resolver.Resolve(ctx, pkg)
	if err != nil || len(resolved.Imports) != 1 || res[0].Cached || registry.fetches != 1 {
		t.Fatalf("first resolve: %v, %+v, %d fetches", err, res, registry.fetches)
	}
	if _, res, err = resolver.Resolve(ctx, pkg); err != nil || !res[0].Cached || registry.fetches != 1 {
		t.Fatalf("second resolve: %v, %+v, %d fetches", err, res, registry.fetches)
	}
	registry.down = true
	if _, res, err = resolver.Resolve(ctx, pkg); err != nil || !res[0].Cached {
		t.Fatalf("registry down, cached: %v", err)
	}
	registry.down, registry.current = false, sha([]byte("another manifest"))
	var failure *Error
	if _, _, err = resolver.Resolve(ctx, pkg); !errors.As(err, &failure) || failure.Reason != ReasonDigestMismatch || !strings.Contains(err.Error(), "digest mismatch: it names "+registry.current+" now") {
		t.Fatalf("moved tag: %v", err)
	}
	registry.current = digest
	if _, _, err = resolver.Resolve(ctx, lockedPackage(t, digest, sha([]byte("other files")))); !errors.As(err, &failure) || failure.Reason != ReasonDigestMismatch {
		t.Fatalf("other content: %v", err)
	}
	if _, _, err = resolver.Resolve(ctx, lockedPackage(t, "", "")); !errors.As(err, &failure) || failure.Reason != ReasonNotLocked {
		t.Fatalf("not locked: %v", err)
	}
	os.RemoveAll(cache.Dir)
	registry.down = true
	if _, _, err = resolver.Resolve(ctx, pkg); !errors.As(err, &failure) || failure.Reason != ReasonUnavailable || !failure.Transient {
		t.Fatalf("not cached, registry down: %v", err)
	}
	if _, _, err = (&Resolver{Cache: cache}).Resolve(ctx, pkg); !errors.As(err, &failure) || !strings.Contains(err.Error(), "is not in the profile cache") {
		t.Fatalf("offline, not cached: %v", err)
	}
}
