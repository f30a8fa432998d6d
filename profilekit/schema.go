package profilekit

import (
	"sort"
	"strings"
)

// SchemaDraft is the JSON Schema dialect of the schemas written here: draft-07, which the
// YAML language servers of editors (yaml-language-server) and Go validators all read.
const SchemaDraft = "http://json-schema.org/draft-07/schema#"

// toscaFunctions are the TOSCA 1.3 functions a value may be instead of a literal.
func toscaFunctions() []string {
	return []string{"concat", "join", "token", "get_input", "get_property", "get_attribute",
		"get_operation_output", "get_nodes_of_type", "get_artifact"}
}

// JSONSchema returns the JSON Schema of service templates written against the types of c:
// node templates of its node types (type names checked, their properties with their
// types, constraints and required ones, their requirements, capabilities and interfaces
// by name), inputs and outputs in shape. A value may always be a TOSCA function call.
// Node types of the template's own are not known to it: generate the schema from the
// package that defines them.
func JSONSchema(c *Catalog, id string) map[string]any {
	g := &schemaGen{catalog: c, defs: map[string]any{}}
	nodeTypes := g.instantiableNodeTypes()
	dispatch := make([]any, 0, len(nodeTypes))
	names := make([]any, 0, len(nodeTypes))
	for _, t := range nodeTypes {
		names = append(names, t.Name)
		dispatch = append(dispatch, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": t.Name}}, "required": []any{"type"}},
			"then": map[string]any{"$ref": g.nodeTemplateRef(t)},
		})
	}
	g.defs["node_template"] = map[string]any{
		"type":     "object",
		"required": []any{"type"},
		"properties": map[string]any{
			"type": map[string]any{"description": "The node type.", "enum": names},
		},
		"allOf": dispatch,
	}
	g.defs["function"] = g.functionSchema()
	title := "TOSCA service templates"
	if c.Name != "" {
		title += " written against " + c.Name + " " + c.Version
	}
	schema := map[string]any{
		"$schema":              SchemaDraft,
		"title":                title,
		"type":                 "object",
		"properties":           serviceTemplateProperties(),
		"additionalProperties": false,
		"definitions":          g.defs,
	}
	if id != "" {
		schema["$id"] = id
	}
	return schema
}

type schemaGen struct {
	catalog *Catalog
	defs    map[string]any
}

// instantiableNodeTypes returns every node type a template may use, by name.
func (g *schemaGen) instantiableNodeTypes() []*Type {
	return g.catalog.Types(NodeKind, "")
}

// serviceTemplateProperties are the top-level keys of a TOSCA 1.3 service template.
func serviceTemplateProperties() map[string]any {
	object := map[string]any{"type": "object"}
	return map[string]any{
		"tosca_definitions_version": map[string]any{"enum": []any{"tosca_simple_yaml_1_3"}},
		"namespace":                 map[string]any{"type": "string"},
		"metadata":                  map[string]any{"type": "object"},
		"description":               map[string]any{"type": "string"},
		"dsl_definitions":           object,
		"repositories":              object,
		"imports":                   map[string]any{"type": "array"},
		"artifact_types":            object,
		"data_types":                object,
		"capability_types":          object,
		"interface_types":           object,
		"relationship_types":        object,
		"node_types":                object,
		"group_types":               object,
		"policy_types":              object,
		"topology_template": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"description":            map[string]any{"type": "string"},
				"inputs":                 map[string]any{"type": "object", "additionalProperties": parameterSchema()},
				"outputs":                map[string]any{"type": "object", "additionalProperties": parameterSchema()},
				"node_templates":         map[string]any{"type": "object", "additionalProperties": map[string]any{"$ref": "#/definitions/node_template"}},
				"relationship_templates": object,
				"groups":                 object,
				"policies":               map[string]any{"type": "array"},
				"substitution_mappings":  object,
				"workflows":              object,
			},
			"additionalProperties": false,
		},
	}
}

// parameterSchema is the shape of an input or output definition.
func parameterSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"type": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"},
			"value": map[string]any{}, "default": map[string]any{}, "required": map[string]any{"type": "boolean"},
			"constraints": map[string]any{"type": "array"}, "entry_schema": map[string]any{}, "key_schema": map[string]any{},
			"metadata": map[string]any{"type": "object"}, "status": map[string]any{"type": "string"},
			"mapping": map[string]any{},
		},
		"additionalProperties": false,
	}
}

// functionSchema is a TOSCA function call: a map of one key, a function's name (those of
// TOSCA and the custom functions the profile's scriptlets declare).
func (g *schemaGen) functionSchema() map[string]any {
	names := toscaFunctions()
	for scriptlet := range g.catalog.Scriptlets {
		if name, ok := strings.CutPrefix(scriptlet, "tosca.function."); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	enum := make([]any, len(names))
	for i, n := range names {
		enum[i] = n
	}
	return map[string]any{"type": "object", "minProperties": 1, "maxProperties": 1, "propertyNames": map[string]any{"enum": enum}}
}

// nodeTemplateRef returns the reference to the schema of a node template of type t,
// defining it the first time.
func (g *schemaGen) nodeTemplateRef(t *Type) string {
	key := "node:" + t.Name
	ref := "#/definitions/" + key
	if _, ok := g.defs[key]; ok {
		return ref
	}
	g.defs[key] = true // reserved while it is built
	c := g.catalog
	props, required := g.propertiesSchema(c.Properties(t))
	properties := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		properties["required"] = required
	}
	template := map[string]any{
		"type":         map[string]any{"const": t.Name},
		"description":  map[string]any{"type": "string"},
		"metadata":     map[string]any{"type": "object"},
		"directives":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"properties":   properties,
		"attributes":   g.namesSchema(attributeNames(c.Attributes(t)), map[string]any{}),
		"requirements": requirementsSchema(requirementNames(c.Requirements(t))),
		"capabilities": g.namesSchema(capabilityNames(c.Capabilities(t)), map[string]any{"type": "object"}),
		"interfaces":   g.namesSchema(interfaceNames(c.Interfaces(t)), map[string]any{"type": "object"}),
		"artifacts":    map[string]any{"type": "object"},
		"node_filter":  map[string]any{"type": "object"},
		"copy":         map[string]any{"type": "string"},
	}
	schema := map[string]any{"type": "object", "properties": template, "additionalProperties": false}
	if t.Description != "" {
		schema["description"] = t.Description
	}
	if len(required) > 0 {
		schema["required"] = []any{"properties"}
	}
	g.defs[key] = schema
	return ref
}

// namesSchema is an object whose keys are names, each value of the given schema.
func (g *schemaGen) namesSchema(names []any, each map[string]any) map[string]any {
	props := map[string]any{}
	for _, n := range names {
		props[n.(string)] = each
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

// requirementsSchema is the list of a node template's requirements, each named by one of
// names.
func requirementsSchema(names []any) map[string]any {
	if len(names) == 0 {
		return map[string]any{"type": "array", "maxItems": 0}
	}
	return map[string]any{"type": "array", "items": map[string]any{
		"type": "object", "minProperties": 1, "maxProperties": 1,
		"propertyNames":        map[string]any{"enum": names},
		"additionalProperties": requirementAssignment(),
	}}
}

// requirementAssignment is a requirement of a node template: a node name or its long form.
func requirementAssignment() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string"},
		map[string]any{"type": "object", "properties": map[string]any{
			"node": map[string]any{"type": "string"}, "capability": map[string]any{"type": "string"},
			"relationship": map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "object"}}},
			"node_filter":  map[string]any{"type": "object"}, "occurrences": map[string]any{"type": "array"},
		}, "additionalProperties": false},
	}}
}

// propertiesSchema returns the schemas of property definitions, and the names of those a
// template must assign (required, without a default).
func (g *schemaGen) propertiesSchema(props []*Property) (map[string]any, []any) {
	schemas := map[string]any{}
	var required []any
	for _, p := range props {
		s := g.valueSchema(p.Type, p.EntrySchema, p.Constraints, 0)
		if p.Description != "" {
			s["description"] = p.Description
		}
		if p.HasDefault {
			s["default"] = p.Default
		}
		schemas[p.Name] = s
		if p.Required && !p.HasDefault {
			required = append(required, p.Name)
		}
	}
	return schemas, required
}

// maxSchemaDepth bounds the nesting of entry schemas a schema follows.
const maxSchemaDepth = 16

// valueSchema returns the schema of a value of a TOSCA type with its entry schema and
// constraints; a function call is always allowed in its place.
func (g *schemaGen) valueSchema(typ string, entry *Schema, constraints []Constraint, depth int) map[string]any {
	literal := g.literalSchema(typ, entry, depth)
	for _, t := range g.dataChain(typ) {
		constraints = append(append([]Constraint(nil), t.Constraints...), constraints...)
	}
	applyConstraints(literal, constraints)
	return map[string]any{"anyOf": []any{literal, map[string]any{"$ref": "#/definitions/function"}}}
}

// dataChain returns the data type named typ and its ancestors; none for primitives.
func (g *schemaGen) dataChain(typ string) []*Type {
	t := g.catalog.Lookup(DataKind, typ)
	if t == nil || t.Origin == OriginTOSCA && isPrimitive(t.Name) {
		return nil
	}
	return g.catalog.Ancestors(t)
}

// literalSchema is the schema of a literal value of a TOSCA type.
func (g *schemaGen) literalSchema(typ string, entry *Schema, depth int) map[string]any {
	if s := primitiveSchema(typ); s != nil {
		return s
	}
	if depth > maxSchemaDepth {
		return map[string]any{}
	}
	switch typ {
	case "list":
		items := map[string]any{}
		if entry != nil {
			items = g.valueSchema(entry.Type, entry.EntrySchema, entry.Constraints, depth+1)
		}
		return map[string]any{"type": "array", "items": items}
	case "map":
		values := map[string]any{}
		if entry != nil {
			values = g.valueSchema(entry.Type, entry.EntrySchema, entry.Constraints, depth+1)
		}
		return map[string]any{"type": "object", "additionalProperties": values}
	}
	t := g.catalog.Lookup(DataKind, typ)
	if t == nil {
		return map[string]any{}
	}
	chain := g.catalog.Ancestors(t)
	if base := chain[len(chain)-1]; base.Name != typ && (isPrimitive(base.Name) || base.Name == "list" || base.Name == "map") {
		if entry == nil {
			for _, a := range chain {
				if a.EntrySchema != nil {
					entry = a.EntrySchema
					break
				}
			}
		}
		return g.literalSchema(base.Name, entry, depth+1)
	}
	return map[string]any{"$ref": g.dataTypeRef(t)}
}

// dataTypeRef returns the reference to the schema of a complex data type, defining it the
// first time.
func (g *schemaGen) dataTypeRef(t *Type) string {
	key := "data:" + t.Name
	ref := "#/definitions/" + key
	if _, ok := g.defs[key]; ok {
		return ref
	}
	g.defs[key] = true
	props, required := g.propertiesSchema(g.catalog.Properties(t))
	schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		schema["required"] = required
	}
	if t.Description != "" {
		schema["description"] = t.Description
	}
	g.defs[key] = schema
	return ref
}

// isPrimitive tells the TOSCA types whose values are scalars.
func isPrimitive(name string) bool {
	return primitiveSchema(name) != nil
}

// primitiveSchema is the schema of a value of a primitive TOSCA type; nil for others.
func primitiveSchema(typ string) map[string]any {
	scalarUnit := func(units string) map[string]any {
		return map[string]any{"type": "string", "pattern": `^\s*[0-9]+(\.[0-9]+)?\s*(` + caseless(units) + `)\s*$`}
	}
	switch typ {
	case "string", "timestamp":
		return map[string]any{"type": "string"}
	case "integer":
		return map[string]any{"type": "integer"}
	case "float":
		return map[string]any{"type": "number"}
	case "boolean":
		return map[string]any{"type": "boolean"}
	case "null":
		return map[string]any{"type": "null"}
	case "version":
		return map[string]any{"type": []any{"string", "number"}}
	case "range":
		bound := map[string]any{"anyOf": []any{map[string]any{"type": "integer"}, map[string]any{"const": "UNBOUNDED"}}}
		return map[string]any{"type": "array", "items": bound, "minItems": 2, "maxItems": 2}
	case "scalar-unit.size":
		return scalarUnit("B|kB|KiB|MB|MiB|GB|GiB|TB|TiB")
	case "scalar-unit.time":
		return scalarUnit("d|h|m|s|ms|us|ns")
	case "scalar-unit.frequency":
		return scalarUnit("Hz|kHz|MHz|GHz")
	case "scalar-unit.bitrate":
		return scalarUnit("bps|Kbps|Kibps|Mbps|Mibps|Gbps|Gibps|Tbps|Tibps")
	}
	return nil
}

// applyConstraints adds the JSON Schema keywords of TOSCA constraint clauses to a schema,
// where the schema's type allows them; the others are left to Calaf's compile.
func applyConstraints(s map[string]any, constraints []Constraint) {
	typ, _ := s["type"].(string)
	numeric := typ == "integer" || typ == "number"
	for _, c := range constraints {
		switch c.Operator {
		case "equal":
			s["const"] = c.Value
		case "valid_values":
			if values, ok := c.Value.([]any); ok {
				s["enum"] = values
			}
		case "greater_than", "greater_or_equal", "less_than", "less_or_equal":
			if numeric && isNumber(c.Value) {
				s[map[string]string{"greater_than": "exclusiveMinimum", "greater_or_equal": "minimum", "less_than": "exclusiveMaximum", "less_or_equal": "maximum"}[c.Operator]] = c.Value
			}
		case "in_range":
			if bounds, ok := c.Value.([]any); ok && len(bounds) == 2 && numeric {
				if isNumber(bounds[0]) {
					s["minimum"] = bounds[0]
				}
				if isNumber(bounds[1]) {
					s["maximum"] = bounds[1]
				}
			}
		case "length", "min_length", "max_length":
			applyLength(s, typ, c)
		case "pattern":
			if p, ok := c.Value.(string); ok && typ == "string" {
				s["pattern"] = p
			}
		}
	}
}

func applyLength(s map[string]any, typ string, c Constraint) {
	if !isNumber(c.Value) {
		return
	}
	prefix := map[string]string{"string": "Length", "array": "Items", "object": "Properties"}[typ]
	if prefix == "" {
		return
	}
	if c.Operator != "max_length" {
		s["min"+prefix] = c.Value
	}
	if c.Operator != "min_length" {
		s["max"+prefix] = c.Value
	}
}

func isNumber(v any) bool {
	switch v.(type) {
	case int, int64, uint64, float64:
		return true
	}
	return false
}

func attributeNames(props []*Property) []any {
	names := make([]any, len(props))
	for i, p := range props {
		names[i] = p.Name
	}
	return names
}

func requirementNames(reqs []*Requirement) []any {
	names := make([]any, len(reqs))
	for i, r := range reqs {
		names[i] = r.Name
	}
	return names
}

func capabilityNames(caps []*Capability) []any {
	names := make([]any, len(caps))
	for i, c := range caps {
		names[i] = c.Name
	}
	return names
}

func interfaceNames(ifaces []*Interface) []any {
	names := make([]any, len(ifaces))
	for i, it := range ifaces {
		names[i] = it.Name
	}
	return names
}

// caseless spells a regular expression's letters in both cases ([kK]), for the dialects
// of JSON Schema (ECMA-262) that have no inline case-insensitive flag.
func caseless(pattern string) string {
	var b strings.Builder
	for _, r := range pattern {
		lower, upper := strings.ToLower(string(r)), strings.ToUpper(string(r))
		if lower == upper {
			b.WriteRune(r)
			continue
		}
		b.WriteString("[" + lower + upper + "]")
	}
	return b.String()
}
