package tosca

import (
	contextpkg "context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/tliron/go-ard"
	cloutpkg "github.com/tliron/puccini/clout"
)

// A package is usually deployed many times with different inputs (one Service per
// subscriber, per site...). Compiling costs tens of milliseconds, binding inputs to a
// compiled template costs microseconds: Puccini keeps get_input calls as functions, so a
// package compiled once with its default inputs becomes the compile of any other primitive
// inputs by replacing their values in the Clout's input section.
//
// That this holds for a given package is not assumed but checked, once per package: a
// probe compile with every primitive input set to another value must differ from the
// default compile in those input values only. Otherwise, and for inputs that are not plain
// strings, integers, floats or booleans (or values of the wrong type, which Puccini must
// diagnose), Compile falls back to a full compile.

// Template is a package compiled with default inputs, and the inputs bindable onto it. A
// worker process binds onto a Template it was sent once, instead of being sent every
// bound Clout (package worker).
type Template struct {
	// Key identifies the template's Base among Clouts: the package digest's.
	Key  string
	Base *cloutpkg.Clout
	// Required are inputs without a default that the base compile got placeholder values
	// for: a bind must provide them all.
	Required map[string]bool
	Bindable map[string]string // input name → primitive type
	// Provided holds each bindable input's notation metadata as Puccini writes it for a
	// provided value (its validators are located at the input, not at its default).
	Provided map[string]ard.Value
}

// compiledBefore tells whether a package was compiled before (or has a template), and
// records that it is now. A template is made only for a package compiled again: one
// deployed once, as most are where every Service has a package of its own, costs one
// compile, not a probe of three.
func (c *Compiler) compiledBefore(digest string) bool {
	if _, ok := c.templates.Get(digest); ok {
		return true
	}
	_, again := c.compiledOnce.Get(digest)
	c.compiledOnce.Put(digest, struct{}{})
	return again
}

// templateFor returns the template of a package, compiling and probing it on first use;
// nil when the package's inputs cannot be bound.
func (c *Compiler) templateFor(ctx contextpkg.Context, pkg *Package) *Template {
	if t, ok := c.templates.Get(pkg.Digest); ok {
		return t
	}
	t, _, _ := c.flight.Do("template "+pkg.Digest, func() (any, error) {
		if t, ok := c.templates.Get(pkg.Digest); ok {
			return t, nil
		}
		t := c.probe(ctx, pkg)
		c.templates.Put(pkg.Digest, t)
		return t, nil
	})
	return t.(*Template)
}

func (c *Compiler) probe(ctx contextpkg.Context, pkg *Package) *Template {
	placeholders := map[string]any{}
	base, err := c.timedCompile(ctx, pkg, nil, CompileOptions{})
	if err != nil {
		// Required inputs without a default get placeholders of their type.
		if placeholders = requiredPlaceholders(pkg, err); len(placeholders) == 0 {
			return nil
		}
		if base, err = c.timedCompile(ctx, pkg, placeholders, CompileOptions{}); err != nil {
			return nil
		}
	}
	if VNFDOf(base) != nil {
		return nil // the inputs of a SOL001 package feed its flavour, not the Clout
	}
	declared := inputsOf(base)
	probeInputs := map[string]any{}
	types := map[string]string{}
	for name, input := range declared {
		typeName, sentinel, ok := sentinelFor(name, input)
		if !ok {
			continue
		}
		types[name] = typeName
		probeInputs[name] = sentinel
	}
	if len(probeInputs) == 0 {
		return nil
	}
	probed, err := c.timedCompile(ctx, pkg, probeInputs, CompileOptions{})
	if err != nil {
		return nil
	}
	for _, path := range cloutDifferences(base, probed) {
		name, ok := inputPath(path)
		if !ok || types[name] == "" {
			c.Log.V(1).Info("inputs of this package are not bindable", "package", pkg.Entry, "difference", path)
			return nil
		}
	}
	provided := map[string]ard.Value{}
	for name, input := range inputsOf(probed) {
		if notation, ok := input.(ard.StringMap); ok && types[name] != "" {
			provided[name] = notation["$meta"]
		}
	}
	required := map[string]bool{}
	for name := range placeholders {
		required[name] = true
	}
	return &Template{Key: "template " + pkg.Digest, Base: base, Bindable: types, Provided: provided, Required: required}
}

// requiredPlaceholders returns a value for each input a compile reported unassigned, of
// the type the entry template declares; nil if anything else went wrong.
func requiredPlaceholders(pkg *Package, err error) map[string]any {
	doc, readErr := pkg.readYAML(pkg.Entry)
	if readErr != nil {
		return nil
	}
	declared := mappingValue(mappingValue(mappingOf(doc), "topology_template"), "inputs")
	placeholders := map[string]any{}
	for _, d := range DiagnosticsOf(err) {
		if !strings.Contains(d.Message, "unassigned required input") {
			return nil
		}
		name := between(d.Path, `inputs["`, `"]`)
		typeNode := mappingValue(mappingValue(declared, name), "type")
		if name == "" || typeNode == nil {
			return nil
		}
		switch typeNode.Value {
		case "string":
			placeholders[name] = "calaf-placeholder"
		case "integer":
			placeholders[name] = int64(0)
		case "float":
			placeholders[name] = float64(0)
		case "boolean":
			placeholders[name] = false
		default:
			return nil
		}
	}
	return placeholders
}

func between(s, start, end string) string {
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	value, _, _ := strings.Cut(rest, end)
	return value
}

// Bind returns a copy of the template's Clout with inputs bound, or false when they
// cannot be. The copy is the caller's to change.
func (t *Template) Bind(inputs map[string]any) (*cloutpkg.Clout, bool) {
	values, ok := t.bindable(inputs)
	if !ok {
		return nil, false
	}
	clout, err := t.Base.Copy()
	if err != nil {
		return nil, false
	}
	return clout, t.setInputs(inputsOf(clout), values)
}

// BindShared is Bind for a caller that only reads the Clout (a Compiler's cache, whose
// Clouts are shared already): it shares all of the base but the input section, which is
// copied along the path to every input bound (microseconds, and no copy of the
// topology to keep per set of inputs). Nothing may change the Clout in place.
func (t *Template) BindShared(inputs map[string]any) (*cloutpkg.Clout, bool) {
	values, ok := t.bindable(inputs)
	if !ok {
		return nil, false
	}
	properties := maps.Clone(t.Base.Properties)
	toscaSection, ok := properties["tosca"].(ard.StringMap)
	if !ok {
		return nil, false
	}
	toscaSection = maps.Clone(toscaSection)
	properties["tosca"] = toscaSection
	declared, ok := toscaSection["inputs"].(ard.StringMap)
	if !ok {
		return nil, false
	}
	declared = maps.Clone(declared)
	toscaSection["inputs"] = declared
	for name := range values {
		input, ok := declared[name].(ard.StringMap)
		if !ok {
			return nil, false
		}
		declared[name] = maps.Clone(input)
	}
	clout := &cloutpkg.Clout{Version: t.Base.Version, Metadata: t.Base.Metadata, Properties: properties, Vertexes: t.Base.Vertexes}
	return clout, t.setInputs(declared, values)
}

// bindable checks inputs against the template and returns their primitive values.
func (t *Template) bindable(inputs map[string]any) (map[string]any, bool) {
	for name := range t.Required {
		if _, ok := inputs[name]; !ok {
			return nil, false
		}
	}
	values := make(map[string]any, len(inputs))
	for name, value := range inputs {
		typeName, ok := t.Bindable[name]
		if !ok {
			return nil, false
		}
		if values[name], ok = primitiveOf(typeName, toARD(value)); !ok {
			return nil, false
		}
	}
	return values, true
}

// setInputs sets the bound values in a Clout's (copied) input section.
func (t *Template) setInputs(declared ard.StringMap, values map[string]any) bool {
	for name, value := range values {
		input, ok := declared[name].(ard.StringMap)
		if !ok {
			return false
		}
		input["$primitive"] = value
		if meta, ok := t.Provided[name]; ok {
			input["$meta"] = ard.Copy(meta)
		}
	}
	return true
}

// inputsOf returns the input section of a compiled Clout.
func inputsOf(clout *cloutpkg.Clout) ard.StringMap {
	inputs, _ := ard.With(clout.Properties).Get("tosca", "inputs").StringMap()
	return inputs
}

// sentinelFor returns a valid value of a primitive input that differs from its default.
func sentinelFor(name string, input ard.Value) (string, any, bool) {
	notation, ok := input.(ard.StringMap)
	if !ok {
		return "", nil, false
	}
	typeName, _ := ard.With(notation).Get("$meta", "type").String()
	current, hasPrimitive := notation["$primitive"]
	if !hasPrimitive {
		return "", nil, false
	}
	switch typeName {
	case "string":
		return typeName, fmt.Sprintf("calaf-probe-%s-%v", name, current), true
	case "integer":
		n, _ := current.(int64)
		return typeName, n + 424242, true
	case "float":
		f, _ := current.(float64)
		return typeName, f + 0.4242, true
	case "boolean":
		b, _ := current.(bool)
		return typeName, !b, true
	}
	return "", nil, false
}

// primitiveOf checks that a value is of a primitive TOSCA type, normalizing numbers.
func primitiveOf(typeName string, value any) (any, bool) {
	switch typeName {
	case "string":
		s, ok := value.(string)
		return s, ok
	case "boolean":
		b, ok := value.(bool)
		return b, ok
	case "integer":
		switch v := value.(type) {
		case int64:
			return v, true
		case float64:
			if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
				return int64(v), true
			}
		}
	case "float":
		switch v := value.(type) {
		case float64:
			return v, true
		case int64:
			return float64(v), true
		}
	}
	return nil, false
}

// inputPath tells whether a Clout path lies within the notation of an input (its value or
// its metadata), and which input.
func inputPath(path string) (string, bool) {
	const prefix = "properties.tosca.inputs."
	if !strings.HasPrefix(path, prefix) {
		return "", false
	}
	name, rest, _ := strings.Cut(strings.TrimPrefix(path, prefix), ".")
	return name, rest == "$primitive" || strings.HasPrefix(rest, "$meta")
}

// cloutDifferences lists the paths at which two Clouts differ, ignoring what differs
// between any two compiles: vertex IDs (random) and the compile history.
func cloutDifferences(a, b *cloutpkg.Clout) []string {
	var differences []string
	diffValues("", NormalizeClout(a), NormalizeClout(b), &differences)
	sort.Strings(differences)
	return differences
}

// NormalizeClout returns a Clout as plain JSON data with its random vertex IDs replaced by
// stable names ("NodeTemplate:web") and its compile history removed, so that two compiles
// of the same thing compare equal.
func NormalizeClout(clout *cloutpkg.Clout) any {
	data, err := json.Marshal(clout)
	if err != nil {
		return err.Error()
	}
	names := map[string]string{}
	for id, vertex := range clout.Vertexes {
		kind, _ := ard.With(vertex.Metadata).Get("puccini", "kind").String()
		name, _ := vertex.Properties["name"].(string)
		names[id] = kind + ":" + name
	}
	text := string(data)
	ids := make([]string, 0, len(names))
	for id := range names {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return len(ids[i]) > len(ids[j]) })
	for _, id := range ids {
		text = strings.ReplaceAll(text, `"`+id+`"`, `"`+names[id]+`"`)
	}
	var plain map[string]any
	if err := json.Unmarshal([]byte(text), &plain); err != nil {
		return err.Error()
	}
	if metadata, ok := plain["metadata"].(map[string]any); ok {
		delete(metadata, "history")
	}
	sortMapEntries(plain)
	return plain
}

// sortMapEntries orders the entries of every "$map" notation by key: Puccini writes them in
// Go map order, which differs from one compile to the next.
func sortMapEntries(value any) {
	switch v := value.(type) {
	case map[string]any:
		for key, item := range v {
			if entries, ok := item.([]any); ok && key == "$map" {
				sort.SliceStable(entries, func(i, j int) bool {
					return entryKey(entries[i]) < entryKey(entries[j])
				})
			}
			sortMapEntries(item)
		}
	case []any:
		for _, item := range v {
			sortMapEntries(item)
		}
	}
}

func entryKey(entry any) string {
	m, _ := entry.(map[string]any)
	data, _ := json.Marshal(m["$key"])
	return string(data)
}

func diffValues(path string, a, b any, differences *[]string) {
	ma, aIsMap := a.(map[string]any)
	mb, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		keys := map[string]bool{}
		for k := range ma {
			keys[k] = true
		}
		for k := range mb {
			keys[k] = true
		}
		for k := range keys {
			child := k
			if path != "" {
				child = path + "." + k
			}
			diffValues(child, ma[k], mb[k], differences)
		}
		return
	}
	la, aIsList := a.([]any)
	lb, bIsList := b.([]any)
	if aIsList && bIsList && len(la) == len(lb) {
		for i := range la {
			diffValues(fmt.Sprintf("%s[%d]", path, i), la[i], lb[i], differences)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*differences = append(*differences, path)
	}
}
