package sol004

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"path"
	"strings"

	"calaf.io/calaf/tosca"
)

// Method says how a package is signed.
type Method string

const (
	// Unsigned packages carry no signature of the package as a whole.
	Unsigned Method = "Unsigned"
	// SignedManifest is SOL004 option 1: a CMS signature at the end of the manifest.
	SignedManifest Method = "SignedManifest"
	// SignedCSAR is SOL004 option 2: a zip holding the CSAR and its .cms signature.
	SignedCSAR Method = "SignedCSAR"
)

// cmsBegin starts the CMS block that signs a manifest.
const cmsBegin = "-----BEGIN CMS-----"

// Evidence is what a package carries to prove its origin, with the checks that need no
// trust anchors already made. It depends only on the package's bytes.
type Evidence struct {
	Method Method
	// Manifest is the path of the package's manifest, "" when it has none.
	Manifest string
	// Signatures: the package's own first (unless Unsigned), then the inner manifest's
	// (option 2 whose CSAR also has a signed manifest), then the signed artifacts'.
	Signatures []Signature
	// Problems of the package itself: files a signed manifest does not list, certificate
	// files that cannot be read, entries with a Certificate but no Signature.
	Problems []tosca.Diagnostic
	// Notes say what could not be checked here (signatures of external artifacts).
	Notes []string
}

// Examine gathers the signatures of a package — env is its option 2 envelope, or nil —
// and checks each against what it signs. The digests of the manifest must have been
// verified already (tosca.Package.VerifyIntegrity); Examine never fails, it reports.
func Examine(pkg *tosca.Package, env *Envelope) *Evidence {
	ev := &Evidence{Method: Unsigned}
	if env != nil {
		ev.Method = SignedCSAR
		ev.Signatures = append(ev.Signatures, examineEnvelope(env))
	}
	manifestPath, err := pkg.ManifestPath()
	if err != nil {
		ev.Problems = append(ev.Problems, diagnosticsOf(err)...)
		return ev
	}
	if manifestPath == "" {
		return ev
	}
	ev.Manifest = manifestPath
	raw, err := pkg.ReadFile(manifestPath)
	if err != nil {
		ev.Problems = append(ev.Problems, tosca.Diagnostic{File: display(manifestPath), Message: err.Error()})
		return ev
	}
	manifest, err := tosca.ParseManifest(display(manifestPath), raw)
	if err != nil {
		ev.Problems = append(ev.Problems, diagnosticsOf(err)...)
		return ev
	}
	exempt := map[string]bool{manifestPath: true, tosca.MetaPath: true}
	signedManifest := false
	if begin := bytes.Index(raw, []byte(cmsBegin)); begin >= 0 {
		ev.Signatures = append(ev.Signatures, examineManifest(pkg, manifestPath, raw, begin, exempt, ev))
		if ev.Method == Unsigned {
			ev.Method, signedManifest = SignedManifest, true
		}
	}
	examineArtifacts(pkg, manifest, exempt, ev)
	if signedManifest {
		// The manifest's signature covers the files only through the digests it lists:
		// every file must be listed.
		ev.Problems = append(ev.Problems, unlisted(pkg, manifest, exempt)...)
	}
	return ev
}

// examineEnvelope checks an option 2 signature against the CSAR's bytes.
func examineEnvelope(env *Envelope) Signature {
	sig := Signature{File: env.SignatureName, Signs: display(env.CSARName)}
	der, rest, err := decodeCMS(env.Signature)
	if err != nil {
		sig.Problem = err.Error()
		return sig
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		sig.Problem = "text after the CMS block is not part of the signature"
		return sig
	}
	var extra []*x509.Certificate
	if env.Certificate != nil {
		if extra, err = ParseCertificates(env.Certificate, env.CertificateName); err != nil {
			sig.Problem = err.Error()
			return sig
		}
	}
	verifyCMS(&sig, der, env.CSAR, extra)
	return sig
}

// examineManifest checks the CMS block of a manifest (at begin) against the bytes before
// it, with the package's certificate files (ETSI-Entry-Certificate, or the .cert named
// like the manifest) as candidate signer and chain certificates.
func examineManifest(pkg *tosca.Package, manifestPath string, raw []byte, begin int, exempt map[string]bool, ev *Evidence) Signature {
	sig := Signature{File: manifestPath, Line: bytes.Count(raw[:begin], []byte("\n")) + 1, Signs: "the manifest"}
	der, rest, err := decodeCMS(raw[begin:])
	if err != nil {
		sig.Problem = err.Error()
		return sig
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		sig.Problem = "text after -----END CMS----- is not covered by the signature"
		return sig
	}
	var extra []*x509.Certificate
	for _, name := range certificateFiles(pkg, manifestPath) {
		exempt[name] = true
		data, err := pkg.ReadFile(name)
		if err == nil {
			var certs []*x509.Certificate
			if certs, err = ParseCertificates(data, name); err == nil {
				extra = append(extra, certs...)
				continue
			}
		}
		ev.Problems = append(ev.Problems, tosca.Diagnostic{File: display(name), Message: err.Error()})
	}
	verifyCMS(&sig, der, raw[:begin], extra)
	return sig
}

// certificateFiles lists the package's certificate files for its manifest: the
// ETSI-Entry-Certificate of TOSCA.meta, and a .cert named like the manifest beside it.
func certificateFiles(pkg *tosca.Package, manifestPath string) []string {
	var names []string
	if name := pkg.Meta["ETSI-Entry-Certificate"]; name != "" {
		if clean, err := tosca.CleanPath(name); err == nil {
			names = append(names, clean)
		} else {
			names = append(names, name) // reading it fails and says why
		}
	}
	beside := strings.TrimSuffix(manifestPath, path.Ext(manifestPath)) + ".cert"
	for _, f := range pkg.Files {
		if f.Path == beside && (len(names) == 0 || names[0] != beside) {
			names = append(names, beside)
		}
	}
	return names
}

// diagnosticsOf returns the diagnostics of an integrity or invalid-package error.
func diagnosticsOf(err error) []tosca.Diagnostic {
	var integrity *tosca.IntegrityError
	if errors.As(err, &integrity) {
		return integrity.Diagnostics
	}
	return tosca.DiagnosticsOf(err)
}

// unlisted reports the files a signed manifest does not cover: those it does not list,
// and those it lists without a digest. A file that a template
// imports or refers to (a template, a scriptlet, an artifact) must be listed even when it
// is a signature or certificate file; other such files (exempt) need not be.
func unlisted(pkg *tosca.Package, manifest *tosca.Manifest, exempt map[string]bool) []tosca.Diagnostic {
	listed := map[string]bool{}
	var problems []tosca.Diagnostic
	for _, entry := range manifest.Entries {
		clean, err := tosca.CleanPath(entry.Source)
		if err != nil || entry.External() {
			continue
		}
		listed[clean] = true
		if entry.Hash == "" {
			problems = append(problems, tosca.Diagnostic{File: manifest.Path, Line: entry.Line, Message: fmt.Sprintf(
				"%s is listed without a digest: the signature does not cover its content", display(clean))})
		}
	}
	referrers := pkg.Referrers()
	for _, f := range pkg.Files {
		by, referenced := referrers[f.Path]
		switch {
		case listed[f.Path]:
		case referenced:
			problems = append(problems, tosca.Diagnostic{File: manifest.Path, Message: fmt.Sprintf(
				"%s is not listed in the manifest, and %s imports or refers to it: an unlisted template, script or artifact is refused", display(f.Path), display(by))})
		case !exempt[f.Path]:
			problems = append(problems, tosca.Diagnostic{File: manifest.Path, Message: fmt.Sprintf(
				"%s is in the package but not listed in the manifest: the signature does not cover it", display(f.Path))})
		}
	}
	return problems
}

// examineArtifacts checks the signatures of the artifacts the manifest signs one by one
// (an entry's Signature: and Certificate: files).
func examineArtifacts(pkg *tosca.Package, manifest *tosca.Manifest, exempt map[string]bool, ev *Evidence) {
	for _, entry := range manifest.Entries {
		if entry.Signature == "" {
			if entry.Certificate != "" {
				ev.Problems = append(ev.Problems, tosca.Diagnostic{File: manifest.Path, Line: entry.Line, Message: fmt.Sprintf("%s: a Certificate without a Signature", display(entry.Source))})
			}
			continue
		}
		if entry.External() {
			ev.Notes = append(ev.Notes, fmt.Sprintf("the signature of external artifact %s is not checked", display(entry.Source)))
			continue
		}
		sig := Signature{File: manifest.Path, Line: entry.Line, Signs: display(entry.Source), Artifact: display(entry.Source)}
		content, der, extra, err := artifactParts(pkg, entry, exempt)
		if err != nil {
			sig.Problem = err.Error()
		} else {
			verifyCMS(&sig, der, content, extra)
		}
		ev.Signatures = append(ev.Signatures, sig)
	}
}

// artifactParts reads a signed artifact, its CMS signature and its certificate file.
func artifactParts(pkg *tosca.Package, entry tosca.ManifestEntry, exempt map[string]bool) (content, der []byte, extra []*x509.Certificate, err error) {
	read := func(name, what string) ([]byte, error) {
		clean, err := tosca.CleanPath(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", what, err)
		}
		exempt[clean] = true
		data, err := pkg.ReadFile(clean)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v", what, display(clean), err)
		}
		return data, nil
	}
	if content, err = read(entry.Source, "artifact"); err != nil {
		return nil, nil, nil, err
	}
	signature, err := read(entry.Signature, "signature")
	if err != nil {
		return nil, nil, nil, err
	}
	if der, _, err = decodeCMS(signature); err != nil {
		return nil, nil, nil, err
	}
	if entry.Certificate != "" && !strings.Contains(entry.Certificate, "://") {
		data, err := read(entry.Certificate, "certificate")
		if err != nil {
			return nil, nil, nil, err
		}
		if extra, err = ParseCertificates(data, entry.Certificate); err != nil {
			return nil, nil, nil, err
		}
	}
	return content, der, extra, nil
}
