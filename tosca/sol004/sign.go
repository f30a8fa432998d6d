package sol004

import (
	"archive/zip"
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/smallstep/pkcs7"
)

// Credentials sign packages: a private key, its certificate, and the certificates of its
// chain to put beside it (intermediates; the root is the verifier's anchor).
type Credentials struct {
	Key         crypto.Signer
	Certificate *x509.Certificate
	Chain       []*x509.Certificate
}

// LoadCredentials reads a PEM private key (PKCS#8, PKCS#1 or SEC 1, not encrypted), a
// PEM certificate file whose first certificate is the signer's (any others join the
// chain), and an optional PEM chain. The key must match the certificate, and the
// certificate must be usable for signing.
func LoadCredentials(keyPEM, certPEM, chainPEM []byte) (*Credentials, error) {
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	certs, err := ParseCertificates(certPEM, "the certificate file")
	if err != nil {
		return nil, err
	}
	c := &Credentials{Key: key, Certificate: certs[0], Chain: certs[1:]}
	if len(chainPEM) > 0 {
		chain, err := ParseCertificates(chainPEM, "the chain file")
		if err != nil {
			return nil, err
		}
		c.Chain = append(c.Chain, chain...)
	}
	public, ok := c.Certificate.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !public.Equal(key.Public()) {
		return nil, fmt.Errorf("the private key does not match certificate %s", describe(c.Certificate))
	}
	if problem := signingUsage(c.Certificate); problem != "" {
		return nil, errors.New(problem)
	}
	return c, nil
}

func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("the key file holds no PEM block")
	}
	if strings.Contains(block.Type, "ENCRYPTED") || block.Headers["Proc-Type"] != "" {
		return nil, errors.New("the private key is encrypted: decrypt it first (openssl pkey -in KEY -out PLAIN)")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("the key file holds a %q PEM block, not a private key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("the private key: %v", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T cannot sign", key)
	}
	return signer, nil
}

// Sign returns a detached CMS signature (DER) of content: SHA-256, with signed attributes
// (content type, digest, signing time), carrying the certificate and the chain.
func (c *Credentials) Sign(content []byte) ([]byte, error) {
	sd, err := pkcs7.NewSignedData(content)
	if err != nil {
		return nil, err
	}
	sd.SetDigestAlgorithm(pkcs7.OIDDigestAlgorithmSHA256)
	if err := sd.AddSigner(c.Certificate, c.Key, pkcs7.SignerInfoConfig{}); err != nil {
		return nil, fmt.Errorf("signing: %v", err)
	}
	for _, cert := range c.Chain {
		sd.AddCertificate(cert)
	}
	sd.Detach()
	return sd.Finish()
}

// SignManifest returns a manifest followed by a CMS block (PEM, "-----BEGIN CMS-----")
// signing every byte before it (SOL004 option 1); a CMS block the manifest had is
// replaced.
func SignManifest(manifest []byte, c *Credentials) ([]byte, error) {
	if i := bytes.Index(manifest, []byte(cmsBegin)); i >= 0 {
		manifest = manifest[:i]
	}
	signed := bytes.TrimRight(manifest, "\r\n\t ")
	out := make([]byte, 0, len(signed)+4096)
	out = append(out, signed...)
	out = append(out, "\n\n"...)
	der, err := c.Sign(out)
	if err != nil {
		return nil, err
	}
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "CMS", Bytes: der})...), nil
}

// WrapCSAR returns a SOL004 option 2 zip holding NAME.csar, NAME.cms (a detached PEM CMS
// signature of the CSAR's bytes) and NAME.cert (the certificate and its chain). The zip
// depends only on its inputs and the signing time.
func WrapCSAR(name string, csar []byte, c *Credentials) ([]byte, error) {
	name = strings.TrimSuffix(path.Base(name), path.Ext(name))
	der, err := c.Sign(csar)
	if err != nil {
		return nil, err
	}
	var buffer bytes.Buffer
	zw := zip.NewWriter(&buffer)
	files := []struct {
		name string
		data []byte
	}{
		{name + ".csar", csar},
		{name + ".cms", pem.EncodeToMemory(&pem.Block{Type: "CMS", Bytes: der})},
		{name + ".cert", EncodeCertificates(append([]*x509.Certificate{c.Certificate}, c.Chain...)...)},
	}
	for _, f := range files {
		header := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)}
		header.SetMode(0o644)
		w, err := zw.CreateHeader(header)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buffer.Bytes(), nil
}
