package render

import (
	"context"
	"strings"
	"testing"
	"time"
)

// attributesTemplate is a package whose vendor node "probe" renders with the renderer
// body given, after a Deployment "web" (PROPERTY stands for web's extra property lines).
const attributesTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:probe.render: |-
    exports.render = function (node, ctx) {
      let seen = (function () { BODY })();
      return [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe' }, data: { seen: String(seen) } }];
    };
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  x.Probe:
    derived_from: calaf.nodes.Root
    metadata:
      calaf.render: probe.render
    attributes:
      phase:
        type: string
topology_template:
  node_templates:
    web:
      type: calaf.nodes.Deployment
      properties:
        image: busybox:1.36
PROPERTY
    probe:
      type: x.Probe
      requirements:
      - dependency: web
`

// constrainedPhase, given as web's property lines, constrains probe's phase attribute
// instead: a live value that fails the constraint fails the render.
const constrainedPhase = "constrained phase"

func attributesPackage(body, property string) string {
	template := strings.NewReplacer("BODY", body).Replace(attributesTemplate)
	if property == constrainedPhase {
		template = strings.Replace(template, "        type: string\n", "        type: string\n        constraints:\n        - valid_values: [ Bound, Lost ]\n", 1)
		property = ""
	}
	return strings.Replace(template, "PROPERTY\n", property+"\n", 1)
}

// TestRenderReadsAttributes: a render says it may have read attributes when the package
// calls get_attribute, or a renderer reads a view's attributes however it reaches them
// (its own node, another node, a relationship, a copy, JSON); otherwise it says not.
func TestRenderReadsAttributes(t *testing.T) {
	const noProperty = ""
	cases := []struct {
		name, body, property string
		want                 bool
	}{
		{"properties only", "return node.properties ? 'p' : ''", noProperty, false},
		{"names of other nodes", "return Object.keys(ctx.nodes).join(',')", noProperty, false},
		{"another node's properties", "return ctx.nodes.web.properties.image", noProperty, false},
		{"its own attributes", "return JSON.stringify(node.attributes)", noProperty, true},
		{"another node's attributes", "return JSON.stringify(ctx.nodes.web.attributes)", noProperty, true},
		{"a relationship's attributes", "return JSON.stringify(node.relationships[0].attributes)", noProperty, true},
		{"its target's attributes", "return JSON.stringify(node.relationships[0].target.attributes)", noProperty, true},
		{"a capability's attributes", "let c = node.capabilities; for (let k in c) return JSON.stringify(c[k].attributes); return ''", noProperty, true},
		{"the whole view as JSON", "return JSON.stringify(node).length", noProperty, true},
		{"a copy of the view", "return Object.assign({}, node).name", noProperty, true},
		{"another node, after replacing defineProperty", "Object.defineProperty = function (o) { return o; }; return JSON.stringify(ctx.nodes.web.attributes)", noProperty, true},
		{"a get_attribute in a property", "return ''", "        env:\n          PHASE: { get_attribute: [ probe, phase ] }", true},
		{"a get_property in a property", "return ''", "        env:\n          IMAGE: { get_property: [ SELF, image ] }", false},
		{"a constraint on an attribute", "return ''", constrainedPhase, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			observed := map[string]map[string]any{"probe": {"phase": "Bound"}}
			result, err := renderTemplate(t, attributesPackage(c.body, c.property), Options{Attributes: observed})
			if err != nil {
				t.Fatal(err)
			}
			if result.ReadsAttributes != c.want {
				t.Errorf("ReadsAttributes = %v, want %v", result.ReadsAttributes, c.want)
			}
		})
	}
}

// TestRenderCacheIgnoresUnreadAttributes: new attribute values render again only a package
// that reads them; one that does not is answered from the cache, also through Cached.
func TestRenderCacheIgnoresUnreadAttributes(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, body string
		renders    int
	}{
		{"reads none", "return node.name", 1},
		{"reads them", "return JSON.stringify(node.attributes)", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			compiled := compileTemplate(t, attributesPackage(c.body, ""))
			renderer := NewRenderer(8)
			renders := 0
			renderer.OnRender = func(time.Duration, error) { renders++ }
			first := Options{Service: "s", Namespace: "n", Attributes: map[string]map[string]any{}} // none recorded yet
			observed := Options{Service: "s", Namespace: "n", Attributes: map[string]map[string]any{"probe": {"phase": "Bound"}}}
			changed := Options{Service: "s", Namespace: "n", Attributes: map[string]map[string]any{"probe": {"phase": "Lost"}}}
			for _, opts := range []Options{first, first, observed, changed, observed} {
				if _, err := renderer.Render(ctx, compiled, opts); err != nil {
					t.Fatal(err)
				}
			}
			if renders != c.renders {
				t.Errorf("%d renders for 5 calls with 3 attribute values, want %d", renders, c.renders)
			}
			if _, ok := renderer.Cached(compiled.Key, Options{Service: "s", Namespace: "n"}); !ok {
				t.Error("Cached without attributes misses the render with an empty map of them")
			}
			other := Options{Service: "s", Namespace: "n", Attributes: map[string]map[string]any{"probe": {"phase": "Pending"}}}
			if _, ok := renderer.Cached(compiled.Key, other); ok != (c.renders == 1) {
				t.Errorf("Cached with unseen attribute values: %v, want %v", ok, c.renders == 1)
			}
		})
	}
}
