//go:build !calaf_offline

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A vendor changes a file of a package whose TOSCA.meta carries digests: validate refuses
// it, naming the file and calaf package digest; calaf package digest rewrites the stale
// digest, and the package validates again.
func TestPackageDigest(t *testing.T) {
	dir := t.TempDir()
	pkg := copyPackage(t, "cnf-tacker", dir)
	request := filepath.Join(etsiPackages, "cnf-tacker.one-file.json")
	manifest := filepath.Join(pkg, "Files", "kubernetes", "vdu2.yaml")
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte(strings.Replace(string(data), "replicas: 1", "replicas: 1 # changed", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCalaf(t, caseTimeout, "validate", pkg, "--instantiate", request)
	if code != ExitInvalid || !strings.Contains(stderr, "Files/kubernetes/vdu2.yaml: SHA-256 mismatch") ||
		!strings.Contains(stderr, "`calaf package digest` rewrites the package's digests from them (before it is signed)") {
		t.Fatalf("validate of the changed package: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := runCalaf(t, caseTimeout, "package", "digest", pkg)
	if code != 0 || !strings.Contains(stdout, "TOSCA-Metadata/TOSCA.meta:") || !strings.Contains(stdout, ": Files/kubernetes/vdu2.yaml: SHA-256 digest rewritten\n1 digests rewritten\n") {
		t.Fatalf("package digest: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := runCalaf(t, caseTimeout, "validate", pkg, "--instantiate", request); code != 0 {
		t.Errorf("validate after package digest: exit %d\n%s", code, stderr)
	}
	if code, stdout, _ := runCalaf(t, caseTimeout, "package", "digest", pkg); code != 0 || stdout != "0 digests rewritten\n" {
		t.Errorf("a second package digest: exit %d\n%s", code, stdout)
	}
}

// package digest rewrites directories only, and refuses a listing naming a missing file.
func TestPackageDigestRefusals(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "service.yaml", []byte("tosca_definitions_version: tosca_simple_yaml_1_3\n"))
	if code, _, stderr := runCalaf(t, caseTimeout, "package", "digest", file); code != ExitUsage || !strings.Contains(stderr, "is not a package directory: unpack the package") {
		t.Errorf("a file: exit %d\n%s", code, stderr)
	}
	pkg := copyPackage(t, "cnf-tacker", dir)
	if err := os.Remove(filepath.Join(pkg, "Scripts", "tacker_mgmt.py")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCalaf(t, caseTimeout, "package", "digest", pkg)
	if code != ExitInvalid || !strings.Contains(stderr, "Scripts/tacker_mgmt.py: listed, but missing from the package") {
		t.Errorf("a listed file missing: exit %d\n%s", code, stderr)
	}
}
