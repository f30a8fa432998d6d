package tosca

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
)

// digestHint ends the refusal of a package whose digests do not match its files.
const digestHint = "the digests do not match the files: if the files changed on purpose, `calaf package digest` rewrites the package's digests from them (before it is signed)"

// DigestChange is a digest that RewriteDigests changed.
type DigestChange struct {
	// File is the TOSCA.meta or manifest that lists the digest, Line its "Hash:" line.
	File string
	Line int
	// Name is the package file digested; Algorithm the algorithm of its block.
	Name      string
	Algorithm string
}

// RewriteDigests computes again, from the package's files, every digest its TOSCA.meta
// per-file blocks (Name / Algorithm / Hash) and its SOL004 manifest (Source / Algorithm /
// Hash) give, as a vendor does before signing a package. It returns the new content of
// each file that changed, by package path, and the digests changed; everything else of the
// files is kept as it was. A block naming a file the package lacks, a digest without a
// known algorithm, and a signed manifest (its signature would no longer verify) are
// refused; blocks naming artifacts outside the package (URIs) are left as they are.
func (p *Package) RewriteDigests() (map[string][]byte, []DigestChange, error) {
	files := map[string][]byte{}
	var changes []DigestChange
	var problems []Diagnostic
	manifest, err := p.ManifestPath()
	if err != nil {
		return nil, nil, err
	}
	for _, listing := range []struct{ file, nameKey string }{{MetaPath, "name"}, {manifest, "source"}} {
		if listing.file == "" || !p.has(listing.file) {
			continue
		}
		data, err := p.ReadFile(listing.file)
		if err != nil {
			return nil, nil, err
		}
		if listing.file == manifest && bytes.Contains(data, []byte("-----BEGIN CMS-----")) {
			problems = append(problems, Diagnostic{File: manifest, Message: "the manifest is signed: rewriting its digests would break its signature; rewrite them before signing, then sign again"})
			continue
		}
		rewritten, changed, diags := p.rewriteListing(listing.file, listing.nameKey, data)
		problems = append(problems, diags...)
		if len(changed) > 0 {
			files[listing.file] = rewritten
			changes = append(changes, changed...)
		}
	}
	if len(problems) > 0 {
		return nil, nil, &IntegrityError{Diagnostics: problems}
	}
	return files, changes, nil
}

// digestBlock is one per-file block of a listing being rewritten.
type digestBlock struct {
	name, algorithm string
	nameLine        int
	hashLine        int // index of its "Hash:" line; -1 without one
}

// rewriteListing rewrites the "Hash:" lines of one listing, whose blocks start with
// nameKey ("name" in TOSCA.meta, "source" in a manifest).
func (p *Package) rewriteListing(file, nameKey string, data []byte) ([]byte, []DigestChange, []Diagnostic) {
	var lines []string
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		lines = append(lines, scanner.Text())
	}
	var blocks []*digestBlock
	var current *digestBlock
	for i, line := range lines {
		key, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(key)) {
		case nameKey:
			current = &digestBlock{name: strings.TrimSpace(value), nameLine: i + 1, hashLine: -1}
			blocks = append(blocks, current)
		case "algorithm":
			if current != nil {
				current.algorithm = strings.TrimSpace(value)
			}
		case "hash":
			if current != nil {
				current.hashLine = i
			}
		}
	}
	var changes []DigestChange
	var problems []Diagnostic
	for _, b := range blocks {
		if b.hashLine < 0 || strings.Contains(b.name, "://") {
			continue // a file listed without digest, or an artifact outside the package
		}
		digest, message := p.digestOf(b)
		if message != "" {
			problems = append(problems, Diagnostic{File: file, Line: b.nameLine, Message: message})
			continue
		}
		old := lines[b.hashLine]
		key, value, _ := strings.Cut(old, ":")
		if strings.EqualFold(strings.TrimSpace(value), digest) {
			continue
		}
		lines[b.hashLine] = key + ": " + digest
		changes = append(changes, DigestChange{File: file, Line: b.hashLine + 1, Name: b.name, Algorithm: strings.ToUpper(b.algorithm)})
	}
	out := strings.Join(lines, "\n")
	if bytes.HasSuffix(data, []byte("\n")) {
		out += "\n"
	}
	return []byte(out), changes, problems
}

// digestOf computes a block's digest with its algorithm, or says why it cannot.
func (p *Package) digestOf(b *digestBlock) (string, string) {
	clean, err := cleanRelative(b.name)
	if err != nil {
		return "", fmt.Sprintf("%q: %v", b.name, err)
	}
	newHash, known := hashes[strings.ToUpper(b.algorithm)]
	switch {
	case !p.has(clean):
		return "", fmt.Sprintf("%s: listed, but missing from the package", clean)
	case b.algorithm == "":
		return "", fmt.Sprintf("%s: Hash without Algorithm", clean)
	case !known:
		return "", fmt.Sprintf("%s: unsupported digest algorithm %q (supported: SHA-256, SHA-384, SHA-512)", clean, b.algorithm)
	}
	content, err := p.ReadFile(clean)
	if err != nil {
		return "", fmt.Sprintf("%s: %v", clean, err)
	}
	h := newHash()
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil)), ""
}
