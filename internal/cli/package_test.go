package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"calaf.io/calaf/tosca"
)

// runCLI runs the command line and returns its exit code and outputs.
func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Run(args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// calaf package pack writes a reproducible CSAR; --manifest adds a SOL004 manifest that
// verifies; calaf validate verifies manifests and refuses a tampered package.
func TestPackagePackAndIntegrity(t *testing.T) {
	hello, err := os.ReadFile(filepath.Join("..", "..", "examples", "hello-world", "service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"service.yaml": string(hello)})
	out := t.TempDir()

	first, second := filepath.Join(out, "a.csar"), filepath.Join(out, "b.csar")
	for _, target := range []string{first, second} {
		if code, stdout, stderr := runCLI("package", "pack", dir, "-o", target); code != ExitOK {
			t.Fatalf("pack: exit %d: %s%s", code, stdout, stderr)
		}
	}
	a, _ := os.ReadFile(first)
	b, _ := os.ReadFile(second)
	if !bytes.Equal(a, b) || len(a) == 0 {
		t.Fatal("packing the same files twice gave different CSARs")
	}
	pkg, err := tosca.OpenArchive(a, "a.csar", tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if pkg.Entry != "service.yaml" || pkg.Meta["Entry-Definitions"] != "service.yaml" {
		t.Fatalf("entry %q, meta %v", pkg.Entry, pkg.Meta)
	}
	pkg.Close()

	signed := filepath.Join(out, "signed.csar")
	code, stdout, stderr := runCLI("package", "pack", dir, "-o", signed, "--manifest")
	if code != ExitOK || !strings.Contains(stdout, "manifest: service.mf lists 1 files") {
		t.Fatalf("pack --manifest: exit %d: %s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("validate", signed)
	if code != ExitOK || !strings.Contains(stdout, "integrity: manifest service.mf verified (1 files SHA-256)") {
		t.Fatalf("validate: exit %d: %s%s", code, stdout, stderr)
	}

	// The same package with its template changed after the manifest was written.
	extracted, err := tosca.Open(signed, tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer extracted.Close()
	tampered := t.TempDir()
	manifest, _ := extracted.ReadFile("service.mf")
	writeFiles(t, tampered, map[string]string{"service.yaml": string(hello) + "\n# changed\n", "service.mf": string(manifest)})
	code, stdout, stderr = runCLI("validate", tampered)
	if code != ExitInvalid || !strings.Contains(stderr, "error: integrity: service.mf:2: service.yaml: SHA-256 mismatch") {
		t.Fatalf("validate of a tampered package: exit %d: %s%s", code, stdout, stderr)
	}
	code, _, stderr = runCLI("package", "pack", tampered, "-o", filepath.Join(out, "x.csar"))
	if code != ExitInvalid || !strings.Contains(stderr, "SHA-256 mismatch") {
		t.Fatalf("pack of a tampered package: exit %d: %s", code, stderr)
	}
	sum := sha256.Sum256([]byte(string(hello) + "\n# changed\n"))
	if strings.Contains(stderr, hex.EncodeToString(sum[:])) == false {
		t.Fatalf("the message names the actual digest: %s", stderr)
	}
}

func TestPackageUsage(t *testing.T) {
	for _, args := range [][]string{
		{"package", "pack", "dir"},
		{"package", "push", "dir"},
		{"package", "push", "dir", "registry.example/repo:tag"},
		{"package", "push", "dir", "oci://registry.example/repo:tag", "--username", "u"},
	} {
		if code, _, stderr := runCLI(args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, ExitUsage, stderr)
		}
	}
}
