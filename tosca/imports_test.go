package tosca

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const profileURL = "oci://registry.example/acme/profile:1.0"

// acmeImport opens the example vendor profile, changed by edits (old → new), as an
// import resolved for profileURL.
func acmeImport(t *testing.T, edits ...string) Import {
	t.Helper()
	dir := t.TempDir()
	src := "../examples/vendor-profile/Profiles/acme/1.0"
	for _, rel := range []string{"profile.yaml", "js/cache.js"} {
		data, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for i := 0; rel == "profile.yaml" && i+1 < len(edits); i += 2 {
			text = strings.Replace(text, edits[i], edits[i+1], 1)
		}
		os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	profile, err := OpenEntry(dir, "profile.yaml", DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return Import{URL: profileURL, Digest: "sha256:" + strings.Repeat("a", 64), Profile: profile.Describe()}
}

// importingPackage is a package whose template imports the profile by reference.
func importingPackage(t *testing.T) *Package {
	return writePackage(t, map[string]string{"service.yaml": template + `imports:
- ` + profileURL + `
topology_template:
  node_templates:
    sessions:
      type: acme.nodes.Cache
      properties:
        image: busybox:1.36
        eviction: { policy: lfu }
`})
}

// TestImportByReference: a package compiles against a profile imported by reference once
// it is resolved, and the Clout speaks of the profile's files by the import's URL, not
// by where they were cached; unresolved, the import is refused at its line.
func TestImportByReference(t *testing.T) {
	pkg := importingPackage(t)
	compiler := NewCompiler(1)
	ctx := context.Background()
	_, err := compiler.Compile(ctx, pkg, nil)
	if err == nil || !strings.Contains(err.Error(), `service.yaml:3:3: import "`+profileURL+`" is not resolved`) {
		t.Fatalf("unresolved: %v", err)
	}
	imp := acmeImport(t)
	compiled, err := compiler.Compile(ctx, pkg.WithImports([]Import{imp}), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(compiled.Clout)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), imp.Profile.Root) {
		t.Errorf("the Clout names the cache directory %s", imp.Profile.Root)
	}
	if !strings.Contains(string(data), "acme.render.cache") || !strings.Contains(string(data), "acme.nodes.Cache") {
		t.Errorf("the Clout lacks the profile's type and renderer")
	}
}

// TestImportByReferenceConfined: an imported profile is walked within its own files —
// a file of the profile that is wrong is reported by the import's URL and the file's line,
// and one that reaches out of the profile or imports another reference is refused.
func TestImportByReferenceConfined(t *testing.T) {
	pkg := importingPackage(t)
	cases := []struct {
		name  string
		edits []string
		want  string
	}{
		{"a type error", []string{"        default: 64Mi", "        default: [ 64Mi ]"}, profileURL + `!profile.yaml:49:9: node_types["acme.nodes.Cache"].properties["max_memory"].default: "list" instead of "string"`},
		{"a file outside", []string{"- https://calaf.io/profiles/kubernetes/1.0/profile.yaml", "- https://calaf.io/profiles/kubernetes/1.0/profile.yaml\n- ../../outside.yaml"},
			profileURL + `!profile.yaml:16:3: import "../../outside.yaml": it leaves the package`},
		{"another reference", []string{"- https://calaf.io/profiles/kubernetes/1.0/profile.yaml", "- https://calaf.io/profiles/kubernetes/1.0/profile.yaml\n- oci://registry.example/other:1.0"},
			profileURL + `!profile.yaml:16:3: import "oci://registry.example/other:1.0": a profile imported by reference imports only its own files and the Calaf profile`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewCompiler(1).Compile(context.Background(), pkg.WithImports([]Import{acmeImport(t, c.edits...)}), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
		})
	}
}

// TestReadLock: a lock's entries are read with their lines; a malformed one is refused at
// its line.
func TestReadLock(t *testing.T) {
	digest := "sha256:" + strings.Repeat("b", 64)
	good := writePackage(t, map[string]string{"service.yaml": template, LockFile: "apiVersion: calaf.io/v1alpha1\nkind: ProfileLock\nimports:\n- url: " + profileURL + "\n  digest: " + digest + "\n  content: " + digest + "\n"})
	lock, err := good.ReadLock()
	if err != nil || lock.Find(profileURL) == nil || lock.Find(profileURL).Line != 4 {
		t.Fatalf("lock %+v, %v", lock, err)
	}
	bad := writePackage(t, map[string]string{"service.yaml": template, LockFile: "apiVersion: calaf.io/v1alpha1\nkind: ProfileLock\nimports:\n- url: " + profileURL + "\n  digest: sha256:1234\n  content: " + digest + "\n- url: ./local.yaml\n  digest: " + digest + "\n  content: " + digest + "\n"})
	_, err = bad.ReadLock()
	if err == nil || !strings.Contains(err.Error(), "calaf.lock:4: "+profileURL+": digest and content must be sha256:") || !strings.Contains(err.Error(), `calaf.lock:7: url "./local.yaml" is not an import by reference`) {
		t.Fatalf("bad lock: %v", err)
	}
	if refs := importingPackage(t).ReferenceImports(); len(refs) != 1 || refs[0].URL != profileURL || refs[0].Line != 3 {
		t.Errorf("references: %+v", refs)
	}
}
