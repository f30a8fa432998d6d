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
	"os"
	"path"
	"path/filepath"
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
	// NonManoSets maps the files the non_mano_artifact_sets block lists to their set.
	NonManoSets map[string]string
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

// IntegrityOptions configure VerifyIntegrity.
type IntegrityOptions struct {
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
	// Signed tells whether the manifest carries signatures (package sol004 verifies them
	// against trust anchors).
	Signed bool
	// MetaVerified lists the files whose TOSCA.meta digest (Name/Algorithm/Hash) matched.
	MetaVerified []string
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
	if r.Signed {
		s += ", signatures present but not verified (no trust anchors given)"
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

// HasFile tells whether rel (a package-relative slash path) is a regular file of the
// package, as ReadFile would read it.
func (p *Package) HasFile(rel string) bool {
	clean, err := cleanRelative(rel)
	if err != nil {
		return false
	}
	info, err := os.Lstat(filepath.Join(p.Root, filepath.FromSlash(clean)))
	return err == nil && info.Mode().IsRegular()
}

// ManifestListing returns the path of the package's SOL004 manifest and the package files
// it lists; "" and nil when the package has none.
func (p *Package) ManifestListing() (string, map[string]bool, error) {
	manifestPath, err := p.ManifestPath()
	if err != nil || manifestPath == "" {
		return "", nil, err
	}
	data, err := p.ReadFile(manifestPath)
	if err != nil {
		return "", nil, Invalid(manifestPath, "%v", err)
	}
	manifest, err := ParseManifest(manifestPath, data)
	if err != nil {
		return "", nil, err
	}
	listed := map[string]bool{manifestPath: true}
	for _, entry := range manifest.Entries {
		if clean, err := cleanRelative(entry.Source); err == nil && !entry.External() {
			listed[clean] = true
		}
	}
	return manifestPath, listed, nil
}

// VerifyIntegrity checks the package against its SOL004 manifest, if it has one: every
// listed file exists and has the digest the manifest gives, with a known algorithm, and
// every file a template imports or refers to (templates, scriptlets, artifacts) is listed;
// other unlisted files are reported (package sol004 refuses them under a signature). A
// package without a manifest passes (unless RequireManifest), with an empty report.
func (p *Package) VerifyIntegrity(opts IntegrityOptions) (*IntegrityReport, error) {
	report := &IntegrityReport{Verified: map[string][]string{}}
	metaVerified, err := p.verifyMetaDigests()
	if err != nil {
		return report, err
	}
	report.MetaVerified = metaVerified
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
	c := &integrityCheck{pkg: p, report: report, manifest: manifestPath, covered: map[string]bool{manifestPath: true, MetaPath: true}}
	for _, entry := range manifest.Entries {
		c.entry(entry)
	}
	referrers := p.Referrers()
	for _, f := range p.Files {
		by, referenced := referrers[f.Path]
		switch {
		case c.covered[f.Path]:
		case referenced:
			c.problems = append(c.problems, Diagnostic{File: manifestPath, Message: fmt.Sprintf(
				"%s is not listed in the manifest, and %s imports or refers to it: an unlisted template, script or artifact is refused", f.Path, by)})
		case !isSignatureFile(f.Path):
			report.Unlisted = append(report.Unlisted, f.Path)
		}
	}
	report.Signed = report.Signed || len(manifest.Signature) > 0
	if len(c.problems) > 0 {
		return report, &IntegrityError{Diagnostics: withDigestHint(manifestPath, c.problems)}
	}
	return report, nil
}

// Referrers maps each file that a YAML file of the package imports or refers to (imports,
// scriptlets, artifacts) to the first such YAML file, in path order.
func (p *Package) Referrers() map[string]string {
	referrers := map[string]string{}
	for _, f := range p.Files {
		if ext := strings.ToLower(path.Ext(f.Path)); ext != ".yaml" && ext != ".yml" {
			continue
		}
		for _, ref := range p.References(f.Path) {
			if _, seen := referrers[ref]; !seen && ref != f.Path {
				referrers[ref] = f.Path
			}
		}
	}
	return referrers
}

// integrityCheck is the check of a package's files against its manifest's entries.
type integrityCheck struct {
	pkg      *Package
	report   *IntegrityReport
	manifest string
	covered  map[string]bool // files the manifest covers
	problems []Diagnostic
}

func (c *integrityCheck) fail(line int, format string, args ...any) {
	c.problems = append(c.problems, Diagnostic{File: c.manifest, Line: line, Message: fmt.Sprintf(format, args...)})
}

// entry checks one manifest entry: its signature files are in the package, its file
// exists and its digest matches.
func (c *integrityCheck) entry(entry ManifestEntry) {
	if entry.Signature != "" || entry.Certificate != "" {
		c.report.Signed = true
	}
	for _, extra := range []string{entry.Signature, entry.Certificate} {
		if extra == "" || strings.Contains(extra, "://") {
			continue
		}
		if clean, err := cleanRelative(extra); err == nil && c.pkg.has(clean) {
			c.covered[clean] = true
		} else {
			c.fail(entry.Line, "%s: signature file %q is not in the package", entry.Source, extra)
		}
	}
	if entry.External() {
		c.report.External = append(c.report.External, entry.Source)
		return
	}
	clean, err := cleanRelative(entry.Source)
	if err != nil {
		c.fail(entry.Line, "Source %q: %v", entry.Source, err)
		return
	}
	c.covered[clean] = true
	switch {
	case !c.pkg.has(clean):
		c.fail(entry.Line, "%s: listed in the manifest but missing from the package", clean)
	case entry.Algorithm == "" && entry.Hash == "":
		c.report.Listed = append(c.report.Listed, clean)
	default:
		c.digest(entry, clean)
	}
}

// digest checks the digest of a listed file.
func (c *integrityCheck) digest(entry ManifestEntry, clean string) {
	algorithm := strings.ToUpper(entry.Algorithm)
	newHash, known := hashes[algorithm]
	switch {
	case entry.Algorithm == "":
		c.fail(entry.Line, "%s: Hash without Algorithm", clean)
		return
	case !known:
		c.fail(entry.Line, "%s: unsupported digest algorithm %q (supported: SHA-256, SHA-384, SHA-512)", clean, entry.Algorithm)
		return
	case entry.Hash == "":
		c.fail(entry.Line, "%s: Algorithm without Hash", clean)
		return
	}
	content, err := c.pkg.ReadFile(clean)
	if err != nil {
		c.fail(entry.Line, "%s: %v", clean, err)
		return
	}
	h := newHash()
	h.Write(content)
	actual := hex.EncodeToString(h.Sum(nil))
	if !strings.EqualFold(actual, entry.Hash) {
		c.fail(entry.Line, "%s: %s mismatch: the manifest says %s, the file has %s", clean, algorithm, strings.ToLower(entry.Hash), actual)
		return
	}
	c.report.Verified[algorithm] = append(c.report.Verified[algorithm], clean)
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
	mp := &manifestParser{m: &Manifest{Path: name, Metadata: map[string]string{}}, name: name}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	data = mp.splitSignature(data)
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	row := 0
	for scanner.Scan() {
		row++
		mp.line(row, strings.TrimRight(scanner.Text(), "\r"))
	}
	mp.flush()
	if err := scanner.Err(); err != nil {
		mp.fail(row, "%v", err)
	}
	if len(mp.problems) > 0 {
		return nil, &IntegrityError{Diagnostics: mp.problems}
	}
	return mp.m, nil
}

// Sections of a manifest.
const (
	inNone = iota
	inMetadata
	inEntries
	inOther // a block this parser does not interpret (e.g. non_mano_artifact_sets)
)

// manifestParser reads a manifest line by line.
type manifestParser struct {
	m        *Manifest
	name     string
	section  int
	current  *ManifestEntry
	problems []Diagnostic
	// block is the key of the inOther block being read; set the non-MANO artifact set.
	block, set string
}

func (mp *manifestParser) fail(line int, format string, args ...any) {
	mp.problems = append(mp.problems, Diagnostic{File: mp.name, Line: line, Message: fmt.Sprintf(format, args...)})
}

// splitSignature keeps the CMS block at the end of a manifest apart, and returns the text
// it signs (everything before it).
func (mp *manifestParser) splitSignature(data []byte) []byte {
	begin := bytes.Index(data, []byte("-----BEGIN CMS-----"))
	if begin < 0 {
		mp.m.Signed = data
		return data
	}
	end := bytes.Index(data[begin:], []byte("-----END CMS-----"))
	if end < 0 {
		mp.fail(bytes.Count(data[:begin], []byte("\n"))+1, "CMS signature block without -----END CMS-----")
	} else {
		mp.m.Signature = bytes.TrimSpace(data[begin : begin+end+len("-----END CMS-----")])
	}
	mp.m.Signed = data[:begin]
	return data[:begin]
}

// flush ends the entry being read.
func (mp *manifestParser) flush() {
	if mp.current != nil {
		mp.m.Entries = append(mp.m.Entries, *mp.current)
		mp.current = nil
	}
}

// line reads one line: a block heading, a metadata key, or a key of an entry.
func (mp *manifestParser) line(row int, raw string) {
	line := strings.TrimSpace(raw)
	if line == "" {
		if mp.section == inMetadata {
			mp.section = inNone
		}
		return
	}
	indented := raw[0] == ' ' || raw[0] == '\t'
	if strings.HasPrefix(line, "#") {
		return
	}
	if mp.section == inOther && indented {
		mp.nonMano(line)
		return
	}
	key, value, ok := strings.Cut(line, ":")
	if !ok {
		mp.fail(row, "malformed line %q, expected \"Key: value\"", truncateLine(line))
		return
	}
	key, value = strings.TrimSpace(key), strings.TrimSpace(value)
	switch {
	case value == "" && strings.EqualFold(key, "metadata"):
		mp.flush()
		mp.section = inMetadata
	case value == "" && !indented:
		mp.flush()
		mp.section, mp.block, mp.set = inOther, key, ""
	case mp.section == inMetadata && indented || mp.section == inMetadata && !isEntryKey(key):
		mp.m.Metadata[key] = value
	case strings.EqualFold(key, "Source"):
		mp.flush()
		mp.section = inEntries
		mp.current = &ManifestEntry{Source: value, Line: row}
	case isEntryKey(key):
		mp.entryKey(row, key, value)
	default:
		mp.fail(row, "unknown key %q", key)
	}
}

// nonMano reads a line of a block this parser does not check: in non_mano_artifact_sets,
// a set's name, or a Source of the set.
func (mp *manifestParser) nonMano(line string) {
	if !strings.EqualFold(mp.block, "non_mano_artifact_sets") {
		return
	}
	key, value, _ := strings.Cut(line, ":")
	key, value = strings.TrimSpace(key), strings.TrimSpace(value)
	switch {
	case value == "":
		mp.set = key
	case strings.EqualFold(key, "Source") && mp.set != "":
		if mp.m.NonManoSets == nil {
			mp.m.NonManoSets = map[string]string{}
		}
		mp.m.NonManoSets[value] = mp.set
	}
}

// entryKey sets a key of the entry being read.
func (mp *manifestParser) entryKey(row int, key, value string) {
	if mp.current == nil {
		mp.fail(row, "%s before any Source", key)
		return
	}
	switch strings.ToLower(key) {
	case "algorithm":
		mp.current.Algorithm = value
	case "hash":
		mp.current.Hash = value
	case "signature":
		mp.current.Signature = value
	case "certificate":
		mp.current.Certificate = value
	}
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
