package tosca

import (
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Substitute is a service template of a package whose topology substitutes a node type
// (TOSCA substitution_mappings): a node template of that type in the package's entry is
// deployed as a Service of its own, compiled from this template.
type Substitute struct {
	// File is the service template, relative to the package root.
	File string
	// NodeType is the node type it substitutes.
	NodeType string
	// Inputs maps each property of the substituted node template that feeds the
	// template to the input it feeds: its property mappings ([ input ]), and the
	// properties named as one of its inputs.
	Inputs map[string]string
	// TemplateInputs and Outputs are the inputs and outputs the template declares; each
	// output is an attribute of the substituted node.
	TemplateInputs, Outputs []string
	// Attributes maps an attribute of the substituted node to a node template's
	// attribute in the template (its attribute mappings: [ node, attribute ]).
	Attributes map[string][2]string
}

// WithEntry returns the package with another of its files as entry (a substituting
// service template), sharing its files; closing it removes nothing.
func (p *Package) WithEntry(file string) (*Package, error) {
	clean := path.Clean(strings.TrimPrefix(file, "/"))
	if !slices.ContainsFunc(p.Files, func(f File) bool { return f.Path == clean }) {
		return nil, Invalid(p.Entry, "template %q is not a file of the package", file)
	}
	return &Package{Root: p.Root, Entry: clean, Digest: p.Digest, Files: p.Files, Meta: p.Meta, Imports: p.Imports, limits: p.limits}, nil
}

// Substitutes finds the service templates of the package that substitute a node type,
// besides its entry: the YAML files whose topology_template has substitution_mappings
// with a node_type and no flavour_id (an ETSI SOL001 deployment flavour is compiled as
// the flavour of its VNF instead). Two templates substituting one type are an error.
func (p *Package) Substitutes() ([]Substitute, error) {
	var found []Substitute
	seen := map[string]string{}
	for _, f := range p.Files {
		if f.Path == p.Entry || isETSITypesFile(f.Path) || !(strings.HasSuffix(f.Path, ".yaml") || strings.HasSuffix(f.Path, ".yml")) {
			continue
		}
		data, err := p.ReadFile(f.Path)
		if err != nil || !strings.Contains(string(data), "substitution_mappings") {
			continue
		}
		doc, err := p.readYAML(f.Path)
		if err != nil {
			return nil, err
		}
		sub, ok := substituteOf(f.Path, mappingOf(doc))
		if !ok {
			continue
		}
		if other, dup := seen[sub.NodeType]; dup {
			return nil, Invalid(f.Path, "node type %s is substituted twice: here and in %s", sub.NodeType, other)
		}
		seen[sub.NodeType] = f.Path
		found = append(found, sub)
	}
	return found, nil
}

// substituteOf reads the substitution mappings of a service template.
func substituteOf(file string, top *yaml.Node) (Substitute, bool) {
	topology := mappingValue(top, "topology_template")
	mappings := mappingValue(topology, "substitution_mappings")
	nodeType := mappingValue(mappings, "node_type")
	if nodeType == nil || nodeType.Kind != yaml.ScalarNode || nodeType.Value == "" {
		return Substitute{}, false
	}
	if mappingValue(mappingValue(mappings, "properties"), "flavour_id") != nil {
		return Substitute{}, false
	}
	sub := Substitute{File: file, NodeType: nodeType.Value, Inputs: map[string]string{}, Attributes: map[string][2]string{},
		TemplateInputs: keysOf(mappingValue(topology, "inputs")), Outputs: keysOf(mappingValue(topology, "outputs"))}
	for _, input := range sub.TemplateInputs {
		sub.Inputs[input] = input
	}
	forEach(mappingValue(mappings, "properties"), func(property string, value *yaml.Node) {
		if list := scalars(value); len(list) == 1 {
			sub.Inputs[property] = list[0]
		}
	})
	forEach(mappingValue(mappings, "attributes"), func(attribute string, value *yaml.Node) {
		if list := scalars(value); len(list) == 2 {
			sub.Attributes[attribute] = [2]string{list[0], list[1]}
		}
	})
	return sub, true
}

// keysOf lists the keys of a YAML mapping, in order.
func keysOf(m *yaml.Node) []string {
	var keys []string
	forEach(m, func(key string, _ *yaml.Node) { keys = append(keys, key) })
	return keys
}

// forEach calls do with each key and value of a YAML mapping.
func forEach(m *yaml.Node, do func(key string, value *yaml.Node)) {
	if m == nil || m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		do(m.Content[i].Value, m.Content[i+1])
	}
}

// scalars returns the values of a YAML list of scalars, or nil.
func scalars(list *yaml.Node) []string {
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil
	}
	var values []string
	for _, item := range list.Content {
		if item.Kind != yaml.ScalarNode {
			return nil
		}
		values = append(values, item.Value)
	}
	return values
}
