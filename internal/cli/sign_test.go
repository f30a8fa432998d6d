package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"calaf.io/calaf/tosca/sol004"
	"calaf.io/calaf/tosca/sol004/sol004test"
)

// writeCA writes a root, an intermediate and a signer (certificate and key) of a new
// PKI as PEM files in dir, prefixed by name, and returns their paths.
func writeCA(t *testing.T, dir, name string) (root, chain, cert, key string) {
	t.Helper()
	p, err := sol004test.New(name)
	if err != nil {
		t.Fatal(err)
	}
	at := func(file string) string { return filepath.Join(dir, name+file) }
	for file, data := range map[string][]byte{
		at("-root.pem"): p.RootPEM(), at("-chain.pem"): sol004.EncodeCertificates(p.Intermediate),
		at("-signer.pem"): sol004.EncodeCertificates(p.Signer.Certificate), at("-signer.key"): p.SignerKeyPEM(),
	} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return at("-root.pem"), at("-chain.pem"), at("-signer.pem"), at("-signer.key")
}

// calaf package sign makes option 1 and option 2 packages that calaf package verify and
// calaf validate --anchors accept with the right anchors and refuse (exit 1, with the
// reason) with others; an unsigned package is refused.
func TestPackageSignVerifyValidate(t *testing.T) {
	hello, err := os.ReadFile(filepath.Join("..", "..", "examples", "hello-world", "service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir, keys, out := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, dir, map[string]string{"service.yaml": string(hello)})
	root, chain, cert, key := writeCA(t, keys, "vendor")
	otherRoot, _, _, _ := writeCA(t, keys, "other")

	for option, target := range map[string]string{"1": filepath.Join(out, "signed.csar"), "2": filepath.Join(out, "signed.zip")} {
		code, stdout, stderr := runCLI("package", "sign", dir, "--key", key, "--cert", cert, "--chain", chain, "--option", option, "-o", target)
		if code != ExitOK || !strings.Contains(stdout, "signed "+target+" (SOL004 option "+option) {
			t.Fatalf("sign --option %s: exit %d: %s%s", option, code, stdout, stderr)
		}
		method := map[string]string{"1": "signed manifest (SOL004 option 1)", "2": "signed CSAR (SOL004 option 2)"}[option]
		code, stdout, stderr = runCLI("package", "verify", target, "--anchors", root)
		if code != ExitOK || !strings.Contains(stdout, "signature: "+method+` by "CN=vendor Signer", verified against anchor "CN=vendor Root CA"`) ||
			!strings.Contains(stdout, `signer: "CN=vendor Signer" issued by "CN=vendor Intermediate CA"`) {
			t.Fatalf("verify option %s: exit %d: %s%s", option, code, stdout, stderr)
		}
		code, stdout, stderr = runCLI("validate", target, "--anchors", root)
		if code != ExitOK || !strings.Contains(stdout, "valid: service.yaml") || !strings.Contains(stdout, "signature: "+method) {
			t.Fatalf("validate --anchors option %s: exit %d: %s%s", option, code, stdout, stderr)
		}
		code, stdout, stderr = runCLI("package", "verify", target, "--anchors", otherRoot)
		if code != ExitInvalid || !strings.Contains(stderr, `error: integrity: `) || !strings.Contains(stderr, `certificate "CN=vendor Signer" does not chain to a trust anchor: "CN=vendor Intermediate CA" is issued by "CN=vendor Root CA", which is neither in the package nor a trust anchor (trusted: "CN=other Root CA" from `+otherRoot) {
			t.Fatalf("verify with other anchors, option %s: exit %d: %s%s", option, code, stdout, stderr)
		}
		code, stdout, stderr = runCLI("package", "verify", target, "--anchors", otherRoot, "--mode", "Warn")
		if code != ExitOK || !strings.Contains(stdout, "NOT verified (Warn mode)") || !strings.Contains(stdout, "warning: ") {
			t.Fatalf("verify --mode Warn, option %s: exit %d: %s%s", option, code, stdout, stderr)
		}
	}

	code, stdout, stderr := runCLI("validate", dir, "--anchors", root)
	if code != ExitInvalid || !strings.Contains(stderr, "error: integrity: the package is not signed") {
		t.Fatalf("validate an unsigned package: exit %d: %s%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI("package", "verify", dir); code != ExitUsage || !strings.Contains(stderr, "--anchors") {
		t.Fatalf("verify without anchors: exit %d: %s", code, stderr)
	}

	// A package whose manifest does not list every file is not signed as it is.
	writeFiles(t, dir, map[string]string{"service.mf": "Source: service.yaml\n", "notes.txt": "unlisted\n"})
	code, stdout, stderr = runCLI("package", "sign", dir, "--key", key, "--cert", cert, "-o", filepath.Join(out, "x.csar"))
	if code != ExitInvalid || !strings.Contains(stderr, "notes.txt is in the package but not listed in the manifest") {
		t.Fatalf("sign with an unlisted file: exit %d: %s%s", code, stdout, stderr)
	}
	// The signer's certificate must match the key.
	_, _, otherCert, _ := writeCA(t, keys, "third")
	code, _, stderr = runCLI("package", "sign", dir, "--key", key, "--cert", otherCert, "-o", filepath.Join(out, "y.csar"))
	if code != ExitInvalid || !strings.Contains(stderr, `the private key does not match certificate "CN=third Signer"`) {
		t.Fatalf("sign with a mismatched certificate: exit %d: %s", code, stderr)
	}
}
