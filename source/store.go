package source

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
)

// Store keeps extracted packages by the SHA-256 of their archive, evicting the least
// recently used beyond a total size. A package handed out stays on disk until evicted;
// callers must not keep it across reconciles.
type Store struct {
	dir      string
	maxBytes int64
	limits   tosca.Limits
	// Integrity is how packages are checked against their SOL004 manifest before they are
	// stored: a package whose manifest does not match is never stored.
	Integrity tosca.IntegrityOptions

	// openArchive extracts an archive: tosca.OpenArchive (tests make it fail as a bug would).
	openArchive func(data []byte, name string, limits tosca.Limits) (*tosca.Package, error)
	// openDirectory reads a package directory: tosca.Open (tests make it fail as a bug would).
	openDirectory func(dir string, limits tosca.Limits) (*tosca.Package, error)

	lock     sync.Mutex
	size     int64
	order    *list.List
	entries  map[string]*list.Element
	evidence map[*tosca.Package]*sol004.Evidence
	archives map[*tosca.Package]Archive
}

// Archive is the archive a stored package was extracted from: its SHA-256 (hex) and size
// in bytes.
type Archive struct {
	SHA256 string
	Size   int64
}

type storeEntry struct {
	key  string
	pkg  *tosca.Package
	size int64
}

// NewStore returns a store under dir (emptied first) holding at most maxBytes of files.
func NewStore(dir string, maxBytes int64, limits tosca.Limits) (*Store, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &Store{dir: dir, maxBytes: maxBytes, limits: limits, openArchive: tosca.OpenArchive, openDirectory: tosca.Open, order: list.New(), entries: map[string]*list.Element{}, evidence: map[*tosca.Package]*sol004.Evidence{},
		archives: map[*tosca.Package]Archive{}}, nil
}

// Get returns the package stored under key (an archive SHA-256 or a source revision).
func (s *Store) Get(key string) (*tosca.Package, bool) {
	s.lock.Lock()
	defer s.lock.Unlock()
	element, ok := s.entries[key]
	if !ok {
		return nil, false
	}
	s.order.MoveToFront(element)
	return element.Value.(*storeEntry).pkg, true
}

// Evidence returns what a stored package carries to prove its origin (its SOL004
// signatures, checked against what they sign when it was stored); ok is false for a
// package no longer stored.
func (s *Store) Evidence(pkg *tosca.Package) (*sol004.Evidence, bool) {
	s.lock.Lock()
	defer s.lock.Unlock()
	evidence, ok := s.evidence[pkg]
	return evidence, ok
}

// ArchiveOf returns the archive a stored package was extracted from; ok is false for a
// package read from a directory, or no longer stored.
func (s *Store) ArchiveOf(pkg *tosca.Package) (Archive, bool) {
	s.lock.Lock()
	defer s.lock.Unlock()
	archive, ok := s.archives[pkg]
	return archive, ok
}

// PutArchive extracts an archive and stores it under key (its SHA-256 when key is empty).
// A SOL004 option 2 zip is unwrapped: the CSAR it holds is the package, its signature
// the evidence.
func (s *Store) PutArchive(key string, archive []byte, name string) (*tosca.Package, error) {
	var sum string
	if key == "" {
		sum = SHA256(archive)
		key = sum
	}
	if pkg, ok := s.Get(key); ok {
		return pkg, nil
	}
	if sum == "" {
		sum = SHA256(archive)
	}
	pkg, evidence, err := s.readArchive(archive, name)
	if err != nil {
		return nil, err
	}
	return s.adopt(key, pkg, evidence, &Archive{SHA256: sum, Size: int64(len(archive))})
}

// readArchive extracts an archive, checks it against its manifest and examines its
// signatures. A panic meanwhile — a bug that the archive's bytes reached in a parser —
// refuses the package with an *tosca.InvalidError instead of failing the caller.
func (s *Store) readArchive(archive []byte, name string) (pkg *tosca.Package, evidence *sol004.Evidence, err error) {
	defer refuseOnPanic(name, &err, func() { closeOpened(&pkg) })
	envelope, err := sol004.Unwrap(archive, s.limits)
	if err != nil {
		return nil, nil, err
	}
	if envelope != nil {
		archive, name = envelope.CSAR, name+"/"+envelope.CSARName
	}
	if pkg, err = s.openArchive(archive, name, s.limits); err != nil {
		return nil, nil, err
	}
	if _, err = pkg.VerifyIntegrity(s.Integrity); err != nil {
		pkg.Close()
		return nil, nil, err
	}
	return pkg, sol004.Examine(pkg, envelope), nil
}

// refuseOnPanic, deferred by a read of a package, turns a panic of the read into the
// refusal of the package (*err, an *tosca.InvalidError) after release frees what the read
// held: the package is not stored, the Service says why, and the operator goes on.
func refuseOnPanic(name string, err *error, release func()) {
	if recovered := recover(); recovered != nil {
		release()
		*err = &tosca.InvalidError{Diagnostics: []tosca.Diagnostic{{File: name,
			Message: fmt.Sprintf("reading the package failed unexpectedly (%v): the package is refused; this is a bug in Calaf, please report it with the package", recovered)}}}
	}
}

// closeOpened closes the package *pkg, if any, and forgets it.
func closeOpened(pkg **tosca.Package) {
	if *pkg != nil {
		(*pkg).Close()
		*pkg = nil
	}
}

// PutDirectory stores a package read from a directory (e.g. a git checkout), moving the
// directory into the store.
func (s *Store) PutDirectory(key, dir string) (*tosca.Package, error) {
	if pkg, ok := s.Get(key); ok {
		os.RemoveAll(dir)
		return pkg, nil
	}
	target := filepath.Join(s.dir, fmt.Sprintf("d-%x", sha256.Sum256([]byte(key))))
	os.RemoveAll(target)
	if err := os.Rename(dir, target); err != nil {
		return nil, err
	}
	pkg, evidence, err := s.readDirectory(target)
	if err != nil {
		return nil, err
	}
	return s.adopt(key, pkg, evidence, nil)
}

// readDirectory reads the package in dir, which it then owns (removed with the package, or
// at once when it is refused), checks it against its manifest and examines its signatures;
// a panic meanwhile refuses the package, as in readArchive.
func (s *Store) readDirectory(dir string) (pkg *tosca.Package, evidence *sol004.Evidence, err error) {
	defer refuseOnPanic("", &err, func() {
		if pkg == nil {
			os.RemoveAll(dir)
		}
		closeOpened(&pkg)
	})
	if pkg, err = s.openDirectory(dir, s.limits); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	pkg.OwnDirectory()
	if _, err = pkg.VerifyIntegrity(s.Integrity); err != nil {
		pkg.Close()
		return nil, nil, err
	}
	return pkg, sol004.Examine(pkg, nil), nil
}

// TempDir returns a new empty directory on the store's file system, for a package to be
// moved in with PutDirectory; the caller removes it if it does not.
func (s *Store) TempDir() (string, error) {
	return os.MkdirTemp(s.dir, "tmp-")
}

// Limits returns the bounds of one package.
func (s *Store) Limits() tosca.Limits {
	return s.limits
}

// Len returns the number of packages stored, and their total size.
func (s *Store) Len() (int, int64) {
	s.lock.Lock()
	defer s.lock.Unlock()
	return s.order.Len(), s.size
}

func (s *Store) adopt(key string, pkg *tosca.Package, evidence *sol004.Evidence, archive *Archive) (*tosca.Package, error) {
	var size int64
	for _, f := range pkg.Files {
		size += f.Size
	}
	s.lock.Lock()
	defer s.lock.Unlock()
	if element, ok := s.entries[key]; ok { // stored meanwhile by another reconcile
		pkg.Close()
		return element.Value.(*storeEntry).pkg, nil
	}
	s.entries[key] = s.order.PushFront(&storeEntry{key: key, pkg: pkg, size: size})
	s.evidence[pkg] = evidence
	if archive != nil {
		s.archives[pkg] = *archive
	}
	s.size += size
	for s.size > s.maxBytes && s.order.Len() > 1 {
		oldest := s.order.Back()
		entry := oldest.Value.(*storeEntry)
		s.order.Remove(oldest)
		delete(s.entries, entry.key)
		delete(s.evidence, entry.pkg)
		delete(s.archives, entry.pkg)
		s.size -= entry.size
		entry.pkg.Close()
	}
	return pkg, nil
}

// SHA256 returns the hex SHA-256 of data.
func SHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
