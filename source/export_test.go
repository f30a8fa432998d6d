package source

import "calaf.io/calaf/tosca"

// SetOpenArchive replaces how the store extracts archives: a test makes it fail as a bug
// in a parser would.
func (s *Store) SetOpenArchive(open func(data []byte, name string, limits tosca.Limits) (*tosca.Package, error)) {
	s.openArchive = open
}

// SetOpenDirectory replaces how the store reads package directories: a test makes it fail
// as a bug in a parser would.
func (s *Store) SetOpenDirectory(open func(dir string, limits tosca.Limits) (*tosca.Package, error)) {
	s.openDirectory = open
}
