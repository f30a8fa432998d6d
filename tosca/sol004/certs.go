package sol004

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"
)

const (
	// maxCertificates bounds the certificates read from one bundle or signature.
	maxCertificates = 64
	// maxSignatureBytes bounds a certificate file or a signature file as read.
	maxSignatureBytes = 1 << 20
	// maxCMSBytes bounds the DER of a CMS signature: one with a chain of a few
	// certificates is a few KiB. The bound also bounds how deep a hostile BER nesting
	// makes the parser recurse (measured: about 25 MiB of stack).
	maxCMSBytes = 64 << 10
)

// ParseCertificates reads the certificates of a PEM bundle (or of one DER certificate).
// Blocks of other types (a private key put in the bundle by mistake) are refused rather
// than skipped, so nothing is trusted by accident; name is used in errors.
func ParseCertificates(data []byte, name string) ([]*x509.Certificate, error) {
	if len(data) > maxSignatureBytes {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a certificate bundle may have", display(name), len(data), maxSignatureBytes)
	}
	if !bytes.Contains(data, []byte("-----BEGIN")) {
		cert, err := x509.ParseCertificate(data)
		if err != nil {
			return nil, fmt.Errorf("%s holds no PEM certificate and is not a DER certificate: %v", display(name), err)
		}
		return []*x509.Certificate{cert}, nil
	}
	var certs []*x509.Certificate
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%s: a %q PEM block where only certificates belong", display(name), block.Type)
		}
		if len(certs) == maxCertificates {
			return nil, fmt.Errorf("%s holds more than %d certificates", display(name), maxCertificates)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %v", display(name), len(certs)+1, err)
		}
		certs = append(certs, cert)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("%s: text after the last certificate is not a PEM block (truncated?)", display(name))
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s holds no certificate", display(name))
	}
	return certs, nil
}

// EncodeCertificates returns certificates as a PEM bundle.
func EncodeCertificates(certs ...*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, cert := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	}
	return b.Bytes()
}

// describe names a certificate in messages: its subject, escaped.
func describe(cert *x509.Certificate) string {
	return strconv.Quote(cert.Subject.String())
}

// describeAll names up to three certificates, then how many more.
func describeAll(certs []*x509.Certificate) string {
	var names []string
	for i, cert := range certs {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(certs)-3))
			break
		}
		names = append(names, describe(cert))
	}
	return strings.Join(names, ", ")
}

// display escapes a name from a package (a file path, a key) when it holds characters
// that would garble a message or a log line; plain names are left as they are.
func display(name string) string {
	for _, r := range name {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return strconv.Quote(name)
		}
	}
	return name
}

// serial writes a certificate serial number as openssl does: uppercase hex.
func serial(n *big.Int) string {
	if n == nil {
		return "(none)"
	}
	return strings.ToUpper(n.Text(16))
}

// stamp writes a time in messages: UTC, to the second.
func stamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}
