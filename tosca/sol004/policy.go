package sol004

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"calaf.io/calaf/tosca"
)

// Mode says what a failed verification does.
type Mode string

const (
	// Off checks nothing beyond the manifest's digests.
	Off Mode = ""
	// Enforce refuses a package that is not signed by a certificate chaining to an anchor.
	Enforce Mode = "Enforce"
	// Warn verifies as Enforce does, but reports failures instead of refusing.
	Warn Mode = "Warn"
)

// ParseMode reads a mode as flags and specs spell it; "" and "Off" are Off.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "", "off", "none":
		return Off, nil
	case "enforce":
		return Enforce, nil
	case "warn":
		return Warn, nil
	}
	return Off, fmt.Errorf("unknown verification mode %q (Enforce, Warn or Off)", s)
}

// Stricter returns the stricter of two modes: Enforce over Warn over Off.
func Stricter(a, b Mode) Mode {
	rank := map[Mode]int{Off: 0, Warn: 1, Enforce: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Policy is how packages are trusted: the anchors their signers must chain to, and the
// mode.
type Policy struct {
	Mode    Mode
	Anchors []*x509.Certificate
	// AnchorsFrom says where the anchors come from, for messages.
	AnchorsFrom string
	// Now is when certificates must be valid; zero means the current time.
	Now time.Time
}

// Signer describes the certificate that signed a package.
type Signer struct {
	Subject  string
	Issuer   string
	Serial   string
	NotAfter time.Time
	// Anchor is the subject of the trust anchor its chain ends at; AnchorCert that anchor.
	Anchor     string
	AnchorCert *x509.Certificate
}

// Verdict is the outcome of Check.
type Verdict struct {
	Mode   Mode
	Method Method
	// Verified: every signature chains to an anchor and nothing is refused.
	Verified bool
	// Signer of the package (of its manifest or CSAR), when its signature verified.
	Signer *Signer
	// Artifacts counts the signed artifacts verified.
	Artifacts int
	// Problems are what Enforce refuses, and Warn reports.
	Problems []tosca.Diagnostic
}

// Check applies the policy to a package's evidence. Under Enforce any problem is an
// error (*tosca.IntegrityError, one diagnostic per problem); under Warn the problems are
// in the verdict; Off checks nothing.
func (p Policy) Check(ev *Evidence) (*Verdict, error) {
	v := &Verdict{Mode: p.Mode, Method: ev.Method}
	if p.Mode == Off {
		return v, nil
	}
	problems := append([]tosca.Diagnostic(nil), ev.Problems...)
	if ev.Method == Unsigned {
		problems = append(problems, unsigned(ev))
	}
	for i := range ev.Signatures {
		sig := &ev.Signatures[i]
		signer, problem := p.verify(sig)
		switch {
		case problem != "" && sig.Artifact != "":
			problems = append(problems, sig.diagnostic(fmt.Sprintf("artifact %s: %s", sig.Artifact, problem)))
		case problem != "":
			problems = append(problems, sig.diagnostic(problem))
		case sig.Artifact != "":
			v.Artifacts++
		case i == 0 && ev.Method != Unsigned:
			v.Signer = signer
		}
	}
	v.Problems = problems
	v.Verified = len(problems) == 0
	if !v.Verified && p.Mode == Enforce {
		return v, &tosca.IntegrityError{Diagnostics: problems}
	}
	return v, nil
}

// unsigned says that a package carries no signature of its own.
func unsigned(ev *Evidence) tosca.Diagnostic {
	if ev.Manifest == "" {
		return tosca.Diagnostic{Message: "the package is not signed: it has no manifest (.mf) with a CMS signature and is not a SOL004 option 2 zip (a CSAR with its .cms signature)"}
	}
	return tosca.Diagnostic{File: display(ev.Manifest), Message: "the package is not signed: the manifest has no CMS signature (-----BEGIN CMS-----) and the package is not a SOL004 option 2 zip"}
}

func (p Policy) now() time.Time {
	if p.Now.IsZero() {
		return time.Now()
	}
	return p.Now
}

// verify checks a signature's certificate: usable for signing, valid now, and chaining
// to an anchor through the certificates the package offers.
func (p Policy) verify(sig *Signature) (*Signer, string) {
	if sig.Problem != "" {
		return nil, sig.Problem
	}
	leaf := sig.Signer
	if problem := signingUsage(leaf); problem != "" {
		return nil, problem
	}
	now := p.now()
	switch {
	case now.After(leaf.NotAfter):
		return nil, fmt.Sprintf("certificate %s expired at %s", describe(leaf), stamp(leaf.NotAfter))
	case now.Before(leaf.NotBefore):
		return nil, fmt.Sprintf("certificate %s is not valid before %s", describe(leaf), stamp(leaf.NotBefore))
	case len(p.Anchors) == 0:
		return nil, fmt.Sprintf("no trust anchors are configured, so certificate %s cannot be trusted", describe(leaf))
	}
	roots, intermediates := x509.NewCertPool(), x509.NewCertPool()
	for _, anchor := range p.Anchors {
		roots.AddCert(anchor)
	}
	for _, cert := range sig.Certificates {
		if cert != leaf {
			intermediates.AddCert(cert)
		}
	}
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: intermediates, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning, x509.ExtKeyUsageEmailProtection},
	})
	if err != nil {
		return nil, p.chainProblem(sig, err)
	}
	chain := chains[0]
	return &Signer{
		Subject: leaf.Subject.String(), Issuer: leaf.Issuer.String(), Serial: serial(leaf.SerialNumber),
		NotAfter: leaf.NotAfter.UTC(), Anchor: chain[len(chain)-1].Subject.String(), AnchorCert: chain[len(chain)-1],
	}, ""
}

// chainProblem explains why a chain did not verify.
func (p Policy) chainProblem(sig *Signature, err error) string {
	leaf := sig.Signer
	var invalid x509.CertificateInvalidError
	var unknown x509.UnknownAuthorityError
	switch {
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return fmt.Sprintf("certificate %s in the chain of %s is not valid at %s: %s", describe(invalid.Cert), describe(leaf), stamp(p.now()), invalid.Detail)
	case errors.As(err, &invalid) && invalid.Reason == x509.IncompatibleUsage:
		return fmt.Sprintf("the chain of certificate %s does not allow signing: its extended key usages allow neither code signing nor email protection", describe(leaf))
	case errors.As(err, &invalid) && invalid.Reason == x509.NotAuthorizedToSign:
		return fmt.Sprintf("certificate %s in the chain of %s is not a CA and cannot issue certificates", describe(invalid.Cert), describe(leaf))
	case errors.As(err, &unknown):
		return p.untrusted(sig)
	}
	return fmt.Sprintf("certificate %s does not chain to the trust anchors: %v", describe(leaf), err)
}

// untrusted tells a chain that ends at a CA outside the anchors from one that is missing
// a certificate: it follows the issuers among the package's certificates up to the top.
func (p Policy) untrusted(sig *Signature) string {
	top := sig.Signer
	for range len(sig.Certificates) + 1 {
		parent := issuerOf(top, sig.Certificates)
		if parent == nil {
			break
		}
		top = parent
	}
	anchors := fmt.Sprintf("trusted: %s", describeAll(p.Anchors))
	if p.AnchorsFrom != "" {
		anchors += " from " + p.AnchorsFrom
	}
	selfSigned := bytes.Equal(top.RawIssuer, top.RawSubject) && top.CheckSignature(top.SignatureAlgorithm, top.RawTBSCertificate, top.Signature) == nil
	switch {
	case selfSigned && top == sig.Signer:
		return fmt.Sprintf("certificate %s is self-signed and not a trust anchor (%s)", describe(top), anchors)
	case selfSigned:
		return fmt.Sprintf("certificate %s is signed by CA %s, which is not a trust anchor (%s)", describe(sig.Signer), describe(top), anchors)
	}
	return fmt.Sprintf("certificate %s does not chain to a trust anchor: %s is issued by %q, which is neither in the package nor a trust anchor (%s); a missing intermediate certificate belongs in the signature or the certificate file",
		describe(sig.Signer), describe(top), top.Issuer.String(), anchors)
}

// issuerOf returns the certificate among certs that issued cert, nil when none did.
func issuerOf(cert *x509.Certificate, certs []*x509.Certificate) *x509.Certificate {
	for _, candidate := range certs {
		if candidate != cert && bytes.Equal(candidate.RawSubject, cert.RawIssuer) && cert.CheckSignatureFrom(candidate) == nil {
			return candidate
		}
	}
	return nil
}

// signingUsage says why a certificate may not sign, "" when it may: a key usage without
// digital signature (or content commitment), or extended key usages with neither code
// signing nor email protection.
func signingUsage(cert *x509.Certificate) string {
	const signing = x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment
	if cert.KeyUsage != 0 && cert.KeyUsage&signing == 0 {
		return fmt.Sprintf("certificate %s is not valid for signing: its key usage (%s) allows neither digital signature nor content commitment", describe(cert), keyUsages(cert.KeyUsage))
	}
	if len(cert.ExtKeyUsage) == 0 && len(cert.UnknownExtKeyUsage) == 0 {
		return ""
	}
	var names []string
	for _, usage := range cert.ExtKeyUsage {
		switch usage {
		case x509.ExtKeyUsageAny, x509.ExtKeyUsageCodeSigning, x509.ExtKeyUsageEmailProtection:
			return ""
		}
		names = append(names, extKeyUsageName(usage))
	}
	for _, oid := range cert.UnknownExtKeyUsage {
		names = append(names, oid.String())
	}
	return fmt.Sprintf("certificate %s is not valid for signing: its extended key usage (%s) allows neither code signing nor email protection", describe(cert), strings.Join(names, ", "))
}

func keyUsages(usage x509.KeyUsage) string {
	names := []string{"digital signature", "content commitment", "key encipherment", "data encipherment", "key agreement", "certificate signing", "CRL signing", "encipher only", "decipher only"}
	var set []string
	for bit, name := range names {
		if usage&(1<<bit) != 0 {
			set = append(set, name)
		}
	}
	return strings.Join(set, ", ")
}

func extKeyUsageName(usage x509.ExtKeyUsage) string {
	switch usage {
	case x509.ExtKeyUsageServerAuth:
		return "server auth"
	case x509.ExtKeyUsageClientAuth:
		return "client auth"
	case x509.ExtKeyUsageTimeStamping:
		return "time stamping"
	case x509.ExtKeyUsageOCSPSigning:
		return "OCSP signing"
	}
	return fmt.Sprintf("usage %d", usage)
}

// Summary describes the verdict in one line, the same on every run for the same package
// and policy.
func (v *Verdict) Summary() string {
	if v.Mode == Off {
		return fmt.Sprintf("%s; signatures not verified (no verification policy)", methodText(v.Method))
	}
	if !v.Verified {
		first := v.Problems[0].String()
		if more := len(v.Problems) - 1; more > 0 {
			first += fmt.Sprintf(" (and %d more problems)", more)
		}
		return fmt.Sprintf("%s; NOT verified (%s mode): %s", methodText(v.Method), v.Mode, first)
	}
	s := fmt.Sprintf("%s by %q, verified against anchor %q", methodText(v.Method), v.Signer.Subject, v.Signer.Anchor)
	if v.Artifacts > 0 {
		s += fmt.Sprintf("; %d signed artifacts verified", v.Artifacts)
	}
	return s
}

func methodText(m Method) string {
	switch m {
	case SignedManifest:
		return "signed manifest (SOL004 option 1)"
	case SignedCSAR:
		return "signed CSAR (SOL004 option 2)"
	}
	return "unsigned package"
}
