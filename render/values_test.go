package render

import (
	"strings"
	"testing"
)

// TestCoerceValuesNotReentrant renders a package whose TOSCA function calls
// clout.coerceValues while the values are being coerced: it gets an error, reported as the
// problem of its value, instead of a recursion that would end the process.
func TestCoerceValuesNotReentrant(t *testing.T) {
	const template = `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:tosca.function.again: "exports.evaluate = function () { clout.coerceValues(); return 'x'; };"
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
    config:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          key: { again: [] }
`
	_, err := renderTemplate(t, template, Options{})
	if err == nil || !strings.Contains(err.Error(), "clout.coerceValues is already running") {
		t.Fatalf("render error %v, want one saying clout.coerceValues is already running", err)
	}
}

// TestLoopsOfValues renders templates whose values read each other: each loop is one
// diagnostic naming the loop from its least value, found at once (not after the call
// stack overflowed), whichever value of it is evaluated first; a chain that is no loop
// evaluates.
func TestLoopsOfValues(t *testing.T) {
	const head = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
`
	for _, c := range []struct {
		name, nodes, want string
	}{
		{"three nodes", `    c:
      type: calaf.nodes.ConfigMap
      properties: { data: { get_property: [ a, data ] } }
    a:
      type: calaf.nodes.ConfigMap
      properties: { data: { get_property: [ b, data ] } }
    b:
      type: calaf.nodes.ConfigMap
      properties: { data: { get_property: [ c, data ] } }
`, `service.yaml:11:21: topology_template.node_templates["a"].properties["data"]: the values read each other in a loop: a.data → b.data → c.data → a.data`},
		{"inside maps", `    a:
      type: calaf.nodes.ConfigMap
      properties: { data: { k: { get_property: [ b, data, k ] } } }
    b:
      type: calaf.nodes.ConfigMap
      properties: { data: { k: { get_property: [ a, data, k ] } } }
`, `service.yaml:8:29: topology_template.node_templates["a"].properties["data"]["k"]: the values read each other in a loop: a.data.k → b.data.k → a.data.k`},
		{"a value that reads itself", `    a:
      type: calaf.nodes.ConfigMap
      properties: { data: { get_property: [ SELF, data ] } }
`, `service.yaml:8:21: topology_template.node_templates["a"].properties["data"]: the values read each other in a loop: a.data → a.data`},
		{"a chain", `    a:
      type: calaf.nodes.ConfigMap
      properties: { data: { get_property: [ b, data ] } }
    b:
      type: calaf.nodes.ConfigMap
      properties: { data: { k: v } }
`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := renderTemplate(t, head+c.nodes, Options{})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("render error\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
