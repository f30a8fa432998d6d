package profilekit

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"calaf.io/calaf/profiles"
	"calaf.io/calaf/tosca"
)

// Kind is the kind of a TOSCA type: the section that defines it.
type Kind string

// The kinds of types, in the order a reference lists them.
const (
	NodeKind         Kind = "node"
	DataKind         Kind = "data"
	CapabilityKind   Kind = "capability"
	RelationshipKind Kind = "relationship"
	ArtifactKind     Kind = "artifact"
	InterfaceKind    Kind = "interface"
	PolicyKind       Kind = "policy"
	GroupKind        Kind = "group"
)

// kindSection is the section of a service template that defines types of a kind.
type kindSection struct {
	kind    Kind
	section string
}

// kindSections lists every kind in reference order, with its section.
func kindSections() []kindSection {
	return []kindSection{
		{NodeKind, "node_types"}, {DataKind, "data_types"}, {CapabilityKind, "capability_types"},
		{RelationshipKind, "relationship_types"}, {ArtifactKind, "artifact_types"},
		{InterfaceKind, "interface_types"}, {PolicyKind, "policy_types"}, {GroupKind, "group_types"},
	}
}

// Kinds returns every kind, in reference order.
func Kinds() []Kind {
	var kinds []Kind
	for _, k := range kindSections() {
		kinds = append(kinds, k.kind)
	}
	return kinds
}

// Origins of types: the profile read, the Calaf Kubernetes profile, TOSCA's normative
// types; a type of a profile imported by reference has the import's URL as its origin.
const (
	OriginProfile = "profile"
	OriginCalaf   = "calaf"
	OriginTOSCA   = "tosca"
)

// Type is one type definition.
type Type struct {
	Kind        Kind
	Name        string
	Origin      string
	File        string // origin-relative path of the file defining it
	Line        int
	DerivedFrom string
	Description string
	Version     string
	Metadata    map[string]string
	Properties  []*Property
	Attributes  []*Property
	// Requirements, Capabilities, Interfaces and Artifacts are a node type's (a
	// relationship type has Interfaces too); Operations an interface type's.
	Requirements []*Requirement
	Capabilities []*Capability
	Interfaces   []*Interface
	Artifacts    []*Artifact
	Operations   []*Operation
	// Constraints and EntrySchema refine the primitive a data type derives from.
	Constraints []Constraint
	EntrySchema *Schema
	// ValidSourceTypes (capability types) and ValidTargetTypes (relationship types).
	ValidSourceTypes []string
	ValidTargetTypes []string
}

// Property is a property (or attribute) definition.
type Property struct {
	Name        string
	Type        string
	Description string
	Line        int
	// Required is TOSCA's: true unless the definition says false.
	Required    bool
	Default     any
	HasDefault  bool
	Constraints []Constraint
	EntrySchema *Schema
	KeySchema   *Schema
	Status      string
	// set names the keys the definition itself gives (a refinement in a derived type
	// changes only those).
	set map[string]bool
}

// Schema is an entry_schema or key_schema: a type and its constraints.
type Schema struct {
	Type        string
	Constraints []Constraint
	EntrySchema *Schema
}

// Constraint is one constraint clause, e.g. {in_range: [1, 65535]}.
type Constraint struct {
	Operator string
	Value    any
}

// String renders the clause as TOSCA writes it: "in_range: [1, 65535]".
func (c Constraint) String() string {
	return c.Operator + ": " + flowYAML(c.Value)
}

// Requirement is a requirement definition of a node type.
type Requirement struct {
	Name         string
	Capability   string
	Node         string
	Relationship string
	Occurrences  []any
	Description  string
	Line         int
}

// Capability is a capability definition of a node type.
type Capability struct {
	Name             string
	Type             string
	Description      string
	Occurrences      []any
	ValidSourceTypes []string
	Line             int
}

// Interface is an interface definition of a node or relationship type.
type Interface struct {
	Name       string
	Type       string
	Operations []string
	Line       int
}

// Artifact is an artifact definition of a node type.
type Artifact struct {
	Name string
	Type string
	File string
	Line int
}

// Operation is an operation of an interface type.
type Operation struct {
	Name        string
	Description string
	Line        int
}

// Catalog holds every type a profile (or a package) reaches through its imports.
type Catalog struct {
	// Name, Version and Author come from the profile's metadata (template_name,
	// template_version, template_author).
	Name, Version, Author string
	Description           string
	// Entry is the file the catalog was read from.
	Entry string
	// Scriptlets maps each scriptlet the profile's own files declare to its file.
	Scriptlets map[string]string
	types      map[Kind]map[string]*Type
}

// ImportedFiles are the files of a profile imported by reference, resolved and verified
// (tosca.Import): its files and the entry the reference names.
type ImportedFiles struct {
	FS    fs.FS
	Entry string
}

// LoadOptions say where a catalog's imports by reference are.
type LoadOptions struct {
	// Imports are the locked imports by reference, by URL.
	Imports map[string]ImportedFiles
}

// LoadDir reads the catalog of the profile or package whose entry file is entry
// (relative to dir): its own types and every type it imports.
func LoadDir(dir, entry string, opts LoadOptions) (*Catalog, error) {
	return LoadFS(os.DirFS(dir), entry, opts)
}

// LoadFS is LoadDir on a file system: the embedded Calaf profile, a fetched profile.
func LoadFS(fsys fs.FS, entry string, opts LoadOptions) (*Catalog, error) {
	l := &loader{catalog: &Catalog{Entry: entry, Scriptlets: map[string]string{}, types: map[Kind]map[string]*Type{}},
		opts: opts, seen: map[string]bool{}}
	own := source{origin: OriginProfile, fsys: fsys}
	l.visit(source{origin: OriginTOSCA, fsys: pucciniAssets{}}, "simple/1.3/profile.yaml", nil)
	l.visit(own, entry, nil)
	if len(l.diags) > 0 {
		return nil, &tosca.InvalidError{Diagnostics: l.diags}
	}
	return l.catalog, nil
}

// source is where a file of the catalog comes from.
type source struct {
	origin string
	fsys   fs.FS
}

type loader struct {
	catalog *Catalog
	opts    LoadOptions
	seen    map[string]bool
	diags   []tosca.Diagnostic
}

// visit reads the types of one file, then those of its imports.
func (l *loader) visit(src source, file string, from *yaml.Node) {
	key := src.origin + "\x00" + file
	if l.seen[key] {
		return
	}
	l.seen[key] = true
	data, err := fs.ReadFile(src.fsys, file)
	if err != nil {
		l.diags = append(l.diags, tosca.Diagnostic{File: file, Message: fmt.Sprintf("cannot read: %v", errorText(err))})
		return
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		l.diags = append(l.diags, tosca.Diagnostic{File: file, Message: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")})
		return
	}
	top := mapping(&doc)
	if top == nil {
		return
	}
	if src.origin == OriginProfile && file == l.catalog.Entry {
		l.readHeader(top)
	}
	l.readScriptlets(src, file, top)
	for _, ks := range kindSections() {
		for _, kv := range pairs(value(top, ks.section)) {
			l.addType(src, file, ks.kind, kv[0], kv[1])
		}
	}
	for _, imp := range imports(value(top, "imports")) {
		l.follow(src, file, imp)
	}
}

// readHeader takes the profile's name, version, author and description.
func (l *loader) readHeader(top *yaml.Node) {
	meta := stringMap(value(top, "metadata"))
	l.catalog.Name, l.catalog.Version, l.catalog.Author = meta["template_name"], meta["template_version"], meta["template_author"]
	if d := value(top, "description"); d != nil {
		l.catalog.Description = strings.TrimSpace(d.Value)
	}
}

// scriptletPrefix marks the metadata keys that declare scriptlets.
const scriptletPrefix = "puccini.scriptlet.import:"

func (l *loader) readScriptlets(src source, file string, top *yaml.Node) {
	if src.origin != OriginProfile {
		return
	}
	for _, kv := range pairs(value(top, "metadata")) {
		if name, ok := strings.CutPrefix(kv[0].Value, scriptletPrefix); ok {
			l.catalog.Scriptlets[name] = path.Join(path.Dir(file), kv[1].Value)
		}
	}
}

var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// follow visits the file an import names.
func (l *loader) follow(src source, file string, imp *yaml.Node) {
	target := imp.Value
	switch {
	case strings.HasPrefix(target, "internal:/profiles/"):
		l.visit(source{origin: OriginTOSCA, fsys: pucciniAssets{}}, strings.TrimPrefix(target, "internal:/profiles/"), imp)
	case urlScheme.MatchString(target):
		if rel, ok := profiles.EmbeddedPath(target); ok {
			l.visit(source{origin: OriginCalaf, fsys: profiles.FS()}, rel, imp)
			return
		}
		if imported, ok := l.opts.Imports[target]; ok {
			l.visit(source{origin: target, fsys: imported.FS}, imported.Entry, imp)
			return
		}
		l.diags = append(l.diags, tosca.Diagnostic{File: file, Line: imp.Line, Column: imp.Column,
			Message: fmt.Sprintf("import %q is not resolved: lock the package's imports first (calaf package lock)", target)})
	default:
		rel := path.Clean(path.Join(path.Dir(file), target))
		if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(target) {
			l.diags = append(l.diags, tosca.Diagnostic{File: file, Line: imp.Line, Column: imp.Column, Message: fmt.Sprintf("import %q leaves the profile", target)})
			return
		}
		l.visit(src, rel, imp)
	}
}

// addType records a type definition; the first definition of a name wins, as the import
// order reaches it.
func (l *loader) addType(src source, file string, kind Kind, key, def *yaml.Node) {
	byName := l.catalog.types[kind]
	if byName == nil {
		byName = map[string]*Type{}
		l.catalog.types[kind] = byName
	}
	if _, dup := byName[key.Value]; dup {
		return
	}
	t := &Type{Kind: kind, Name: key.Value, Origin: src.origin, File: file, Line: key.Line}
	readType(t, def)
	byName[t.Name] = t
}

// readType reads the sections of a type definition.
func readType(t *Type, def *yaml.Node) {
	t.DerivedFrom = scalar(value(def, "derived_from"))
	t.Description = strings.TrimSpace(scalar(value(def, "description")))
	t.Version = scalar(value(def, "version"))
	t.Metadata = stringMap(value(def, "metadata"))
	t.Properties = readProperties(value(def, "properties"))
	t.Attributes = readProperties(value(def, "attributes"))
	t.Constraints = readConstraints(value(def, "constraints"))
	t.EntrySchema = readSchema(value(def, "entry_schema"))
	t.ValidSourceTypes = stringList(value(def, "valid_source_types"))
	t.ValidTargetTypes = stringList(value(def, "valid_target_types"))
	t.Requirements = readRequirements(value(def, "requirements"))
	for _, kv := range pairs(value(def, "capabilities")) {
		c := &Capability{Name: kv[0].Value, Line: kv[0].Line}
		if kv[1].Kind == yaml.ScalarNode {
			c.Type = kv[1].Value
		} else {
			c.Type, c.Description = scalar(value(kv[1], "type")), strings.TrimSpace(scalar(value(kv[1], "description")))
			c.Occurrences, c.ValidSourceTypes = decodeList(value(kv[1], "occurrences")), stringList(value(kv[1], "valid_source_types"))
		}
		t.Capabilities = append(t.Capabilities, c)
	}
	for _, kv := range pairs(value(def, "interfaces")) {
		i := &Interface{Name: kv[0].Value, Line: kv[0].Line, Type: scalar(value(kv[1], "type"))}
		for _, op := range pairs(value(kv[1], "operations")) {
			i.Operations = append(i.Operations, op[0].Value)
		}
		t.Interfaces = append(t.Interfaces, i)
	}
	for _, kv := range pairs(value(def, "artifacts")) {
		a := &Artifact{Name: kv[0].Value, Line: kv[0].Line}
		if kv[1].Kind == yaml.ScalarNode {
			a.File = kv[1].Value
		} else {
			a.Type, a.File = scalar(value(kv[1], "type")), scalar(value(kv[1], "file"))
		}
		t.Artifacts = append(t.Artifacts, a)
	}
	operations := value(def, "operations")
	if operations == nil && t.Kind == InterfaceKind {
		operations = interfaceOperations(def)
	}
	for _, kv := range pairs(operations) {
		op := &Operation{Name: kv[0].Value, Line: kv[0].Line}
		if kv[1].Kind == yaml.ScalarNode {
			op.Description = kv[1].Value
		} else {
			op.Description = strings.TrimSpace(scalar(value(kv[1], "description")))
		}
		t.Operations = append(t.Operations, op)
	}
}

// interfaceOperations reads the operations of a TOSCA 1.0/1.1 interface type, written as
// keys of the type itself.
func interfaceOperations(def *yaml.Node) *yaml.Node {
	ops := &yaml.Node{Kind: yaml.MappingNode}
	reserved := map[string]bool{"derived_from": true, "version": true, "metadata": true, "description": true, "inputs": true, "notifications": true}
	for _, kv := range pairs(def) {
		if !reserved[kv[0].Value] {
			ops.Content = append(ops.Content, kv[0], kv[1])
		}
	}
	return ops
}

func readRequirements(n *yaml.Node) []*Requirement {
	var reqs []*Requirement
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	for _, item := range n.Content {
		for _, kv := range pairs(item) {
			r := &Requirement{Name: kv[0].Value, Line: kv[0].Line}
			if kv[1].Kind == yaml.ScalarNode {
				r.Capability = kv[1].Value
			} else {
				r.Capability, r.Node = scalar(value(kv[1], "capability")), scalar(value(kv[1], "node"))
				if rel := value(kv[1], "relationship"); rel != nil && rel.Kind == yaml.MappingNode {
					r.Relationship = scalar(value(rel, "type"))
				} else {
					r.Relationship = scalar(rel)
				}
				r.Occurrences, r.Description = decodeList(value(kv[1], "occurrences")), strings.TrimSpace(scalar(value(kv[1], "description")))
			}
			reqs = append(reqs, r)
		}
	}
	return reqs
}

func readProperties(n *yaml.Node) []*Property {
	var props []*Property
	for _, kv := range pairs(n) {
		p := &Property{Name: kv[0].Value, Line: kv[0].Line, Required: true, set: map[string]bool{}}
		for _, field := range pairs(kv[1]) {
			p.set[field[0].Value] = true
		}
		p.Type = scalar(value(kv[1], "type"))
		p.Description = strings.TrimSpace(scalar(value(kv[1], "description")))
		p.Status = scalar(value(kv[1], "status"))
		if r := value(kv[1], "required"); r != nil {
			p.Required = r.Value != "false"
		}
		if d := value(kv[1], "default"); d != nil {
			p.HasDefault = true
			_ = d.Decode(&p.Default)
		}
		p.Constraints = readConstraints(value(kv[1], "constraints"))
		p.EntrySchema = readSchema(value(kv[1], "entry_schema"))
		p.KeySchema = readSchema(value(kv[1], "key_schema"))
		props = append(props, p)
	}
	return props
}

func readSchema(n *yaml.Node) *Schema {
	switch {
	case n == nil:
		return nil
	case n.Kind == yaml.ScalarNode:
		return &Schema{Type: n.Value}
	}
	return &Schema{Type: scalar(value(n, "type")), Constraints: readConstraints(value(n, "constraints")), EntrySchema: readSchema(value(n, "entry_schema"))}
}

func readConstraints(n *yaml.Node) []Constraint {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	var cs []Constraint
	for _, item := range n.Content {
		for _, kv := range pairs(item) {
			var v any
			_ = kv[1].Decode(&v)
			cs = append(cs, Constraint{Operator: kv[0].Value, Value: v})
		}
	}
	return cs
}

// Lookup returns the type of a kind by name; nil when the catalog has none.
func (c *Catalog) Lookup(kind Kind, name string) *Type {
	return c.types[kind][name]
}

// Find returns the type of any kind named name, node types first.
func (c *Catalog) Find(name string) *Type {
	for _, k := range kindSections() {
		if t := c.types[k.kind][name]; t != nil {
			return t
		}
	}
	return nil
}

// Types returns the types of a kind from the given origin ("" for every origin), by name.
func (c *Catalog) Types(kind Kind, origin string) []*Type {
	var types []*Type
	for _, t := range c.types[kind] {
		if origin == "" || t.Origin == origin {
			types = append(types, t)
		}
	}
	sort.Slice(types, func(i, j int) bool { return types[i].Name < types[j].Name })
	return types
}

// maxDepth bounds a derived_from chain (a loop is Puccini's to report).
const maxDepth = 64

// Ancestors returns t and the types it derives from, most derived first.
func (c *Catalog) Ancestors(t *Type) []*Type {
	chain := []*Type{t}
	for len(chain) < maxDepth && t.DerivedFrom != "" {
		parent := c.Lookup(t.Kind, t.DerivedFrom)
		if parent == nil || parent == t {
			break
		}
		chain = append(chain, parent)
		t = parent
	}
	return chain
}

// IsA tells whether t is the type named name or derives from it.
func (c *Catalog) IsA(t *Type, name string) bool {
	for _, a := range c.Ancestors(t) {
		if a.Name == name {
			return true
		}
	}
	return false
}

// Properties returns the properties of t with those it inherits, each refined by the
// most derived definition: the parents' first, in the order they were defined.
func (c *Catalog) Properties(t *Type) []*Property {
	return c.merged(t, func(t *Type) []*Property { return t.Properties })
}

// Attributes returns the attributes of t with those it inherits.
func (c *Catalog) Attributes(t *Type) []*Property {
	return c.merged(t, func(t *Type) []*Property { return t.Attributes })
}

func (c *Catalog) merged(t *Type, of func(*Type) []*Property) []*Property {
	chain := c.Ancestors(t)
	var order []string
	byName := map[string]*Property{}
	for i := len(chain) - 1; i >= 0; i-- {
		for _, p := range of(chain[i]) {
			if parent, ok := byName[p.Name]; ok {
				byName[p.Name] = refine(parent, p)
				continue
			}
			order = append(order, p.Name)
			byName[p.Name] = p
		}
	}
	props := make([]*Property, len(order))
	for i, name := range order {
		props[i] = byName[name]
	}
	return props
}

// refine applies a derived type's redefinition of a property to its parent's: what the
// redefinition says replaces, constraints add up.
func refine(parent, child *Property) *Property {
	merged := *parent
	merged.Line = child.Line
	merged.set = child.set
	if child.set["type"] {
		merged.Type = child.Type
	}
	if child.set["description"] {
		merged.Description = child.Description
	}
	if child.set["required"] {
		merged.Required = child.Required
	}
	if child.set["default"] {
		merged.Default, merged.HasDefault = child.Default, true
	}
	if child.set["status"] {
		merged.Status = child.Status
	}
	if child.set["entry_schema"] {
		merged.EntrySchema = child.EntrySchema
	}
	if child.set["key_schema"] {
		merged.KeySchema = child.KeySchema
	}
	merged.Constraints = append(append([]Constraint(nil), parent.Constraints...), child.Constraints...)
	return &merged
}

// Requirements returns the requirements of a node type with those it inherits (a
// redefinition replaces its parent's).
func (c *Catalog) Requirements(t *Type) []*Requirement {
	chain := c.Ancestors(t)
	var reqs []*Requirement
	index := map[string]int{}
	for i := len(chain) - 1; i >= 0; i-- {
		for _, r := range chain[i].Requirements {
			if at, ok := index[r.Name]; ok {
				reqs[at] = r
				continue
			}
			index[r.Name] = len(reqs)
			reqs = append(reqs, r)
		}
	}
	return reqs
}

// Capabilities returns the capabilities of a node type with those it inherits.
func (c *Catalog) Capabilities(t *Type) []*Capability {
	chain := c.Ancestors(t)
	var caps []*Capability
	index := map[string]int{}
	for i := len(chain) - 1; i >= 0; i-- {
		for _, cp := range chain[i].Capabilities {
			if at, ok := index[cp.Name]; ok {
				merged := *caps[at]
				if cp.Type != "" {
					merged.Type = cp.Type
				}
				if cp.Description != "" {
					merged.Description = cp.Description
				}
				caps[at] = &merged
				continue
			}
			index[cp.Name] = len(caps)
			caps = append(caps, cp)
		}
	}
	return caps
}

// Interfaces returns the interfaces of a type with those it inherits.
func (c *Catalog) Interfaces(t *Type) []*Interface {
	chain := c.Ancestors(t)
	var ifaces []*Interface
	index := map[string]int{}
	for i := len(chain) - 1; i >= 0; i-- {
		for _, it := range chain[i].Interfaces {
			if at, ok := index[it.Name]; ok {
				merged := *ifaces[at]
				if it.Type != "" {
					merged.Type = it.Type
				}
				ifaces[at] = &merged
				continue
			}
			index[it.Name] = len(ifaces)
			ifaces = append(ifaces, it)
		}
	}
	return ifaces
}

// Renderer returns the scriptlet that renders a node type (the metadata calaf.render of
// the most derived type that sets it) and the type that names it; "" for none.
func (c *Catalog) Renderer(t *Type) (string, *Type) {
	for _, a := range c.Ancestors(t) {
		if r := a.Metadata["calaf.render"]; r != "" {
			return r, a
		}
	}
	return "", nil
}

func errorText(err error) string {
	var pathErr *fs.PathError
	if ok := asPathError(err, &pathErr); ok {
		return pathErr.Err.Error()
	}
	return err.Error()
}
