package render

import (
	"reflect"
	"testing"
)

// TestDriverTypeChain orders type hierarchies as the driver's views show them, and ends on
// what a scriptlet may hand it: a cycle, a parent that is missing, values that are no maps.
func TestDriverTypeChain(t *testing.T) {
	cases := []struct {
		name  string
		types map[string]any
		want  []any
	}{
		{"chain", map[string]any{
			"tosca.nodes.Root":       map[string]any{},
			"calaf.nodes.Workload":   map[string]any{"parent": "tosca.nodes.Root"},
			"calaf.nodes.Deployment": map[string]any{"parent": "calaf.nodes.Workload"},
		}, []any{"calaf.nodes.Deployment", "calaf.nodes.Workload", "tosca.nodes.Root"}},
		{"two leaves: the last by name", map[string]any{
			"root": map[string]any{}, "a": map[string]any{"parent": "root"}, "b": map[string]any{"parent": "root"},
		}, []any{"b", "root"}},
		{"missing parent", map[string]any{"x": map[string]any{"parent": "gone"}}, []any{"x"}},
		{"cycle", map[string]any{"leaf": map[string]any{"parent": "a"}, "a": map[string]any{"parent": "b"}, "b": map[string]any{"parent": "a"}}, []any{"leaf", "a", "b"}},
		{"no maps", map[string]any{"x": "y", "z": 3}, []any{"z"}},
		{"empty", map[string]any{}, nil},
	}
	for _, c := range cases {
		if got := (driverAPI{}).TypeChain(c.types); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDriverOperations lists the implemented operations in name order, and detaches the
// inputs of interfaces and operations from their node templates.
func TestDriverOperations(t *testing.T) {
	compiled := compileTemplate(t, `tosca_definitions_version: tosca_simple_yaml_1_3
topology_template:
  node_templates:
    web:
      type: tosca.nodes.Root
      interfaces:
        Standard:
          inputs: { shared: 1 }
          operations:
            start: { implementation: start.js, inputs: { mode: fast } }
            create: { implementation: create.js }
`)
	vertexes := compiled.Clout.Vertexes
	for _, vertex := range vertexes {
		got := (driverAPI{}).ImplementedOperations(asMap(vertex.Properties["interfaces"]))
		want := []any{[]any{"Standard", "create"}, []any{"Standard", "start"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("implemented operations %v, want %v", got, want)
		}
	}
	detached := (driverAPI{}).DetachOperationInputs(vertexes)
	standard := asMap(asMap(asMap(detached["web"])["interfaces"])["Standard"])
	if inputs := asMap(standard["inputs"]); len(inputs) != 1 || inputs["shared"] == nil {
		t.Errorf("detached interface inputs %v, want shared", inputs)
	}
	if inputs := asMap(asMap(standard["operations"])["start"]); len(inputs) != 1 || inputs["mode"] == nil {
		t.Errorf("detached start inputs %v, want mode", inputs)
	}
	for _, vertex := range vertexes {
		standard := asMap(asMap(vertex.Properties["interfaces"])["Standard"])
		if len(asMap(standard["inputs"])) != 0 || len(asMap(asMap(asMap(standard["operations"])["start"])["inputs"])) != 0 {
			t.Errorf("the node template keeps inputs after they were detached: %v", standard)
		}
	}
}
