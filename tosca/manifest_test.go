package tosca

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const manifestTemplate = "tosca_definitions_version: tosca_simple_yaml_1_3\ntopology_template: {}\n"

func sum256(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
func sum512(s string) string { h := sha512.Sum512([]byte(s)); return hex.EncodeToString(h[:]) }

func openFiles(t *testing.T, files map[string]string) *Package {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		full := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkg, err := Open(dir, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

func TestVerifyIntegrity(t *testing.T) {
	script := "echo configured\n"
	good := "metadata:\n  ns_product_name: demo\n  ns_release_date_time: 2026-01-01T00:00:00Z\n\n" +
		"Source: service.yaml\nAlgorithm: SHA-256\nHash: " + sum256(manifestTemplate) + "\n\n" +
		"Source: scripts/configure.sh\nAlgorithm: SHA-512\nHash: " + strings.ToUpper(sum512(script)) + "\n\n" +
		"Source: https://vendor.example/images/core.qcow2\nAlgorithm: SHA-256\nHash: " + sum256("elsewhere") + "\n\n" +
		"non_mano_artifact_sets:\n  prv.calaf.docs:\n    Source: README.md\n"
	meta := "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nEntry-Definitions: service.yaml\nETSI-Entry-Manifest: service.mf\n"
	cases := []struct {
		name     string
		files    map[string]string
		opts     IntegrityOptions
		problem  string // empty: passes
		manifest string
	}{
		{name: "no manifest", files: map[string]string{"service.yaml": manifestTemplate}},
		{name: "no manifest, but required", files: map[string]string{"service.yaml": manifestTemplate}, opts: IntegrityOptions{RequireManifest: true}, problem: "no manifest"},
		{name: "matching manifest at the root", manifest: "service.mf",
			files: map[string]string{"service.yaml": manifestTemplate, "scripts/configure.sh": script, "service.mf": good, "README.md": "docs"}},
		{name: "manifest named by TOSCA.meta", manifest: "Other/x.mf",
			files: map[string]string{"service.yaml": manifestTemplate, "scripts/configure.sh": script, "Other/x.mf": good, MetaPath: strings.Replace(meta, "service.mf", "Other/x.mf", 1)}},
		{name: "TOSCA.meta names a missing manifest", problem: `ETSI-Entry-Manifest "service.mf" is not a file`,
			files: map[string]string{"service.yaml": manifestTemplate, MetaPath: meta}},
		{name: "tampered file", problem: "scripts/configure.sh: SHA-512 mismatch",
			files: map[string]string{"service.yaml": manifestTemplate, "scripts/configure.sh": "rm -rf /\n", "service.mf": good}},
		{name: "missing file", problem: "scripts/configure.sh: listed in the manifest but missing",
			files: map[string]string{"service.yaml": manifestTemplate, "service.mf": good}},
		{name: "unknown algorithm", problem: `unsupported digest algorithm "MD5"`,
			files: map[string]string{"service.yaml": manifestTemplate, "service.mf": "Source: service.yaml\nAlgorithm: MD5\nHash: 00\n"}},
		{name: "hash without algorithm", problem: "Hash without Algorithm",
			files: map[string]string{"service.yaml": manifestTemplate, "service.mf": "Source: service.yaml\nHash: 00\n"}},
		{name: "path leaving the package", problem: "leaves the package",
			files: map[string]string{"service.yaml": manifestTemplate, "service.mf": "Source: ../etc/passwd\nAlgorithm: SHA-256\nHash: 00\n"}},
		{name: "malformed line", problem: "service.mf:2: malformed line",
			files: map[string]string{"service.yaml": manifestTemplate, "service.mf": "Source: service.yaml\nthis is not a key value\n"}},
		{name: "several manifests, one named after the entry", manifest: "service.mf",
			files: map[string]string{"service.yaml": manifestTemplate, "scripts/configure.sh": script, "service.mf": good, "old.mf": "Source: gone\n"}},
		{name: "several manifests", problem: "several manifests",
			files: map[string]string{"service.yaml": manifestTemplate, "a.mf": good, "b.mf": good}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pkg := openFiles(t, c.files)
			report, err := pkg.VerifyIntegrity(c.opts)
			if c.problem == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if report.Manifest != c.manifest {
					t.Fatalf("manifest %q, want %q", report.Manifest, c.manifest)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error containing %q", c.problem)
			}
			if !IsIntegrity(err) {
				t.Fatalf("want an IntegrityError, got %T: %v", err, err)
			}
			if !strings.Contains(err.Error(), c.problem) {
				t.Fatalf("error %q does not contain %q", err, c.problem)
			}
		})
	}
}

func TestIntegrityReport(t *testing.T) {
	script := "echo configured\n"
	signed := "Source: service.yaml\nAlgorithm: SHA-256\nHash: " + sum256(manifestTemplate) + "\nSignature: sigs/service.sig.cms\nCertificate: sigs/vendor.cert\n\n" +
		"Source: scripts/configure.sh\nAlgorithm: SHA-256\nHash: " + sum256(script) + "\n" +
		"-----BEGIN CMS-----\nMIIB...\n-----END CMS-----\n"
	pkg := openFiles(t, map[string]string{"service.yaml": manifestTemplate, "scripts/configure.sh": script, "service.mf": signed,
		"sigs/service.sig.cms": "sig", "sigs/vendor.cert": "cert", "extra.txt": "not listed"})
	report, err := pkg.VerifyIntegrity(IntegrityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := report.Verified["SHA-256"]; len(got) != 2 {
		t.Fatalf("verified %v", got)
	}
	if !report.Signed {
		t.Fatalf("signed %v", report.Signed)
	}
	if len(report.Unlisted) != 1 || report.Unlisted[0] != "extra.txt" {
		t.Fatalf("unlisted %v", report.Unlisted)
	}
	want := "manifest service.mf verified (2 files SHA-256), 1 files not listed, signatures present but not verified (no trust anchors given)"
	if report.Summary() != want {
		t.Fatalf("summary %q, want %q", report.Summary(), want)
	}

	manifest, err := ParseManifest("service.mf", []byte(signed))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(manifest.Signature), "-----BEGIN CMS-----") || strings.Contains(string(manifest.Signed), "CMS") {
		t.Fatalf("signature %q, signed part %q", manifest.Signature, manifest.Signed)
	}
	if manifest.Entries[0].Signature != "sigs/service.sig.cms" || manifest.Entries[0].Certificate != "sigs/vendor.cert" {
		t.Fatalf("entry %+v", manifest.Entries[0])
	}
}

// A manifest written by WriteManifest verifies its own package.
func TestWriteManifest(t *testing.T) {
	files := map[string]string{"service.yaml": manifestTemplate, "scripts/configure.sh": "echo\n"}
	pkg := openFiles(t, files)
	files["service.mf"] = string(pkg.WriteManifest("service.mf", [][2]string{{"ns_product_name", "demo"}}))
	report, err := openFiles(t, files).VerifyIntegrity(IntegrityOptions{RequireManifest: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Verified["SHA-256"]) != 2 || len(report.Unlisted) != 0 {
		t.Fatalf("report %+v", report)
	}
}
