package sol004

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/smallstep/pkcs7"

	"calaf.io/calaf/tosca"
)

// Signature is one CMS signature of a package, checked against the bytes it signs.
type Signature struct {
	// File holds the signature: the manifest (option 1), the .cms file (option 2) or an
	// artifact's signature file. Line is where its CMS block starts in a manifest.
	File string
	Line int
	// Signs names what is signed: "the manifest", the CSAR, or an artifact; Artifact is
	// set for the signature of an artifact.
	Signs    string
	Artifact string
	// Signer is the certificate that made the signature; Certificates are all those the
	// package offers to build its chain (the CMS's and the certificate files').
	Signer       *x509.Certificate
	Certificates []*x509.Certificate
	// Problem, when set, is why the signature does not verify; Signer may be nil then.
	Problem string
}

// diagnostic places a problem of the signature in its file.
func (s *Signature) diagnostic(message string) tosca.Diagnostic {
	return tosca.Diagnostic{File: display(s.File), Line: s.Line, Message: message}
}

// decodeCMS returns the DER of a CMS signature given in PEM ("CMS", "PKCS7" or
// "SIGNED DATA" blocks) or in DER; rest is what follows the PEM block.
func decodeCMS(data []byte) (der, rest []byte, err error) {
	tooLarge := fmt.Errorf("the CMS signature is more than the %d bytes allowed", maxCMSBytes)
	if len(data) > 2*maxCMSBytes { // PEM text, with room for base64 and line breaks
		return nil, nil, tooLarge
	}
	trimmed := bytes.TrimSpace(data)
	if !bytes.HasPrefix(trimmed, []byte("-----BEGIN")) {
		if len(trimmed) > maxCMSBytes {
			return nil, nil, tooLarge
		}
		return trimmed, nil, nil
	}
	if bytes.Count(trimmed, []byte("-----BEGIN")) > 1 {
		// pem.Decode would skip a broken block and take the next: only one is allowed.
		return nil, nil, errors.New("more than one PEM block where one CMS signature belongs")
	}
	block, rest := pem.Decode(trimmed)
	if block == nil {
		return nil, nil, errors.New("the CMS block is not valid PEM (truncated, or its END line is missing?)")
	}
	switch block.Type {
	case "CMS", "PKCS7", "SIGNED DATA":
	default:
		return nil, nil, fmt.Errorf("a %q PEM block where a CMS signature belongs", block.Type)
	}
	if len(block.Bytes) > maxCMSBytes {
		return nil, nil, tooLarge
	}
	return block.Bytes, rest, nil
}

// verifyCMS checks a detached CMS signature over content: one signer, a SHA-2 digest,
// the signed digest equal to the content's, and the signer's key having made the
// signature. The signer's certificate may come from the CMS or from extra (certificate
// files of the package). A manifest signed in text mode (openssl cms -sign without
// -binary, which signs CRLF line ends) verifies too. Trust is not checked here.
func verifyCMS(sig *Signature, der, content []byte, extra []*x509.Certificate) {
	p7, err := pkcs7.Parse(der)
	if err != nil {
		sig.Problem = fmt.Sprintf("the CMS signature is truncated or malformed: %v", err)
		return
	}
	if len(p7.Signers) != 1 {
		sig.Problem = fmt.Sprintf("the CMS signature has %d signers, one is expected", len(p7.Signers))
		return
	}
	signer := p7.Signers[0]
	if signer.DigestAlgorithm.Algorithm.Equal(pkcs7.OIDDigestAlgorithmSHA1) {
		sig.Problem = "the CMS signature uses SHA-1, which is refused: sign with SHA-256 or stronger"
		return
	}
	if len(p7.Content) > 0 && !bytes.Equal(p7.Content, content) {
		sig.Problem = fmt.Sprintf("the CMS signature carries content of its own (%d bytes) that is not %s", len(p7.Content), sig.Signs)
		return
	}
	p7.Certificates = append(p7.Certificates, extra...)
	sig.Certificates = p7.Certificates
	sig.Signer = p7.GetOnlySigner()
	if sig.Signer == nil {
		sn := signer.IssuerAndSerialNumber.SerialNumber
		sig.Problem = fmt.Sprintf("the certificate of the signer (serial %s) is neither in the CMS signature nor in the package's certificate files", serial(sn))
		return
	}
	p7.Content = content
	err = p7.Verify()
	var mismatch *pkcs7.MessageDigestMismatchError
	if errors.As(err, &mismatch) {
		if crlf := toCRLF(content); crlf != nil {
			p7.Content = crlf
			if p7.Verify() == nil {
				return
			}
		}
		sum := sha256.Sum256(content)
		sig.Problem = fmt.Sprintf("the CMS signature does not sign %s: it signs content with digest %x, %s has %x (SHA-256 %x)", sig.Signs, mismatch.ExpectedDigest, sig.Signs, mismatch.ActualDigest, sum)
		return
	}
	var signingTime *pkcs7.SigningTimeNotValidError
	switch {
	case errors.As(err, &signingTime) && signingTime.SigningTime.After(signingTime.NotAfter):
		sig.Problem = fmt.Sprintf("signed at %s, after certificate %s expired at %s", stamp(signingTime.SigningTime), describe(sig.Signer), stamp(signingTime.NotAfter))
	case errors.As(err, &signingTime):
		sig.Problem = fmt.Sprintf("signed at %s, before certificate %s became valid at %s", stamp(signingTime.SigningTime), describe(sig.Signer), stamp(signingTime.NotBefore))
	case err != nil:
		sig.Problem = fmt.Sprintf("the CMS signature does not verify with the key of certificate %s: %v", describe(sig.Signer), err)
	}
}

// toCRLF returns content with bare LF line ends turned into CRLF, as openssl's text mode
// signs it; nil when that changes nothing.
func toCRLF(content []byte) []byte {
	if !bytes.Contains(content, []byte("\n")) {
		return nil
	}
	var b bytes.Buffer
	b.Grow(len(content) + bytes.Count(content, []byte("\n")))
	for i, c := range content {
		if c == '\n' && (i == 0 || content[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(c)
	}
	if b.Len() == len(content) {
		return nil
	}
	return b.Bytes()
}
