package sol004

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallstep/pkcs7"

	"calaf.io/calaf/tosca"
)

// Warn verifies as Enforce does but deploys: the problems are in the verdict.
func TestWarnReportsInsteadOfRefusing(t *testing.T) {
	ca, other := newPKI(t, "Warn"), newPKI(t, "Stranger")
	policy := ca.policy()
	policy.Mode = Warn
	verdict, err := verify(t, signedPackage(t, other.fullChain(), nil), policy)
	if err != nil {
		t.Fatalf("Warn refused: %v", err)
	}
	if verdict.Verified || len(verdict.Problems) != 1 || verdict.Signer != nil {
		t.Fatalf("verdict %+v", verdict)
	}
	summary := verdict.Summary()
	if !strings.Contains(summary, "NOT verified (Warn mode)") || !strings.Contains(summary, "which is not a trust anchor") {
		t.Fatalf("summary %q", summary)
	}
	// Off checks nothing, and says so.
	verdict, err = verify(t, signedPackage(t, other.credentials(), nil), Policy{})
	if err != nil || verdict.Verified || !strings.Contains(verdict.Summary(), "signatures not verified (no verification policy)") {
		t.Fatalf("Off: %+v, %v", verdict, err)
	}
}

// Artifacts signed one by one (Signature:/Certificate: in their manifest entry) are
// verified, and a signature that does not match its artifact is refused.
func TestSignedArtifacts(t *testing.T) {
	ca := newPKI(t, "Artifacts")
	creds := ca.credentials()
	sign := func(content string) string {
		der, err := creds.Sign([]byte(content))
		if err != nil {
			t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "CMS", Bytes: der}))
	}
	build := func(signed string) string {
		files := testFiles()
		files["Files/configure.sh.cms"] = sign(signed)
		files["Files/vendor.cert"] = string(EncodeCertificates(ca.vendor.cert, ca.intermediate.cert))
		manifest := manifestOf(map[string]string{
			"Definitions/service.yaml": files["Definitions/service.yaml"], "Definitions/types.yaml": files["Definitions/types.yaml"],
			"Files/configure.sh": files["Files/configure.sh"],
		})
		manifest += "Signature: Files/configure.sh.cms\nCertificate: Files/vendor.cert\n"
		signedManifest, err := SignManifest([]byte(manifest), creds)
		if err != nil {
			t.Fatal(err)
		}
		files["service.mf"] = string(signedManifest)
		dir := t.TempDir()
		for name, content := range files {
			write(t, dir, name, content)
		}
		return dir
	}
	verdict, err := verify(t, build(testFiles()["Files/configure.sh"]), ca.policy())
	if err != nil || !verdict.Verified || verdict.Artifacts != 1 {
		t.Fatalf("verdict %+v, %v", verdict, err)
	}
	if !strings.Contains(verdict.Summary(), "1 signed artifacts verified") {
		t.Fatalf("summary %q", verdict.Summary())
	}
	_, err = verify(t, build("#!/bin/sh\nsomething else\n"), ca.policy())
	if err == nil || !strings.Contains(err.Error(), "service.mf:14: artifact Files/configure.sh: the CMS signature does not sign Files/configure.sh") {
		t.Fatalf("a wrong artifact signature: %v", err)
	}
}

// A SHA-1 signature is refused even from a trusted signer.
func TestSHA1Refused(t *testing.T) {
	ca := newPKI(t, "SHA1")
	files := testFiles()
	manifest := manifestOf(files) + "\n"
	sd, err := pkcs7.NewSignedData([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	sd.SetDigestAlgorithm(pkcs7.OIDDigestAlgorithmSHA1)
	if err := sd.AddSigner(ca.vendor.cert, ca.vendor.key, pkcs7.SignerInfoConfig{}); err != nil {
		t.Fatal(err)
	}
	sd.AddCertificate(ca.intermediate.cert)
	sd.Detach()
	der, err := sd.Finish()
	if err != nil {
		t.Fatal(err)
	}
	files["service.mf"] = manifest + string(pem.EncodeToMemory(&pem.Block{Type: "CMS", Bytes: der}))
	dir := t.TempDir()
	for name, content := range files {
		write(t, dir, name, content)
	}
	if _, err := verify(t, dir, ca.policy()); err == nil || !strings.Contains(err.Error(), "uses SHA-1, which is refused") {
		t.Fatalf("SHA-1: %v", err)
	}
}

// The chain may come from the package's certificate file (ETSI-Entry-Certificate in
// TOSCA.meta) instead of the CMS; a certificate file that is not one is reported.
func TestCertificateOutsideTheCMS(t *testing.T) {
	ca := newPKI(t, "Entry Certificate")
	files := testFiles()
	manifest := manifestOf(files) + "\n"
	sd, err := pkcs7.NewSignedData([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	sd.SetDigestAlgorithm(pkcs7.OIDDigestAlgorithmSHA256)
	if err := sd.AddSigner(ca.vendor.cert, ca.vendor.key, pkcs7.SignerInfoConfig{}); err != nil {
		t.Fatal(err)
	}
	sd.Detach()
	der, err := sd.Finish()
	if err != nil {
		t.Fatal(err)
	}
	files["service.mf"] = manifest + string(pem.EncodeToMemory(&pem.Block{Type: "CMS", Bytes: der}))
	files[tosca.MetaPath] += "ETSI-Entry-Certificate: Files/vendor.cert\n"
	files["Files/vendor.cert"] = string(EncodeCertificates(ca.vendor.cert, ca.intermediate.cert))
	dir := t.TempDir()
	for name, content := range files {
		write(t, dir, name, content)
	}
	verdict, err := verify(t, dir, ca.policy())
	if err != nil || !verdict.Verified {
		t.Fatalf("verdict %+v, %v", verdict, err)
	}
	// A certificate file that is not one is reported where it is.
	if err := os.WriteFile(filepath.Join(dir, "Files", "vendor.cert"), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := verify(t, dir, ca.policy()); err == nil || !strings.Contains(err.Error(), `Files/vendor.cert: Files/vendor.cert: a "PRIVATE KEY" PEM block where only certificates belong`) {
		t.Fatalf("bad certificate file: %v", err)
	}
}

func TestLoadCredentials(t *testing.T) {
	ca := newPKI(t, "Load")
	dir := t.TempDir()
	ca.writePEM(t, dir)
	key, cert, chain := []byte(read(t, dir, "vendor.key")), []byte(read(t, dir, "vendor.pem")), []byte(read(t, dir, "intermediate.pem"))
	c, err := LoadCredentials(key, cert, chain)
	if err != nil || len(c.Chain) != 1 || !c.Certificate.Equal(ca.vendor.cert) {
		t.Fatalf("%+v, %v", c, err)
	}
	other := newPKI(t, "Other")
	otherDir := t.TempDir()
	other.writePEM(t, otherDir)
	if _, err := LoadCredentials([]byte(read(t, otherDir, "vendor.key")), cert, chain); err == nil || !strings.Contains(err.Error(), "does not match certificate") {
		t.Fatalf("mismatched key: %v", err)
	}
	if _, err := LoadCredentials(key, []byte(read(t, dir, "root.pem")), nil); err == nil {
		t.Fatal("a key with another certificate was accepted")
	}
	caKey, _ := x509.MarshalPKCS8PrivateKey(ca.root.key)
	_, err = LoadCredentials(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: caKey}), []byte(read(t, dir, "root.pem")), nil)
	if err == nil || !strings.Contains(err.Error(), "is not valid for signing") {
		t.Fatalf("a CA certificate (cert signing only) signs packages: %v", err)
	}
	if _, err := LoadCredentials([]byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"), cert, nil); err == nil || !strings.Contains(err.Error(), "encrypted") {
		t.Fatalf("encrypted key: %v", err)
	}
}
