package render

import (
	"maps"
	"slices"

	"github.com/tliron/go-ard"
	cloutpkg "github.com/tliron/puccini/clout"
)

// driverAPI is the "calafDriver" global of the driver (driver.js): walks over the Clout's
// Go maps, which JavaScript pays for by wrapping every map it passes through. Each takes
// what a scriptlet may hand it as well and ignores what is not a map.
type driverAPI struct {
	// blocking tells whether the problems reported so far stop the run: those that are not
	// idioms the compile tolerates (tosca.TolerateValues).
	blocking func() bool
}

// Blocked tells whether the problems reported so far stop the driver's run.
func (d driverAPI) Blocked() bool {
	return d.blocking != nil && d.blocking()
}

// TypeChain returns a type hierarchy (types by name, each naming its parent) as names,
// most derived first. Of several types that are nobody's parent, the last by name is the
// leaf.
func (driverAPI) TypeChain(types map[string]any) []any {
	parents := map[string]bool{}
	for _, t := range types {
		if parent, _ := asMap(t)["parent"].(string); parent != "" {
			parents[parent] = true
		}
	}
	leaf := ""
	for name := range types {
		if !parents[name] && name > leaf {
			leaf = name
		}
	}
	var chain []any
	seen := map[string]bool{}
	for leaf != "" && types[leaf] != nil && !seen[leaf] {
		seen[leaf] = true
		chain = append(chain, leaf)
		leaf, _ = asMap(types[leaf])["parent"].(string)
	}
	return chain
}

// TypeMetadata merges the metadata of a type chain (TypeChain's), the most derived type
// winning.
func (driverAPI) TypeMetadata(types map[string]any, chain []any) map[string]any {
	metadata := map[string]any{}
	for i := len(chain) - 1; i >= 0; i-- {
		name, _ := chain[i].(string)
		for key, value := range asMap(asMap(types[name])["metadata"]) {
			metadata[key] = value
		}
	}
	return metadata
}

// ImplementedOperations lists the operations of a node's interfaces that have an
// implementation, as [interface, operation] name pairs in name order.
func (driverAPI) ImplementedOperations(interfaces map[string]any) []any {
	var implemented []any
	for _, interfaceName := range slices.Sorted(maps.Keys(interfaces)) {
		operations := asMap(asMap(interfaces[interfaceName])["operations"])
		for _, operationName := range slices.Sorted(maps.Keys(operations)) {
			if implementation := asMap(operations[operationName])["implementation"]; implementation != nil && implementation != "" {
				implemented = append(implemented, []any{interfaceName, operationName})
			}
		}
	}
	return implemented
}

// DetachOperationInputs takes the inputs of every interface and operation out of the node
// templates, so that coercing the Clout does not evaluate them: they are evaluated when
// the operation runs, once the attributes they read have been observed. It returns them by
// node template name: {vertex, interfaces: {name: {inputs, operations: {name: inputs}}}}.
func (driverAPI) DetachOperationInputs(vertexes cloutpkg.Vertexes) map[string]any {
	detached := map[string]any{}
	for _, vertex := range vertexes {
		if !isNodeTemplate(vertex) {
			continue
		}
		byInterface := map[string]any{}
		for interfaceName, value := range asMap(vertex.Properties["interfaces"]) {
			interface_, ok := value.(map[string]any)
			if !ok {
				continue
			}
			operations := map[string]any{}
			for operationName, value := range asMap(interface_["operations"]) {
				operation, ok := value.(map[string]any)
				if !ok {
					continue
				}
				operations[operationName] = orEmpty(operation["inputs"])
				operation["inputs"] = ard.StringMap{}
			}
			byInterface[interfaceName] = map[string]any{"inputs": orEmpty(interface_["inputs"]), "operations": operations}
			interface_["inputs"] = ard.StringMap{}
		}
		name, _ := vertex.Properties["name"].(string)
		detached[name] = map[string]any{"vertex": vertex, "interfaces": byInterface}
	}
	return detached
}

// orEmpty is value, or an empty map for nothing (JavaScript's value || {}).
func orEmpty(value any) any {
	if value == nil || value == false || value == "" {
		return ard.StringMap{}
	}
	return value
}
