package tosca

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// CompileOptions say how a package is compiled beyond its inputs.
type CompileOptions struct {
	// Flavour selects the deployment flavour of an ETSI SOL001 VNF package (the instantiate
	// request's flavourId); empty selects the package's only flavour.
	Flavour string
	// Strict refuses the real-world idioms that are otherwise tolerated with a warning.
	Strict bool
	// Entry names the file compiled when it is not the package's entry (a service
	// template substituting a node type, made the entry by Package.WithEntry): the
	// compile is cached apart from the entry's.
	Entry string `json:",omitempty"`
}

// IsZero tells whether the options are the defaults.
func (o CompileOptions) IsZero() bool {
	return o == CompileOptions{}
}

// VNFD describes how an ETSI SOL001 VNF package was compiled: its top-level VNFD, the
// deployment flavour chosen and what fed it. It travels in the Clout's metadata, so a
// Clout restored from durable state still carries it.
type VNFD struct {
	// TopFile is the top-level VNFD (the package's entry).
	TopFile string `json:"topFile"`
	// Flavour is the chosen deployment flavour and FlavourFile the file compiled for it.
	Flavour     string `json:"flavour"`
	FlavourFile string `json:"flavourFile"`
	// Flavours lists every deployment flavour of the package, sorted.
	Flavours []string `json:"flavours"`
	// NodeType is the VNF node type the flavours substitute.
	NodeType string `json:"nodeType"`
	// Properties are the VNF node's properties as the flavour received them.
	Properties map[string]any `json:"properties,omitempty"`
	// NodeLines gives the line of each node template of the flavour file.
	NodeLines map[string]int `json:"nodeLines,omitempty"`
	// Strict is set when the compile refused the tolerated idioms: the mapping refuses
	// its own (docs/etsi.md) too.
	Strict bool `json:"strict,omitempty"`
}

// flavourFile is one deployment flavour of a SOL001 package.
type flavourFile struct {
	id       string
	file     string
	nodeType string
	top      *yaml.Node // the file's top-level mapping
	line     int        // of its flavour_id
}

// sol001Plan is how a SOL001 package is compiled: the flavour file is the entry, with the
// inputs the top-level VNF node feeds it.
type sol001Plan struct {
	vnfd   VNFD
	inputs map[string]any
}

// sol001 recognizes an ETSI SOL001 package — a top-level VNFD importing one file per
// deployment flavour, each a topology template substituting the VNF node type (or a single
// file substituting it) — and plans its compile: the flavour chosen by opts.Flavour,
// compiled as the entry, fed by the top-level VNF node's properties. It returns nil for
// other packages (an error when a flavour was asked of one).
func (p *Package) sol001(inputs map[string]any, opts CompileOptions, mapped map[string]string) (*sol001Plan, error) {
	doc, err := p.readYAML(p.Entry)
	if err != nil {
		return nil, err
	}
	top := mappingOf(doc)
	flavours, err := p.flavourFiles(top, mapped)
	if err != nil {
		return nil, err
	}
	if len(flavours) == 0 {
		if opts.Flavour != "" {
			return nil, Invalid(p.Entry, "flavourId %q: the package is not an ETSI SOL001 VNF package (no file of it has substitution_mappings with a flavour_id)", opts.Flavour)
		}
		return nil, nil
	}
	chosen, err := chooseFlavour(p.Entry, flavours, opts.Flavour)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(flavours))
	for _, f := range flavours {
		ids = append(ids, f.id)
	}
	plan := &sol001Plan{vnfd: VNFD{TopFile: p.Entry, Flavour: chosen.id, FlavourFile: chosen.file, Flavours: ids, NodeType: chosen.nodeType, Strict: opts.Strict}}
	types := p.nodeTypeIndex(p.Entry, mapped)
	properties, err := p.vnfProperties(top, chosen, inputs, types)
	if err != nil {
		return nil, err
	}
	plan.vnfd.Properties = properties
	if plan.inputs, err = flavourInputs(p.Entry, top, chosen, properties, inputs); err != nil {
		return nil, err
	}
	plan.vnfd.NodeLines = nodeLines(chosen.top)
	return plan, nil
}

// flavourFiles lists the deployment flavours of a package: the files the entry imports
// (and the entry itself) whose topology template has substitution_mappings with a
// flavour_id, sorted by flavour id. Two files of one flavour are an error.
func (p *Package) flavourFiles(top *yaml.Node, mapped map[string]string) ([]flavourFile, error) {
	candidates := []string{p.Entry}
	for _, target := range importTargets(mappingValue(top, "imports")) {
		if target.repository || mapped[target.url] != "" || urlScheme.MatchString(target.url) {
			continue
		}
		if rel, err := p.resolve(p.Entry, target.url); err == nil {
			candidates = append(candidates, rel)
		}
	}
	var flavours []flavourFile
	seen := map[string]string{}
	for _, file := range candidates {
		doc, err := p.readYAML(file)
		if err != nil {
			return nil, err
		}
		fileTop := mappingOf(doc)
		mappings := mappingValue(mappingValue(fileTop, "topology_template"), "substitution_mappings")
		id := mappingValue(mappingValue(mappings, "properties"), "flavour_id")
		if id == nil || id.Kind != yaml.ScalarNode || id.Value == "" {
			continue
		}
		if other, dup := seen[id.Value]; dup {
			return nil, &InvalidError{Diagnostics: []Diagnostic{{File: file, Line: id.Line, Column: id.Column,
				Message: fmt.Sprintf("deployment flavour %q is defined twice: here and in %s", id.Value, other)}}}
		}
		seen[id.Value] = file
		nodeType := ""
		if t := mappingValue(mappings, "node_type"); t != nil {
			nodeType = t.Value
		}
		flavours = append(flavours, flavourFile{id: id.Value, file: file, nodeType: nodeType, top: fileTop, line: id.Line})
	}
	sort.Slice(flavours, func(i, j int) bool { return flavours[i].id < flavours[j].id })
	return flavours, nil
}

// chooseFlavour returns the flavour called id, or the only one when id is empty; the error
// lists the package's flavours.
func chooseFlavour(entry string, flavours []flavourFile, id string) (flavourFile, error) {
	var names []string
	for _, f := range flavours {
		if f.id == id || id == "" && len(flavours) == 1 {
			return f, nil
		}
		names = append(names, fmt.Sprintf("%s (%s)", f.id, f.file))
	}
	if id == "" {
		return flavourFile{}, &FlavourError{File: entry, Flavours: names, Message: fmt.Sprintf("the package has %d deployment flavours: choose one with the instantiate request's flavourId", len(flavours))}
	}
	return flavourFile{}, &FlavourError{File: entry, Flavours: names, Message: fmt.Sprintf("flavourId %q is not a deployment flavour of this package", id)}
}

// FlavourError is an instantiate request that names no deployment flavour of the package,
// or none when the package has several. It lists the package's flavours.
type FlavourError struct {
	File     string
	Message  string
	Flavours []string
}

func (e *FlavourError) Error() string {
	return e.invalid().Error()
}

// Unwrap makes a FlavourError an InvalidError too.
func (e *FlavourError) Unwrap() error {
	return e.invalid()
}

func (e *FlavourError) invalid() *InvalidError {
	return Invalid(e.File, "%s; its flavours: %s", e.Message, strings.Join(e.Flavours, ", "))
}

// nodeLines maps each node template of a file to its line.
func nodeLines(top *yaml.Node) map[string]int {
	lines := map[string]int{}
	templates := mappingValue(mappingValue(top, "topology_template"), "node_templates")
	if templates == nil || templates.Kind != yaml.MappingNode {
		return lines
	}
	for i := 0; i+1 < len(templates.Content); i += 2 {
		lines[templates.Content[i].Value] = templates.Content[i].Line
	}
	return lines
}

// isETSITypesFile tells whether a file name is one of the ETSI SOL001 type files.
func isETSITypesFile(name string) bool {
	base := path.Base(name)
	return strings.HasPrefix(base, "etsi_nfv_sol001_") && (strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml"))
}
