package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"calaf.io/calaf/test/ociregistry"
)

// runCLIInput runs the command line with stdin and returns its exit code and outputs.
func runCLIInput(stdin string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Run(args, Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// TestProfileByReference publishes a profile to a real registry and has a package import
// it by reference: the import is refused until locked; calaf package lock pins its digest
// and fills the cache; render then works offline, the registry stopped; a tag moved under
// the lock is refused as a digest mismatch; a profile signed by a trusted signer locks
// under --anchors, an unsigned one does not.
func TestProfileByReference(t *testing.T) {
	root := t.TempDir()
	t.Setenv("CALAF_PROFILE_CACHE", filepath.Join(root, "cache"))
	reg, err := ociregistry.Start(filepath.Join(root, "registry"), "vendor", "s3cret-pass")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	login := []string{"--insecure", "--username", reg.User, "--password-stdin"}
	push := func(dir, ref string, extra ...string) string {
		t.Helper()
		code, out, errOut := runCLIInput(reg.Password, append(append([]string{"profile", "push", dir, ref}, login...), extra...)...)
		if code != ExitOK {
			t.Fatalf("push %s: exit %d: %s%s", ref, code, out, errOut)
		}
		return regexp.MustCompile(`@(sha256:[0-9a-f]{64})`).FindStringSubmatch(out)[1]
	}
	profile := filepath.Join(root, "acme")
	if code, out, errOut := runCLI("profile", "init", "acme", "--dir", profile); code != ExitOK {
		t.Fatalf("init: %d %s%s", code, out, errOut)
	}
	url := "oci://" + reg.Host + "/acme/profile:0.1"
	first := push(profile, url)

	pkg := filepath.Join(root, "package")
	writeFiles(t, pkg, map[string]string{"service.yaml": `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- ` + url + `
topology_template:
  node_templates:
    web:
      type: acme.nodes.App
      properties: { image: busybox:1.36, greeting: hi }
`})
	if code, _, errOut := runCLI("validate", pkg); code != ExitInvalid || !strings.Contains(errOut, "imported at service.yaml:3 but not locked: run calaf package lock") {
		t.Fatalf("validate before lock: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLIInput(reg.Password, append([]string{"package", "lock", pkg}, login...)...)
	if code != ExitOK || !strings.Contains(out, "locked "+url+" at "+first+" (unsigned)") {
		t.Fatalf("lock: exit %d: %s%s", code, out, errOut)
	}
	lock, _ := os.ReadFile(filepath.Join(pkg, "calaf.lock"))
	if !strings.Contains(string(lock), "digest: "+first) {
		t.Fatalf("calaf.lock:\n%s", lock)
	}

	reg.Stop() // what is locked and cached renders offline
	code, out, errOut = runCLI("render", pkg)
	if code != ExitOK || !strings.Contains(out, "greeting: hi") {
		t.Fatalf("render offline: exit %d: %s%s", code, out, errOut)
	}
	if reg, err = ociregistry.Start(filepath.Join(root, "registry"), "vendor", "s3cret-pass"); err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	url2 := "oci://" + reg.Host + "/acme/profile:0.1" // the registry came back on another port
	relock := func(from, to string) {
		t.Helper()
		replaceIn(t, filepath.Join(pkg, "service.yaml"), from, to)
		lockText, _ := os.ReadFile(filepath.Join(pkg, "calaf.lock"))
		os.WriteFile(filepath.Join(pkg, "calaf.lock"), []byte(strings.ReplaceAll(string(lockText), from, to)), 0o644)
	}
	relock(url, url2)

	replaceIn(t, filepath.Join(profile, "profile.yaml"), "default: hello", "default: hello again")
	moved := push(profile, url2)
	code, _, errOut = runCLIInput(reg.Password, append([]string{"package", "lock", pkg}, login...)...)
	if code != ExitInvalid || !strings.Contains(errOut, "digest mismatch: it names "+moved+" now, the package's lock says "+first) {
		t.Fatalf("a moved tag: exit %d: %s", code, errOut)
	}

	anchors, chain, cert, key := writeCA(t, root, "acme")
	signedURL := "oci://" + reg.Host + "/acme/profile:0.2-signed"
	push(profile, signedURL, "--key", key, "--cert", cert, "--chain", chain)
	relock(url2, signedURL)
	code, out, errOut = runCLIInput(reg.Password, append([]string{"package", "lock", pkg, "--update", "--anchors", anchors}, login...)...)
	if code != ExitOK || !strings.Contains(out, `signed by CN=acme Signer, verified`) {
		t.Fatalf("lock of a signed profile: exit %d: %s%s", code, out, errOut)
	}
	unsignedURL := "oci://" + reg.Host + "/acme/profile:0.2-unsigned"
	push(profile, unsignedURL)
	relock(signedURL, unsignedURL)
	code, _, errOut = runCLIInput(reg.Password, append([]string{"package", "lock", pkg, "--update", "--anchors", anchors}, login...)...)
	if code != ExitInvalid || !strings.Contains(errOut, "error: profile "+unsignedURL+": signature: the profile is not signed") {
		t.Fatalf("lock of an unsigned profile under Enforce: exit %d: %s", code, errOut)
	}
}
