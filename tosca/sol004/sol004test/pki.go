// Package sol004test makes certificate authorities for tests of signed packages: a root
// (the trust anchor), an intermediate CA, and a signer's credentials.
package sol004test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"time"

	"calaf.io/calaf/tosca/sol004"
)

// PKI is a root CA, an intermediate CA it issued, and a signer the intermediate issued.
type PKI struct {
	Root, Intermediate       *x509.Certificate
	RootKey, IntermediateKey *ecdsa.PrivateKey
	// Signer signs as "<name> Signer", with the intermediate in its chain.
	Signer *sol004.Credentials
}

// New makes a PKI whose certificates are named after name and valid for a day.
func New(name string) (*PKI, error) {
	p := &PKI{}
	var err error
	if p.Root, p.RootKey, err = issue(name+" Root CA", nil, nil, true); err != nil {
		return nil, err
	}
	if p.Intermediate, p.IntermediateKey, err = issue(name+" Intermediate CA", p.Root, p.RootKey, true); err != nil {
		return nil, err
	}
	cert, key, err := issue(name+" Signer", p.Intermediate, p.IntermediateKey, false)
	if err != nil {
		return nil, err
	}
	p.Signer = &sol004.Credentials{Key: key, Certificate: cert, Chain: []*x509.Certificate{p.Intermediate}}
	return p, nil
}

// RootPEM is the trust anchor as a PEM bundle.
func (p *PKI) RootPEM() []byte {
	return sol004.EncodeCertificates(p.Root)
}

// SignerKeyPEM is the signer's private key in PEM (PKCS#8).
func (p *PKI) SignerKeyPEM() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(p.Signer.Key)
	if err != nil {
		panic(err) // an ECDSA key always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// issue makes a certificate signed by parent (self-signed without one): a CA, or a
// signer allowed digital signatures and code signing.
func issue(name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, ca bool) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	template := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour).Truncate(time.Second),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}
	if ca {
		template.IsCA, template.BasicConstraintsValid = true, true
		template.KeyUsage, template.ExtKeyUsage = x509.KeyUsageCertSign|x509.KeyUsageCRLSign, nil
	}
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}
