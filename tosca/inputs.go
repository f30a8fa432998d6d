package tosca

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"gopkg.in/yaml.v3"
)

// missingInputs reports, all at once and in the order the file declares them, the inputs
// of a topology template that are required, have no default and were given no value.
// Puccini reports only one of them, a different one from run to run. mapped names inputs
// that substitution_mappings feeds, which need no value.
func missingInputs(file string, top *yaml.Node, provided map[string]any) []Diagnostic {
	topology := mappingValue(top, "topology_template")
	declared := mappingValue(topology, "inputs")
	if declared == nil || declared.Kind != yaml.MappingNode {
		return nil
	}
	mapped := mappedInputs(topology)
	var diags []Diagnostic
	for i := 0; i+1 < len(declared.Content); i += 2 {
		key, definition := declared.Content[i], declared.Content[i+1]
		if _, ok := provided[key.Value]; ok || mapped[key.Value] || !requiresValue(definition) {
			continue
		}
		diags = append(diags, Diagnostic{File: file, Line: key.Line, Column: key.Column,
			Path: fmt.Sprintf("topology_template.inputs[%q]", key.Value), Message: "unassigned required input definition"})
	}
	sort.SliceStable(diags, func(i, j int) bool { return diags[i].Line < diags[j].Line })
	return diags
}

// requiresValue tells whether an input definition needs a value: it has neither a default
// nor a value and is not declared required: false.
func requiresValue(definition *yaml.Node) bool {
	if definition == nil || definition.Kind != yaml.MappingNode {
		return false
	}
	if mappingValue(definition, "default") != nil || mappingValue(definition, "value") != nil {
		return false
	}
	required := mappingValue(definition, "required")
	return required == nil || required.Value != "false"
}

// mappedInputs returns the inputs that substitution_mappings.properties maps ([ input ]).
func mappedInputs(topology *yaml.Node) map[string]bool {
	mapped := map[string]bool{}
	properties := mappingValue(mappingValue(topology, "substitution_mappings"), "properties")
	for _, value := range mappingValues(properties) {
		if value.Kind == yaml.SequenceNode && len(value.Content) == 1 && value.Content[0].Kind == yaml.ScalarNode {
			mapped[value.Content[0].Value] = true
		}
	}
	return mapped
}

// vnfProperties evaluates the properties of the top-level VNFD's VNF node — the node
// template of the flavour's substitution node type — as the flavour receives them: its
// get_input functions read the request's inputs (selected_flavour is the chosen flavour),
// and the properties it leaves unset take their type's defaults. Every missing input is
// reported at once.
func (p *Package) vnfProperties(top *yaml.Node, chosen flavourFile, inputs map[string]any, types nodeTypes) (map[string]any, error) {
	topology := mappingValue(top, "topology_template")
	values := map[string]any{}
	declared := mappingValue(topology, "inputs")
	for i := 0; declared != nil && i+1 < len(declared.Content); i += 2 {
		name := declared.Content[i].Value
		if value, ok := inputs[name]; ok {
			values[name] = value
		} else if def := mappingValue(declared.Content[i+1], "default"); def != nil {
			values[name] = decodeNode(def)
		}
	}
	values["selected_flavour"] = chosen.id
	properties := map[string]any{}
	nodeName, node := vnfNode(topology, chosen.nodeType, types)
	typeName := chosen.nodeType
	var diags []Diagnostic
	if node != nil {
		typeName = mappingValue(node, "type").Value
		assigned := mappingValue(node, "properties")
		if flavour := getInputName(mappingValue(assigned, "flavour_id")); flavour != "" {
			values[flavour] = chosen.id
		}
		for i := 0; assigned != nil && assigned.Kind == yaml.MappingNode && i+1 < len(assigned.Content); i += 2 {
			key, valueNode := assigned.Content[i], assigned.Content[i+1]
			value, diag := evaluateTopValue(valueNode, values, declared)
			if diag != nil {
				diag.File, diag.Path = p.Entry, fmt.Sprintf("topology_template.node_templates[%q].properties[%q]", nodeName, key.Value)
				diags = append(diags, *diag)
				continue
			}
			properties[key.Value] = value
		}
	}
	if len(diags) > 0 {
		return nil, &InvalidError{Diagnostics: diags}
	}
	for name, value := range types.defaults(typeName) {
		if _, set := properties[name]; !set {
			properties[name] = value
		}
	}
	properties["flavour_id"] = chosen.id
	return properties, nil
}

// vnfNode finds the VNF node of a top-level topology template: the node template of the
// substitution node type, else the only one derived from tosca.nodes.nfv.VNF.
func vnfNode(topology *yaml.Node, nodeType string, types nodeTypes) (string, *yaml.Node) {
	templates := mappingValue(topology, "node_templates")
	var name string
	var found *yaml.Node
	count := 0
	for i := 0; templates != nil && templates.Kind == yaml.MappingNode && i+1 < len(templates.Content); i += 2 {
		t := mappingValue(templates.Content[i+1], "type")
		if t == nil {
			continue
		}
		if t.Value == nodeType {
			return templates.Content[i].Value, templates.Content[i+1]
		}
		if types.derives(t.Value, "tosca.nodes.nfv.VNF") {
			name, found = templates.Content[i].Value, templates.Content[i+1]
			count++
		}
	}
	if count == 1 {
		return name, found
	}
	return "", nil
}

// getInputName returns the input a {get_input: name} value reads, or "".
func getInputName(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.MappingNode || len(n.Content) != 2 || n.Content[0].Value != "get_input" {
		return ""
	}
	arg := n.Content[1]
	if arg.Kind == yaml.SequenceNode && len(arg.Content) > 0 {
		arg = arg.Content[0]
	}
	if arg.Kind != yaml.ScalarNode {
		return ""
	}
	return arg.Value
}

// toscaFunctions are the functions the top-level VNFD's properties may not use: the
// flavour receives values, evaluated here.
var toscaFunctions = map[string]bool{
	"concat": true, "join": true, "token": true, "get_property": true, "get_attribute": true,
	"get_operation_output": true, "get_nodes_of_type": true, "get_artifact": true,
}

// evaluateTopValue evaluates a property value of the top-level VNF node: a literal, or a
// get_input of a declared input that has a value.
func evaluateTopValue(n *yaml.Node, values map[string]any, declared *yaml.Node) (any, *Diagnostic) {
	if name := getInputName(n); name != "" {
		if mappingValue(declared, name) == nil {
			return nil, &Diagnostic{Line: n.Line, Column: n.Column, Message: fmt.Sprintf("get_input of %q, which the top-level VNFD does not declare", name)}
		}
		value, ok := values[name]
		if !ok {
			return nil, &Diagnostic{Line: n.Line, Column: n.Column, Message: fmt.Sprintf("unassigned required input %q (read by get_input)", name)}
		}
		return value, nil
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 && toscaFunctions[n.Content[0].Value] {
		return nil, &Diagnostic{Line: n.Line, Column: n.Column, Message: fmt.Sprintf("%s: the top-level VNF node's properties feed the flavour as values; only get_input is evaluated there", n.Content[0].Value)}
	}
	return decodeNode(n), nil
}

// flavourInputs returns the inputs of the flavour's topology template: the request's
// inputs it declares, else the VNF node's properties of the same name. Inputs that neither
// the top-level VNFD nor the flavour declare, and required inputs left without a value,
// are all reported at once.
func flavourInputs(topFile string, top *yaml.Node, chosen flavourFile, properties, inputs map[string]any) (map[string]any, error) {
	declared := mappingValue(mappingValue(chosen.top, "topology_template"), "inputs")
	topDeclared := mappingValue(mappingValue(top, "topology_template"), "inputs")
	result := map[string]any{}
	var diags []Diagnostic
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		switch {
		case mappingValue(declared, name) != nil:
			result[name] = inputs[name]
		case mappingValue(topDeclared, name) == nil:
			diags = append(diags, Diagnostic{File: chosen.file, Path: fmt.Sprintf("topology_template.inputs[%q]", name),
				Message: fmt.Sprintf("undeclared input: neither the top-level VNFD (%s) nor flavour %q declares it", topFile, chosen.id)})
		}
	}
	for i := 0; declared != nil && declared.Kind == yaml.MappingNode && i+1 < len(declared.Content); i += 2 {
		name := declared.Content[i].Value
		if _, ok := result[name]; ok {
			continue
		}
		if value, ok := properties[name]; ok && value != nil {
			result[name] = value
		}
	}
	diags = append(diags, missingInputs(chosen.file, chosen.top, result)...)
	if len(diags) > 0 {
		return nil, &InvalidError{Diagnostics: diags}
	}
	return result, nil
}

// decodeNode returns the plain value of a YAML node (nil when it cannot be decoded).
func decodeNode(n *yaml.Node) any {
	var value any
	if err := n.Decode(&value); err != nil {
		return nil
	}
	return normalizeDecoded(value)
}

// normalizeDecoded makes decoded YAML use string keys and int64 numbers, as inputs do.
func normalizeDecoded(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for key, item := range v {
			v[key] = normalizeDecoded(item)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for key, item := range v {
			m[fmt.Sprint(key)] = normalizeDecoded(item)
		}
		return m
	case []any:
		for i, item := range v {
			v[i] = normalizeDecoded(item)
		}
		return v
	case int:
		return int64(v)
	}
	return v
}

// textTypes are the TOSCA types whose values are text, however they look: an input of one
// of them given as 208 on a command line is the string "208".
var textTypes = []string{"string", "timestamp", "version", "scalar-unit.size", "scalar-unit.time",
	"scalar-unit.frequency", "scalar-unit.bitrate", "tosca:string", "tosca:timestamp", "tosca:version"}

// TextInputs returns the names of the entry template's inputs whose declared type is text
// (string, version, timestamp, scalar units), so that a caller holding values typed by a
// shell can give them their declared type.
func (p *Package) TextInputs() (map[string]bool, error) {
	doc, err := p.readYAML(p.Entry)
	if err != nil {
		return nil, err
	}
	text := map[string]bool{}
	declared := mappingValue(mappingValue(mappingOf(doc), "topology_template"), "inputs")
	for i := 0; declared != nil && declared.Kind == yaml.MappingNode && i+1 < len(declared.Content); i += 2 {
		if t := mappingValue(declared.Content[i+1], "type"); t != nil && slices.Contains(textTypes, t.Value) {
			text[declared.Content[i].Value] = true
		}
	}
	return text, nil
}
