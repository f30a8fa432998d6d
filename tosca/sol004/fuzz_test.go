package sol004

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
)

// FuzzVerifyCMS feeds the signature check arbitrary bytes where a package's CMS signature
// belongs (a .cms file, or the CMS block of a manifest): it must say what is wrong, or
// name the signer it verified, and never panic. A package's signature is read by the
// operator itself, before any worker sees the package.
func FuzzVerifyCMS(f *testing.F) {
	ca := newPKI(f, "Fuzz")
	content := []byte("manifest-version: 1\n")
	der, err := ca.credentials().Sign(content)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(der)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "CMS", Bytes: der}))
	f.Add(ca.vendor.cert.Raw)
	f.Add([]byte{0x30, 0x80, 0x30, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		sig := &Signature{File: "fuzz.cms", Signs: "the CSAR"}
		der, _, err := decodeCMS(data)
		if err != nil {
			return
		}
		verifyCMS(sig, der, content, []*x509.Certificate{ca.intermediate.cert})
		if sig.Problem == "" && sig.Signer == nil {
			t.Fatalf("verified with no signer: %q", data)
		}
		if sig.Problem == "" {
			if _, problem := ca.policy().verify(sig); problem != "" && sig.Signer.Equal(ca.vendor.cert) {
				t.Fatalf("the vendor's own signature does not verify: %s", problem)
			}
		}
	})
}
