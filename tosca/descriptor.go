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
}

// Describe returns the package's descriptor.
func (p *Package) Describe() Descriptor {
	return Descriptor{Root: p.Root, Entry: p.Entry, Digest: p.Digest, Files: p.Files, Meta: p.Meta, Limits: p.limits}
}

// Package returns the package a descriptor describes, without reading or hashing its files
// again. Its Close leaves the files alone: they belong to the process that opened them.
func (d Descriptor) Package() *Package {
	return &Package{Root: d.Root, Entry: d.Entry, Digest: d.Digest, Files: d.Files, Meta: d.Meta, limits: d.Limits}
}
