package sol004

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"calaf.io/calaf/tosca"
)

// issuer is a certificate with its key, made in the test.
type issuer struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// certOption changes the template of a certificate before it is issued.
type certOption func(*x509.Certificate)

// issue makes a certificate for name, signed by parent (self-signed when parent is nil).
func issue(t testing.TB, name string, parent *issuer, ca bool, options ...certOption) *issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serialNumber, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: serialNumber,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"Calaf Test"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	if ca {
		template.IsCA, template.BasicConstraintsValid = true, true
		template.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	} else {
		template.KeyUsage = x509.KeyUsageDigitalSignature
		template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning, x509.ExtKeyUsageEmailProtection}
	}
	for _, option := range options {
		option(template)
	}
	signer, signerCert := crypto.Signer(key), template
	if parent != nil {
		signer, signerCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, template, signerCert, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &issuer{cert: cert, key: key}
}

// pki is a root CA, an intermediate CA, and a vendor certificate issued by the
// intermediate, made fresh for a test.
type pki struct {
	root, intermediate, vendor *issuer
}

func newPKI(t testing.TB, prefix string) *pki {
	root := issue(t, prefix+" Root CA", nil, true)
	intermediate := issue(t, prefix+" Intermediate CA", root, true)
	vendor := issue(t, prefix+" Vendor", intermediate, false)
	return &pki{root: root, intermediate: intermediate, vendor: vendor}
}

// credentials sign as the vendor, with the intermediate in the chain.
func (p *pki) credentials() *Credentials {
	return &Credentials{Key: p.vendor.key, Certificate: p.vendor.cert, Chain: []*x509.Certificate{p.intermediate.cert}}
}

// fullChain signs as the vendor, with the intermediate and the root in the chain.
func (p *pki) fullChain() *Credentials {
	c := p.credentials()
	c.Chain = append(c.Chain, p.root.cert)
	return c
}

// policy trusts the root, in Enforce mode.
func (p *pki) policy() Policy {
	return Policy{Mode: Enforce, Anchors: []*x509.Certificate{p.root.cert}, AnchorsFrom: "the test"}
}

// writePEM writes the PKI's files for openssl: root.pem, intermediate.pem, vendor.pem,
// vendor.key.
func (p *pki) writePEM(t *testing.T, dir string) {
	t.Helper()
	key, err := x509.MarshalPKCS8PrivateKey(p.vendor.key)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "root.pem", string(EncodeCertificates(p.root.cert)))
	write(t, dir, "intermediate.pem", string(EncodeCertificates(p.intermediate.cert)))
	write(t, dir, "vendor.pem", string(EncodeCertificates(p.vendor.cert)))
	write(t, dir, "vendor.key", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})))
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// testFiles is a small SOL004 package: TOSCA.meta naming the entry and the manifest, an
// entry template importing a types file, and a script.
func testFiles() map[string]string {
	return map[string]string{
		tosca.MetaPath: "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: Calaf tests\n" +
			"Entry-Definitions: Definitions/service.yaml\nETSI-Entry-Manifest: service.mf\n",
		"Definitions/service.yaml": "tosca_definitions_version: tosca_simple_yaml_1_3\nimports:\n- types.yaml\n" +
			"topology_template:\n  node_templates: {}\n",
		"Definitions/types.yaml": "tosca_definitions_version: tosca_simple_yaml_1_3\nnode_types: {}\n",
		"Files/configure.sh":     "#!/bin/sh\necho configured\n",
	}
}

// manifestOf lists every file but TOSCA.meta and the manifest with its SHA-256.
func manifestOf(files map[string]string) string {
	var names []string
	for name := range files {
		if name != tosca.MetaPath && name != "service.mf" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("metadata:\n  vnf_provider_id: calaf-test\n  vnf_product_name: demo\n  vnf_package_version: 1.0\n")
	for _, name := range names {
		sum := sha256.Sum256([]byte(files[name]))
		b.WriteString("\nSource: " + name + "\nAlgorithm: SHA-256\nHash: " + hex.EncodeToString(sum[:]) + "\n")
	}
	return b.String()
}

// unsignedPackage writes the test package with an unsigned manifest into a new directory.
func unsignedPackage(t *testing.T) string {
	t.Helper()
	files := testFiles()
	files["service.mf"] = manifestOf(files)
	dir := t.TempDir()
	for name, content := range files {
		write(t, dir, name, content)
	}
	return dir
}

// signedPackage writes the test package, its manifest signed by c, into a new directory.
func signedPackage(t *testing.T, c *Credentials, change func(files map[string]string)) string {
	t.Helper()
	files := testFiles()
	if change != nil {
		change(files)
	}
	signed, err := SignManifest([]byte(manifestOf(files)), c)
	if err != nil {
		t.Fatal(err)
	}
	files["service.mf"] = string(signed)
	dir := t.TempDir()
	for name, content := range files {
		write(t, dir, name, content)
	}
	return dir
}
