package tosca

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"path"
	"strings"
)

// Manifest is an ETSI SOL004 manifest file (.mf): metadata, then one entry per package
// file with its digest, optionally per-file signatures, and optionally a CMS signature of
// the whole manifest.
type Manifest struct {
	// Path of the manifest in the package.
	Path string
	// Metadata are the keys of the "metadata:" block (e.g. vnf_provider_id).
	Metadata map[string]string
	// Entries list the files (and external artifacts) the manifest covers.
	Entries []ManifestEntry
	// Signature is the CMS block ("-----BEGIN CMS-----" ... "-----END CMS-----") that signs
	// the manifest (SOL004 option 1), when present.
	Signature []byte
	// Signed is the manifest text the Signature covers: everything before the CMS block.
	Signed []byte
}

// ManifestEntry is one "Source:" block of a manifest.
type ManifestEntry struct {
	// Source is a package path or, for an artifact outside the package, a URI.
	Source    string
	Algorithm string
	Hash      string
	// Signature and Certificate name the files signing this artifact (SOL004 option 1 for
	// artifacts), when the manifest has them.
	Signature   string
	Certificate string
	// Line of "Source:" in the manifest.
	Line int
}

// External tells whether the entry names an artifact outside the package (a URI).
func (e ManifestEntry) External() bool {
	return strings.Contains(e.Source, "://")
}

// SignatureVerifier verifies what signs a package: the CMS signature of its manifest and
// the signatures of its artifacts (SOL004 option 1), or the signature of the whole CSAR
// (option 2, checked before the package is opened). The digests of the manifest are
// already verified when it is called.
type SignatureVerifier interface {
	VerifySignatures(pkg *Package, manifest *Manifest) error
}

// IntegrityOptions configure VerifyIntegrity.
type IntegrityOptions struct {
	// Signatures, when set, verifies the signatures of the manifest; without it they are
	// reported as present but not checked.
	Signatures SignatureVerifier
	// RequireManifest refuses a package that has no manifest.
	RequireManifest bool
}

// IntegrityReport says what VerifyIntegrity checked.
type IntegrityReport struct {
	// Manifest is the path of the manifest; empty when the package has none.
	Manifest string
	// Verified lists the files whose digest matched, by algorithm.
	Verified map[string][]string
	// Listed lists files the manifest names without a digest (their presence was checked).
	Listed []string
	// External lists artifacts outside the package, which cannot be checked here.
	External []string
	// Unlisted lists package files the manifest does not cover (besides itself, TOSCA.meta,
	// and signature files).
	Unlisted []string
	// Signed tells whether the manifest carries signatures; SignaturesVerified whether a
	// SignatureVerifier checked them.
	Signed             bool
	SignaturesVerified bool
}

// Summary describes the report in one line.
func (r *IntegrityReport) Summary() string {
	if r == nil || r.Manifest == "" {
		return "no manifest"
	}
	var parts []string
	for _, algorithm := range sortedAlgorithms(r.Verified) {
		parts = append(parts, fmt.Sprintf("%d files %s", len(r.Verified[algorithm]), algorithm))
	}
	if len(parts) == 0 {
		parts = append(parts, "no digests")
	}
	s := fmt.Sprintf("manifest %s verified (%s)", r.Manifest, strings.Join(parts, ", "))
	if len(r.External) > 0 {
		s += fmt.Sprintf(", %d external artifacts not checked", len(r.External))
	}
	if len(r.Unlisted) > 0 {
		s += fmt.Sprintf(", %d files not listed", len(r.Unlisted))
	}
	switch {
	case r.SignaturesVerified:
		s += ", signatures verified"
	case r.Signed:
		s += ", signatures present but not verified"
	}
	return s
}

// IntegrityError is a package whose manifest does not match its files, or whose manifest
// cannot be used: a content problem that refetching the same package does not fix.
type IntegrityError struct {
	Diagnostics []Diagnostic
}

func (e *IntegrityError) Error() string {
	return (&InvalidError{Diagnostics: e.Diagnostics}).Error()
}

// IsIntegrity tells whether err (or an error it wraps) is an IntegrityError.
func IsIntegrity(err error) bool {
	var integrity *IntegrityError
	return errors.As(err, &integrity)
}

// hashes are the digest algorithms of SOL004 manifests; any other is refused.
var hashes = map[string]func() hash.Hash{
	"SHA-256": sha256.New,
	"SHA-384": sha512.New384,
	"SHA-512": sha512.New,
}

// ManifestPath returns the path of the package's SOL004 manifest: the Entry-Manifest (or
// ETSI-Entry-Manifest) of TOSCA.meta, otherwise the .mf file at the root named like the
// entry template, otherwise the only .mf file at the root; "" when there is none.
func (p *Package) ManifestPath() (string, error) {
	for _, key := range []string{"Entry-Manifest", "ETSI-Entry-Manifest"} {
		if name := p.Meta[key]; name != "" {
			clean, err := cleanRelative(name)
			if err != nil {
				return "", &IntegrityError{Diagnostics: []Diagnostic{{File: MetaPath, Message: fmt.Sprintf("%s: %v", key, err)}}}
			}
			if !p.has(clean) {
				return "", &IntegrityError{Diagnostics: []Diagnostic{{File: MetaPath, Message: fmt.Sprintf("%s %q is not a file in the package", key, name)}}}
			}
			return clean, nil
		}
	}
	var roots []string
	for _, f := range p.Files {
		if !strings.Contains(f.Path, "/") && strings.EqualFold(path.Ext(f.Path), ".mf") {
			roots = append(roots, f.Path)
		}
	}
	if len(roots) <= 1 {
		return strings.Join(roots, ""), nil
	}
	entryBase := strings.TrimSuffix(path.Base(p.Entry), path.Ext(p.Entry))
	for _, name := range roots {
		if strings.TrimSuffix(name, path.Ext(name)) == entryBase {
			return name, nil
		}
	}
	return "", &IntegrityError{Diagnostics: []Diagnostic{{Message: fmt.Sprintf("several manifests at the package root (%s) and none named after the entry template: name one with Entry-Manifest in %s", strings.Join(roots, ", "), MetaPath)}}}
}

// VerifyIntegrity checks the package against its SOL004 manifest, if it has one: every
// listed file exists and has the digest the manifest gives, with a known algorithm. A
// package without a manifest passes (unless RequireManifest), with an empty report.
func (p *Package) VerifyIntegrity(opts IntegrityOptions) (*IntegrityReport, error) {
	report := &IntegrityReport{Verified: map[string][]string{}}
	manifestPath, err := p.ManifestPath()
	if err != nil {
		return report, err
	}
	if manifestPath == "" {
		if opts.RequireManifest {
			return report, &IntegrityError{Diagnostics: []Diagnostic{{Message: "the package has no manifest (.mf), and one is required"}}}
		}
		return report, nil
	}
	report.Manifest = manifestPath
	data, err := p.ReadFile(manifestPath)
	if err != nil {
		return report, &IntegrityError{Diagnostics: []Diagnostic{{File: manifestPath, Message: err.Error()}}}
	}
	manifest, err := ParseManifest(manifestPath, data)
	if err != nil {
		return report, err
	}
	var problems []Diagnostic
	fail := func(line int, format string, args ...any) {
		problems = append(problems, Diagnostic{File: manifestPath, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	covered := map[string]bool{manifestPath: true, MetaPath: true}
	for _, entry := range manifest.Entries {
		if entry.Signature != "" || entry.Certificate != "" {
			report.Signed = true
		}
		for _, extra := range []string{entry.Signature, entry.Certificate} {
			if extra == "" || strings.Contains(extra, "://") {
				continue
			}
			if clean, err := cleanRelative(extra); err == nil && p.has(clean) {
				covered[clean] = true
			} else {
				fail(entry.Line, "%s: signature file %q is not in the package", entry.Source, extra)
			}
		}
		if entry.External() {
			report.External = append(report.External, entry.Source)
			continue
		}
		clean, err := cleanRelative(entry.Source)
		if err != nil {
			fail(entry.Line, "Source %q: %v", entry.Source, err)
			continue
		}
		covered[clean] = true
		if !p.has(clean) {
			fail(entry.Line, "%s: listed in the manifest but missing from the package", clean)
			continue
		}
		if entry.Algorithm == "" && entry.Hash == "" {
			report.Listed = append(report.Listed, clean)
			continue
		}
		algorithm := strings.ToUpper(entry.Algorithm)
		newHash, known := hashes[algorithm]
		switch {
		case entry.Algorithm == "":
			fail(entry.Line, "%s: Hash without Algorithm", clean)
			continue
		case !known:
			fail(entry.Line, "%s: unsupported digest algorithm %q (supported: SHA-256, SHA-384, SHA-512)", clean, entry.Algorithm)
			continue
		case entry.Hash == "":
			fail(entry.Line, "%s: Algorithm without Hash", clean)
			continue
		}
		content, err := p.ReadFile(clean)
		if err != nil {
			fail(entry.Line, "%s: %v", clean, err)
			continue
		}
		h := newHash()
		h.Write(content)
		actual := hex.EncodeToString(h.Sum(nil))
		if !strings.EqualFold(actual, entry.Hash) {
			fail(entry.Line, "%s: %s mismatch: the manifest says %s, the file has %s", clean, algorithm, strings.ToLower(entry.Hash), actual)
			continue
		}
		report.Verified[algorithm] = append(report.Verified[algorithm], clean)
	}
	for _, f := range p.Files {
		if !covered[f.Path] && !isSignatureFile(f.Path) {
			report.Unlisted = append(report.Unlisted, f.Path)
		}
	}
	if len(manifest.Signature) > 0 {
		report.Signed = true
	}
	if len(problems) > 0 {
		return report, &IntegrityError{Diagnostics: problems}
	}
	if opts.Signatures != nil {
		if err := opts.Signatures.VerifySignatures(p, manifest); err != nil {
			if IsIntegrity(err) {
				return report, err
			}
			return report, &IntegrityError{Diagnostics: []Diagnostic{{File: manifestPath, Message: "signature: " + err.Error()}}}
		}
		report.SignaturesVerified = true
	}
	return report, nil
}

// isSignatureFile tells whether a file holds a signature or certificate (SOL004).
func isSignatureFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".cms", ".cert", ".crt", ".pem", ".sig", ".sm":
		return true
	}
	return false
}

// ParseManifest reads a SOL004 manifest. name is used in diagnostics.
func ParseManifest(name string, data []byte) (*Manifest, error) {
	m := &Manifest{Path: name, Metadata: map[string]string{}}
	var problems []Diagnostic
	fail := func(line int, format string, args ...any) {
		problems = append(problems, Diagnostic{File: name, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if begin := bytes.Index(data, []byte("-----BEGIN CMS-----")); begin >= 0 {
		end := bytes.Index(data[begin:], []byte("-----END CMS-----"))
		if end < 0 {
			fail(bytes.Count(data[:begin], []byte("\n"))+1, "CMS signature block without -----END CMS-----")
		} else {
			m.Signature = bytes.TrimSpace(data[begin : begin+end+len("-----END CMS-----")])
		}
		m.Signed = data[:begin]
		data = data[:begin]
	} else {
		m.Signed = data
	}
	const (
		inNone = iota
		inMetadata
		inEntries
		inOther // a block this parser does not interpret (e.g. non_mano_artifact_sets)
	)
	section := inNone
	var current *ManifestEntry
	flush := func() {
		if current != nil {
			m.Entries = append(m.Entries, *current)
			current = nil
		}
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	row := 0
	for scanner.Scan() {
		row++
		raw := strings.TrimRight(scanner.Text(), "\r")
		line := strings.TrimSpace(raw)
		if line == "" {
			if section == inMetadata {
				section = inNone
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		indented := raw[0] == ' ' || raw[0] == '\t'
		if section == inOther && indented {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			fail(row, "malformed line %q, expected \"Key: value\"", truncateLine(line))
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case value == "" && strings.EqualFold(key, "metadata"):
			flush()
			section = inMetadata
		case value == "" && !indented:
			flush()
			section = inOther
		case section == inMetadata && indented || section == inMetadata && !isEntryKey(key):
			m.Metadata[key] = value
		case strings.EqualFold(key, "Source"):
			flush()
			section = inEntries
			current = &ManifestEntry{Source: value, Line: row}
		case isEntryKey(key):
			if current == nil {
				fail(row, "%s before any Source", key)
				continue
			}
			switch strings.ToLower(key) {
			case "algorithm":
				current.Algorithm = value
			case "hash":
				current.Hash = value
			case "signature":
				current.Signature = value
			case "certificate":
				current.Certificate = value
			}
		default:
			fail(row, "unknown key %q", key)
		}
	}
	flush()
	if err := scanner.Err(); err != nil {
		fail(row, "%v", err)
	}
	if len(problems) > 0 {
		return nil, &IntegrityError{Diagnostics: problems}
	}
	return m, nil
}

func isEntryKey(key string) bool {
	switch strings.ToLower(key) {
	case "source", "algorithm", "hash", "signature", "certificate":
		return true
	}
	return false
}

func truncateLine(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func sortedAlgorithms(m map[string][]string) []string {
	var keys []string
	for _, k := range []string{"SHA-256", "SHA-384", "SHA-512"} {
		if len(m[k]) > 0 {
			keys = append(keys, k)
		}
	}
	return keys
}

// WriteManifest returns a SOL004 manifest listing every file of the package except
// TOSCA.meta and the manifest itself, with SHA-256 digests (package files already carry
// them). metadata keys are written in the given order.
func (p *Package) WriteManifest(manifestPath string, metadata [][2]string) []byte {
	var b strings.Builder
	if len(metadata) > 0 {
		b.WriteString("metadata:\n")
		for _, kv := range metadata {
			fmt.Fprintf(&b, "%s: %s\n", kv[0], kv[1])
		}
	}
	for _, f := range p.Files {
		if f.Path == manifestPath || f.Path == MetaPath {
			continue
		}
		fmt.Fprintf(&b, "\nSource: %s\nAlgorithm: SHA-256\nHash: %s\n", f.Path, f.SHA256)
	}
	return []byte(b.String())
}
