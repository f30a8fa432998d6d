package render

import (
	"strings"
	"testing"
)

// thingTemplate is a template of one node whose type renders with the scriptlet renderer.
func thingTemplate(renderer string) string {
	return `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:vendor.render.thing: |-
    ` + renderer + `
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  vendor.nodes.Thing:
    derived_from: calaf.nodes.Root
    metadata:
      calaf.render: vendor.render.thing
topology_template:
  node_templates:
    thing:
      type: vendor.nodes.Thing
`
}

// TestNoObjectsWarning: a package that maps nothing to objects is warned about for what
// it is — renderers that returned no objects, or types without a renderer — and a
// result of the contract with no objects is valid.
func TestNoObjectsWarning(t *testing.T) {
	for _, c := range []struct {
		name, template, want string
	}{
		{"renderers that return no objects", thingTemplate("exports.render = function () { return { objects: [], attributes: {} }; };"),
			"service.yaml: the package validates but maps no node to any Kubernetes object: its renderers (vendor.render.thing) returned none"},
		{"an empty list", thingTemplate("exports.render = function () { return []; };"),
			"service.yaml: the package validates but maps no node to any Kubernetes object: its renderers (vendor.render.thing) returned none"},
		{"no renderer", strings.Replace(thingTemplate(""), "    metadata:\n      calaf.render: vendor.render.thing\n", "", 1),
			"service.yaml: the package validates but maps no node to any Kubernetes object: none of the types of its 1 node templates (vendor.nodes.Thing) has a renderer (calaf.render), and it is no ETSI SOL001 VNF with a deployment flavour (docs/etsi.md)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			result, err := renderTemplate(t, c.template, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var warnings []string
			for _, w := range result.Warnings {
				warnings = append(warnings, w.String())
			}
			if len(warnings) != 1 || warnings[0] != c.want {
				t.Errorf("warnings %q, want %q", warnings, c.want)
			}
		})
	}
}
