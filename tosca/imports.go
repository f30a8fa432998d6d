package tosca

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// LockFile is the file at a package's root that records the digest of every profile the
// package imports by reference (calaf package lock writes it).
const LockFile = "calaf.lock"

// Import is a profile a package imports by reference — oci://, https:// — resolved from
// the package's lock to files on this machine and verified by the caller (the operator's
// or the CLI's process; workers only read them).
type Import struct {
	// URL is the import as the package's templates write it.
	URL string
	// Digest is the digest the lock records for it.
	Digest string
	// Profile describes the profile's files; its Entry is the file the URL names.
	Profile Descriptor
}

// IsReference tells whether an import names a profile by reference: an OCI artifact or an
// archive served over HTTPS, which the package's lock pins by digest. The embedded
// profiles' URLs are names, not references, and so are the URLs of ETSI SOL001 type
// files (mapped to the package's copies or Calaf's edition).
func IsReference(target string) bool {
	if strings.HasPrefix(target, "https://calaf.io/profiles/") || isETSITypesFile(target) {
		return false
	}
	for _, scheme := range []string{"oci://", "https://"} {
		if strings.HasPrefix(target, scheme) {
			return true
		}
	}
	return false
}

// WithImports returns the package with its imports by reference resolved: a copy sharing
// its files (closing it closes nothing).
func (p *Package) WithImports(imports []Import) *Package {
	return &Package{Root: p.Root, Entry: p.Entry, Digest: p.Digest, Files: p.Files, Meta: p.Meta, Imports: imports, limits: p.limits}
}

// ImportRoots returns the directories of the package's resolved imports.
func (p *Package) ImportRoots() []string {
	roots := make([]string, 0, len(p.Imports))
	for _, imp := range p.Imports {
		roots = append(roots, imp.Profile.Root)
	}
	return roots
}

// importOf returns the resolved import of url; nil when the package has none.
func (p *Package) importOf(target string) *Import {
	for i := range p.Imports {
		if p.Imports[i].URL == target {
			return &p.Imports[i]
		}
	}
	return nil
}

// importedFile names a file read from a resolved import by its URL and its path in the
// profile ("oci://host/acme/profile:1.0!nodes.yaml"), the way diagnostics and Clouts
// speak of it; ok is false for a path outside every import.
func (p *Package) importedFile(abs string) (string, bool) {
	for _, imp := range p.Imports {
		rel, err := filepath.Rel(imp.Profile.Root, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			continue
		}
		return imp.URL + "!" + filepath.ToSlash(rel), true
	}
	return "", false
}

// importURLPrefixes are the file URL prefixes of every import's root, with what each
// becomes in a Clout (relativizeClout).
func (p *Package) importURLPrefixes() map[string]string {
	prefixes := map[string]string{}
	for _, imp := range p.Imports {
		root := filepath.ToSlash(imp.Profile.Root)
		prefixes["file://"+root+"/"] = imp.URL + "!"
		prefixes[(&url.URL{Scheme: "file", Path: root + "/"}).String()] = imp.URL + "!"
	}
	return prefixes
}

// Reference is an import by reference found in a package, where it is written.
type Reference struct {
	URL  string
	File string
	Line int
}

// References returns every import by reference of the package's templates (the files its
// entry reaches through relative imports), each once, at its first mention.
func (p *Package) ReferenceImports() []Reference {
	var refs []Reference
	seen := map[string]bool{}
	visited := map[string]bool{}
	queue := []string{p.Entry}
	for len(queue) > 0 {
		file := queue[0]
		queue = queue[1:]
		if visited[file] || len(visited) > p.limits.MaxFiles {
			continue
		}
		visited[file] = true
		doc, err := p.readYAML(file)
		if err != nil {
			continue // the preflight reports it
		}
		for _, target := range importTargets(mappingValue(mappingOf(doc), "imports")) {
			switch {
			case target.repository:
			case IsReference(target.url):
				if !seen[target.url] {
					seen[target.url] = true
					refs = append(refs, Reference{URL: target.url, File: file, Line: target.node.Line})
				}
			case !urlScheme.MatchString(target.url) || isWindowsDrive(target.url):
				if rel, err := p.resolvePath(file, target.url); err == nil {
					queue = append(queue, rel)
				}
			}
		}
	}
	return refs
}

// Lock is a package's calaf.lock: the digest of each profile it imports by reference.
type Lock struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Imports    []LockedImport `yaml:"imports"`
}

// LockedImport is one import of a lock.
type LockedImport struct {
	// URL is the import as written in the templates.
	URL string `yaml:"url"`
	// Digest identifies the artifact fetched: an OCI manifest's digest, an archive's SHA-256.
	Digest string `yaml:"digest"`
	// Content is the digest of the profile's files (Package.Digest).
	Content string `yaml:"content"`
	// Signer is who signed the profile when it was locked (informational).
	Signer string `yaml:"signer,omitempty"`
	// Line is where the entry is in the lock file.
	Line int `yaml:"-"`
}

// Lock kind and version of calaf.lock.
const (
	LockAPIVersion = "calaf.io/v1alpha1"
	LockKind       = "ProfileLock"
)

// ReadLock reads the package's calaf.lock; nil when it has none. A lock that cannot be
// read is an *InvalidError at its line.
func (p *Package) ReadLock() (*Lock, error) {
	if !p.has(LockFile) {
		return nil, nil
	}
	doc, err := p.readYAML(LockFile)
	if err != nil {
		return nil, err
	}
	var lock Lock
	if err := doc.Decode(&lock); err != nil {
		return nil, Invalid(LockFile, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if lock.Kind != LockKind {
		return nil, Invalid(LockFile, "kind %q: a lock file is of kind %s", lock.Kind, LockKind)
	}
	entries := mappingValue(mappingOf(doc), "imports")
	var diags []Diagnostic
	for i := range lock.Imports {
		if entries != nil && i < len(entries.Content) {
			lock.Imports[i].Line = entries.Content[i].Line
		}
		l := lock.Imports[i]
		switch {
		case !IsReference(l.URL):
			diags = append(diags, Diagnostic{File: LockFile, Line: l.Line, Message: fmt.Sprintf("url %q is not an import by reference (oci://, https://)", l.URL)})
		case !validDigest(l.Digest) || !validDigest(l.Content):
			diags = append(diags, Diagnostic{File: LockFile, Line: l.Line, Message: fmt.Sprintf("%s: digest and content must be sha256:<64 hex digits>", l.URL)})
		case slices.IndexFunc(lock.Imports[:i], func(o LockedImport) bool { return o.URL == l.URL }) >= 0:
			diags = append(diags, Diagnostic{File: LockFile, Line: l.Line, Message: fmt.Sprintf("%s is locked twice", l.URL)})
		}
	}
	if len(diags) > 0 {
		return nil, &InvalidError{Diagnostics: diags}
	}
	return &lock, nil
}

// Find returns the locked entry of url; nil when the lock has none.
func (l *Lock) Find(target string) *LockedImport {
	if l == nil {
		return nil
	}
	for i := range l.Imports {
		if l.Imports[i].URL == target {
			return &l.Imports[i]
		}
	}
	return nil
}

// Marshal writes the lock as calaf.lock holds it, with a comment saying what it is.
func (l *Lock) Marshal() ([]byte, error) {
	l.APIVersion, l.Kind = LockAPIVersion, LockKind
	data, err := yaml.Marshal(l)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Written by calaf package lock: the digest of every profile this package imports by\n# reference. Calaf deploys these digests only.\n"), data...), nil
}

func validDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	return strings.Trim(hex, "0123456789abcdef") == ""
}
