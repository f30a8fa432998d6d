package render

import (
	"testing"
)

// pollutingTemplate has a vendor node, "evil", whose renderer tampers with everything a
// shared JavaScript runtime would share — Object.prototype, Array.prototype, a global, the
// profile's Deployment renderer module, the other nodes' views — before the renderers of
// "web" (a Deployment, rendered after it in name order) and "zprobe" run.
const pollutingTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:evil.render: |-
    exports.render = function (node, ctx) {
      Object.prototype.serviceAccountName = 'cluster-admin-sa';
      Object.prototype.command = ['sh', '-c', 'steal'];
      Array.prototype.push = function () { return 0; };
      globalThis.shared = 'from evil';
      require('calaf.render.deployment').render = function () { return [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'hijacked' } }]; };
      ctx.nodes.web.properties.image = 'evil:latest';
      return [];
    };
  puccini.scriptlet:probe.render: |-
    exports.render = function (node, ctx) {
      let seen = [({}).serviceAccountName, ({}).command, typeof globalThis.shared, ctx.nodes.web.properties.image];
      return [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe' }, data: { seen: JSON.stringify(seen) } }];
    };
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  x.Evil:
    derived_from: calaf.nodes.Root
    metadata:
      calaf.render: evil.render
  x.Probe:
    derived_from: calaf.nodes.Root
    metadata:
      calaf.render: probe.render
topology_template:
  node_templates:
    evil:
      type: x.Evil
    web:
      type: calaf.nodes.Deployment
      properties:
        image: busybox:1.36
    zprobe:
      type: x.Probe
`

// TestRealmPerNode checks that a renderer's changes to its JavaScript realm reach no
// other node: the Deployment of "web" gets no serviceAccountName nor command from a
// polluted Object.prototype, is rendered by the profile's renderer with its own image,
// and "zprobe" sees nothing of what "evil" did.
func TestRealmPerNode(t *testing.T) {
	result, err := renderTemplate(t, pollutingTemplate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*Node{}
	for _, node := range result.Nodes {
		byName[node.Name] = node
	}
	web := byName["web"]
	if len(web.Objects) == 0 || web.Objects[0].GetKind() != "Deployment" {
		t.Fatalf("web rendered %v, want its Deployment", web.Objects)
	}
	deployment := web.Objects[0].Object
	spec := deployment["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	if account, ok := spec["serviceAccountName"]; ok {
		t.Errorf("the Deployment got serviceAccountName %v from another node's scriptlet", account)
	}
	container := spec["containers"].([]any)[0].(map[string]any)
	if command, ok := container["command"]; ok {
		t.Errorf("the Deployment's container got command %v from another node's scriptlet", command)
	}
	if image := container["image"]; image != "busybox:1.36" {
		t.Errorf("the Deployment's image is %v, want busybox:1.36", image)
	}
	probe := byName["zprobe"].Objects[0].Object["data"].(map[string]any)["seen"]
	if want := `[null,null,"undefined","busybox:1.36"]`; probe != want {
		t.Errorf("zprobe saw %v, want %s", probe, want)
	}
}

// viewsTemplate has a probe whose renderer reads the topology every way a renderer can:
// ctx.nodes by name, its keys, "in", a relationship's target, edits of its own copy.
const viewsTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:probe.render: |-
    exports.render = function (node, ctx) {
      let before = Object.keys(ctx.nodes);
      let target = node.relationships[0].target;
      let seen = {
        keys: before,
        has: ['web' in ctx.nodes, 'nosuch' in ctx.nodes],
        missing: typeof ctx.nodes.nosuch,
        proto: typeof ctx.nodes['__proto__'],
        target: [target.name, target.properties.image, target === ctx.nodes.web],
        self: ctx.nodes[node.name].name,
      };
      delete ctx.nodes.web;
      ctx.nodes.extra = { name: 'extra' };
      seen.after = Object.keys(ctx.nodes);
      seen.json = Object.keys(JSON.parse(JSON.stringify(ctx.nodes)));
      return [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: node.name }, data: { seen: JSON.stringify(seen) } }];
    };
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  x.Probe:
    derived_from: calaf.nodes.Root
    metadata:
      calaf.render: probe.render
    requirements:
    - uses: { capability: tosca.capabilities.Node, relationship: tosca.relationships.DependsOn }
topology_template:
  node_templates:
    aprobe:
      type: x.Probe
      requirements:
      - uses: web
    web:
      type: calaf.nodes.Deployment
      properties:
        image: busybox:1.36
    zprobe:
      type: x.Probe
      requirements:
      - uses: web
`

// TestRealmViews checks the views a renderer gets, parsed on demand: every node by name
// and in the keys (sorted), a relationship's target the same view as ctx.nodes has, and a
// renderer's edits of ctx.nodes its own — zprobe, rendered after aprobe, sees web.
func TestRealmViews(t *testing.T) {
	result, err := renderTemplate(t, viewsTemplate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := func(self string) string {
		return `{"keys":["aprobe","web","zprobe"],"has":[true,false],"missing":"undefined","proto":"undefined",` +
			`"target":["web","busybox:1.36",true],"self":"` + self + `","after":["aprobe","zprobe","extra"],"json":["aprobe","zprobe","extra"]}`
	}
	for _, node := range result.Nodes {
		if node.Type != "x.Probe" {
			continue
		}
		if seen := node.Objects[0].Object["data"].(map[string]any)["seen"]; seen != want(node.Name) {
			t.Errorf("%s saw %v\nwant %s", node.Name, seen, want(node.Name))
		}
	}
}

// setterTemplate's renderer puts a setter on Object.prototype for a key its object has,
// one that throws when called, and returns data whose keys include __proto__.
const setterTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:probe.render: |-
    exports.render = function (node, ctx) {
      Object.defineProperty(Object.prototype, 'data', { set: function () { throw 'a setter of Object.prototype saw the data'; }, configurable: true });
      let object = JSON.parse('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}}');
      Object.defineProperty(object, 'data', { value: JSON.parse('{"__proto__": "p", "k": "v"}'), enumerable: true });
      return [object];
    };
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  x.Probe:
    derived_from: calaf.nodes.Root
    metadata:
      calaf.render: probe.render
topology_template:
  node_templates:
    probe:
      type: x.Probe
`

// TestRealmCopiesInheritedKeys checks that what a renderer returns is copied as own
// properties even under the keys the copy inherits: no setter a renderer put on
// Object.prototype sees a value, and a key named __proto__ is data, not a prototype.
func TestRealmCopiesInheritedKeys(t *testing.T) {
	result, err := renderTemplate(t, setterTemplate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Objects) != 1 {
		t.Fatalf("rendered %d objects, want 1", len(result.Objects))
	}
	data, _ := result.Objects[0].Object["data"].(map[string]any)
	if data["__proto__"] != "p" || data["k"] != "v" || len(data) != 2 {
		t.Errorf("data is %v, want __proto__: p and k: v", data)
	}
}
