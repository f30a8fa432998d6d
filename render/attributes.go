package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tliron/go-ard"
	cloutpkg "github.com/tliron/puccini/clout"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/tosca"
)

// setAttributes writes live attribute values into the node templates of a Clout in the
// notation Puccini coerces, keeping each attribute's declared type.
func setAttributes(clout *cloutpkg.Clout, attributes map[string]map[string]any) error {
	if len(attributes) == 0 {
		return nil
	}
	for _, vertex := range clout.Vertexes {
		template := vertex.Properties
		name, _ := template["name"].(string)
		values, ok := attributes[name]
		if !ok || !isNodeTemplate(vertex) {
			continue
		}
		declared, ok := template["attributes"].(ard.StringMap)
		if !ok {
			declared = ard.StringMap{}
			template["attributes"] = declared
		}
		for attribute, value := range values {
			notation := toNotation(value)
			if old, ok := declared[attribute].(ard.StringMap); ok {
				if meta, ok := old["$meta"]; ok {
					notation["$meta"] = meta
				}
			}
			declared[attribute] = notation
		}
	}
	return nil
}

func isNodeTemplate(vertex *cloutpkg.Vertex) bool {
	kind, _ := ard.With(vertex.Metadata).Get("puccini", "kind").String()
	return kind == "NodeTemplate"
}

// toNotation converts a plain value into Puccini's coercible notation.
func toNotation(value any) ard.StringMap {
	switch v := value.(type) {
	case []any:
		list := make(ard.List, len(v))
		for i, item := range v {
			list[i] = toNotation(item)
		}
		return ard.StringMap{"$list": list}
	case map[string]any:
		entries := make(ard.List, 0, len(v))
		for key, item := range v {
			entry := toNotation(item)
			entry["$key"] = ard.StringMap{"$primitive": key}
			entries = append(entries, entry)
		}
		return ard.StringMap{"$map": entries}
	case int:
		return ard.StringMap{"$primitive": int64(v)}
	case float64:
		if v == float64(int64(v)) {
			return ard.StringMap{"$primitive": int64(v)}
		}
	}
	return ard.StringMap{"$primitive": value}
}

var pathSegment = regexp.MustCompile(`^([^\[\]]*)((?:\[[^\[\]]+\])*)$`)
var pathIndex = regexp.MustCompile(`\[([^\[\]]+)\]`)

// MaxAttributeDefaultBytes bounds the default of an attribute mapping, as JSON: the value
// goes into the Service's status when its object has none.
const MaxAttributeDefaultBytes = 16 << 10

// validateAttributes returns what is wrong with a node's attribute mappings: each reads one
// of the objects the node renders itself (reading another object's data would read what
// the node does not own, with the rights of the Service, into its status), by a path of
// dotted names and list indexes, with a default of plain data within
// MaxAttributeDefaultBytes.
func validateAttributes(node *Node) []string {
	own := make([]string, 0, len(node.Objects))
	for _, obj := range node.Objects {
		own = append(own, obj.GetKind()+"/"+obj.GetName())
	}
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(node.Attributes)) {
		source := node.Attributes[name]
		if problem := mappingProblem(source, own); problem != "" {
			problems = append(problems, fmt.Sprintf("attribute %s: %s", tosca.Echo(name), problem))
		}
	}
	return problems
}

// mappingProblem says what is wrong with one attribute mapping ("" when nothing is); own
// are the node's objects as "Kind/name".
func mappingProblem(source AttributeSource, own []string) string {
	if !slices.Contains(own, source.Object) {
		objects := "it renders none"
		if len(own) > 0 {
			objects = "its objects are " + text.Shorten(strings.Join(own, ", "), 2*tosca.MaxEcho)
		}
		return fmt.Sprintf("maps to %s, which is not an object of the node (%s): an attribute is read from an object the node renders itself", tosca.Echo(source.Object), objects)
	}
	for _, path := range source.Paths {
		if !validPath(path) {
			return fmt.Sprintf("path %s is not a dotted path of names and list indexes (status.loadBalancer.ingress[0].ip)", tosca.Echo(path))
		}
	}
	if problem := checkData(source.Default, []string{"default"}, 0); problem != "" {
		return problem
	}
	if data, _ := json.Marshal(source.Default); len(data) > MaxAttributeDefaultBytes {
		return fmt.Sprintf("its default takes %d bytes, more than the limit of %d KiB", len(data), MaxAttributeDefaultBytes>>10)
	}
	return ""
}

// validPath tells whether a path is one lookup follows: dotted names, each with list
// indexes.
func validPath(path string) bool {
	for _, segment := range strings.Split(path, ".") {
		if m := pathSegment.FindStringSubmatch(segment); m == nil || (m[1] == "" && m[2] == "") {
			return false
		}
	}
	return true
}

// Observe reads the live value of every attribute of a node from its objects as they are
// in the cluster (keyed by "Kind/name"). Attributes whose object is missing are omitted.
func (n *Node) Observe(live map[string]*unstructured.Unstructured) map[string]any {
	values := map[string]any{}
	for name, source := range n.Attributes {
		obj, ok := live[source.Object]
		if !ok || obj == nil {
			continue
		}
		value, found := any(nil), false
		for _, path := range source.Paths {
			if value, found = lookup(obj.Object, path); found {
				break
			}
		}
		if !found {
			if source.Default == nil {
				continue
			}
			value = source.Default
		}
		if source.KeyBy != "" {
			value = keyBy(value, source.KeyBy, source.ValueOf)
		}
		values[name] = value
	}
	return values
}

// lookup follows a dotted path with list indexes ("status.loadBalancer.ingress[0].ip")
// or selectors ("status.nodes[name=db].attributes.url").
func lookup(object map[string]any, path string) (any, bool) {
	var current any = object
	for _, segment := range strings.Split(path, ".") {
		m := pathSegment.FindStringSubmatch(segment)
		if m == nil {
			return nil, false
		}
		if m[1] != "" {
			asMap, ok := current.(map[string]any)
			if !ok {
				return nil, false
			}
			if current, ok = asMap[m[1]]; !ok {
				return nil, false
			}
		}
		for _, index := range pathIndex.FindAllStringSubmatch(m[2], -1) {
			list, ok := current.([]any)
			if !ok {
				return nil, false
			}
			if current, ok = listItem(list, index[1]); !ok {
				return nil, false
			}
		}
	}
	return current, current != nil
}

// listItem selects an item of a list: by index ("0"), or the first map whose field has a
// value ("name=db").
func listItem(list []any, selector string) (any, bool) {
	if field, value, ok := strings.Cut(selector, "="); ok {
		for _, item := range list {
			if m, isMap := item.(map[string]any); isMap && fmt.Sprint(m[field]) == value {
				return item, true
			}
		}
		return nil, false
	}
	i, err := strconv.Atoi(selector)
	if err != nil || i < 0 || i >= len(list) {
		return nil, false
	}
	return list[i], true
}

func keyBy(value any, key, field string) any {
	result := map[string]any{}
	list, _ := value.([]any)
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		if v, ok := m[field]; ok {
			result[fmt.Sprint(m[key])] = v
		}
	}
	return result
}

// attributeFreeFunctions are the TOSCA functions that read no attribute: a value that
// calls only these evaluates the same for any live attribute values. Constraints
// (tosca.constraint.*) check the value they are declared on and read nothing else.
// Functions are judged by name: a package that replaces one of these scriptlets with one
// reading attributes gets renders of its own Service that do not follow them.
var attributeFreeFunctions = map[string]bool{
	"tosca.function.get_input":    true,
	"tosca.function.get_property": true,
	"tosca.function.concat":       true,
	"tosca.function.join":         true,
	"tosca.function.token":        true,
}

// mayReadAttributes tells whether evaluating the values of a compiled Clout may read live
// attribute values: whether any value of a vertex, an edge or the Clout itself calls a
// function that is not attribute-free (get_attribute, get_operation_output, a package's
// own function), or an attribute's value is checked by a constraint (a live value that
// fails it fails the render).
func mayReadAttributes(clout *cloutpkg.Clout) bool {
	if readsAttributes(clout.Properties, false, 0) {
		return true
	}
	for _, vertex := range clout.Vertexes {
		if readsAttributes(vertex.Properties, false, 0) {
			return true
		}
		for _, edge := range vertex.EdgesOut {
			if readsAttributes(edge.Properties, false, 0) {
				return true
			}
		}
	}
	return false
}

// readsAttributes walks a Clout value for a function call that may read attributes, or
// any function call in the attributes of a template (inAttributes); a value nested deeper
// than Puccini's notation needs counts as one.
func readsAttributes(value any, inAttributes bool, depth int) bool {
	if depth > 1000 {
		return true
	}
	switch v := value.(type) {
	case ard.StringMap:
		if call, ok := v["$functionCall"]; ok {
			name, _ := ard.With(call).Get("name").String()
			if inAttributes || !(attributeFreeFunctions[name] || strings.HasPrefix(name, "tosca.constraint.")) {
				return true
			}
		}
		for key, item := range v {
			if readsAttributes(item, inAttributes || key == "attributes", depth+1) {
				return true
			}
		}
	case ard.Map:
		for _, item := range v {
			if readsAttributes(item, inAttributes, depth+1) {
				return true
			}
		}
	case ard.List:
		for _, item := range v {
			if readsAttributes(item, inAttributes, depth+1) {
				return true
			}
		}
	}
	return false
}
