package tosca

// Descriptor is what another process needs to read an open package again: where its files
// are, what they are, and the limits they were opened with. The files stay where they are;
// the process that opened the package keeps it open meanwhile.
type Descriptor struct {
	Root   string
	Entry  string
	Digest string
	Files  []File
	Meta   map[string]string
	Limits Limits
	// Imports are the package's resolved imports by reference.
	Imports []Import
}

// Describe returns the package's descriptor.
func (p *Package) Describe() Descriptor {
	return Descriptor{Root: p.Root, Entry: p.Entry, Digest: p.Digest, Files: p.Files, Meta: p.Meta, Limits: p.limits, Imports: p.Imports}
}

// Package returns the package a descriptor describes, without reading or hashing its files
// again. Its Close leaves the files alone: they belong to the process that opened them.
func (d Descriptor) Package() *Package {
	return &Package{Root: d.Root, Entry: d.Entry, Digest: d.Digest, Files: d.Files, Meta: d.Meta, limits: d.Limits, Imports: d.Imports}
}

// ReadRoots returns the directories a process must read to work on the package: its
// root and the roots of its resolved imports.
func (d Descriptor) ReadRoots() []string {
	roots := []string{d.Root}
	for _, imp := range d.Imports {
		roots = append(roots, imp.Profile.Root)
	}
	return roots
}
