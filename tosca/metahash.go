package tosca

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
)

// MetaEntry is one per-file block of TOSCA.meta ("Name:", "Content-Type:", "Algorithm:",
// "Hash:"), as Tacker writes them for the artifacts of a package.
type MetaEntry struct {
	Name        string
	ContentType string
	Algorithm   string
	Hash        string
	// Line of "Name:" in TOSCA.meta.
	Line int
}

// ParseMetaEntries reads the per-file blocks of a TOSCA.meta: each starts with a "Name:"
// line; the keys of the first block (TOSCA-Meta-File-Version, Entry-Definitions, ...) are
// not entries.
func ParseMetaEntries(data []byte) ([]MetaEntry, error) {
	var entries []MetaEntry
	var current *MetaEntry
	var problems []Diagnostic
	scanner := bufio.NewScanner(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	for row := 1; scanner.Scan(); row++ {
		line := strings.TrimSpace(scanner.Text())
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue // blank lines and comments; parseMeta reports malformed lines
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch strings.ToLower(key) {
		case "name":
			entries = append(entries, MetaEntry{Name: value, Line: row})
			current = &entries[len(entries)-1]
		case "content-type", "algorithm", "hash":
			if current == nil {
				problems = append(problems, Diagnostic{File: MetaPath, Line: row, Message: fmt.Sprintf("%s before any Name", key)})
				continue
			}
			switch strings.ToLower(key) {
			case "content-type":
				current.ContentType = value
			case "algorithm":
				current.Algorithm = value
			default:
				current.Hash = value
			}
		}
	}
	if len(problems) > 0 {
		return nil, &IntegrityError{Diagnostics: problems}
	}
	return entries, nil
}

// verifyMetaDigests checks the per-file digests of TOSCA.meta like those of a manifest:
// every named file exists and has the digest given, with a known algorithm. It returns the
// files verified.
func (p *Package) verifyMetaDigests() ([]string, error) {
	if !p.has(MetaPath) {
		return nil, nil
	}
	data, err := p.ReadFile(MetaPath)
	if err != nil {
		return nil, &IntegrityError{Diagnostics: []Diagnostic{{File: MetaPath, Message: err.Error()}}}
	}
	entries, err := ParseMetaEntries(data)
	if err != nil {
		return nil, err
	}
	var verified []string
	var problems []Diagnostic
	for _, entry := range entries {
		name, message := p.checkMetaEntry(entry)
		if message != "" {
			problems = append(problems, Diagnostic{File: MetaPath, Line: entry.Line, Message: message})
			continue
		}
		if name != "" {
			verified = append(verified, name)
		}
	}
	if len(problems) > 0 {
		return nil, &IntegrityError{Diagnostics: withDigestHint(MetaPath, problems)}
	}
	return verified, nil
}

// withDigestHint ends the problems of a listing with what rewrites stale digests, when
// some digest does not match its file.
func withDigestHint(file string, problems []Diagnostic) []Diagnostic {
	for _, d := range problems {
		if strings.Contains(d.Message, " mismatch: ") {
			return append(problems, Diagnostic{File: file, Message: digestHint})
		}
	}
	return problems
}

// checkMetaEntry verifies one block; it returns the file it verified ("" when the block
// gives no digest, or names an artifact outside the package by URI) or what is wrong.
func (p *Package) checkMetaEntry(entry MetaEntry) (string, string) {
	if strings.Contains(entry.Name, "://") {
		return "", "" // an artifact outside the package (Tacker's external artifacts): not checked here
	}
	clean, err := cleanRelative(entry.Name)
	if err != nil {
		return "", fmt.Sprintf("Name %q: %v", entry.Name, err)
	}
	if !p.has(clean) {
		return "", fmt.Sprintf("%s: named in %s but missing from the package", clean, MetaPath)
	}
	if entry.Algorithm == "" && entry.Hash == "" {
		return "", ""
	}
	algorithm := strings.ToUpper(entry.Algorithm)
	newHash, known := hashes[algorithm]
	switch {
	case entry.Algorithm == "":
		return "", fmt.Sprintf("%s: Hash without Algorithm", clean)
	case !known:
		return "", fmt.Sprintf("%s: unsupported digest algorithm %q (supported: SHA-256, SHA-384, SHA-512)", clean, entry.Algorithm)
	case entry.Hash == "":
		return "", fmt.Sprintf("%s: Algorithm without Hash", clean)
	}
	content, err := p.ReadFile(clean)
	if err != nil {
		return "", fmt.Sprintf("%s: %v", clean, err)
	}
	h := newHash()
	h.Write(content)
	if actual := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(actual, entry.Hash) {
		return "", fmt.Sprintf("%s: %s mismatch: %s says %s, the file has %s", clean, algorithm, MetaPath, strings.ToLower(entry.Hash), actual)
	}
	return clean, ""
}
