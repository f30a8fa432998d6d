package render

import (
	"reflect"
	"testing"
)

// orderTemplate uses relationship types derived from each normative one: those derived
// from DependsOn, HostedOn and ConnectsTo order deployment, the others do not.
const orderTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
relationship_types:
  x.RunsOn:
    derived_from: tosca.relationships.HostedOn
  x.Needs:
    derived_from: tosca.relationships.DependsOn
  x.Calls:
    derived_from: tosca.relationships.ConnectsTo
  x.Watches:
    derived_from: tosca.relationships.Root
node_types:
  x.Thing:
    derived_from: calaf.nodes.Root
    capabilities:
      host: tosca.capabilities.Container
      endpoint: tosca.capabilities.Endpoint
    requirements:
    - runs_on: { capability: tosca.capabilities.Container, relationship: x.RunsOn, occurrences: [ 0, 1 ] }
    - needs: { capability: tosca.capabilities.Node, relationship: x.Needs, occurrences: [ 0, UNBOUNDED ] }
    - calls: { capability: tosca.capabilities.Endpoint, relationship: x.Calls, occurrences: [ 0, UNBOUNDED ] }
    - watches: { capability: tosca.capabilities.Node, relationship: x.Watches, occurrences: [ 0, UNBOUNDED ] }
topology_template:
  node_templates:
    app:
      type: x.Thing
      requirements:
      - runs_on: host
      - calls: db
      - watches: zmonitor
    db:
      type: x.Thing
      requirements:
      - needs: disk
    disk:
      type: x.Thing
    host:
      type: x.Thing
      requirements:
      - watches: app
    zmonitor:
      type: x.Thing
      requirements:
      - watches: app
`

func TestDeploymentOrder(t *testing.T) {
	result, err := renderTemplate(t, orderTemplate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dependsOn := map[string][]string{}
	var order []string
	for _, node := range result.Nodes {
		dependsOn[node.Name] = node.DependsOn
		order = append(order, node.Name)
	}
	want := map[string][]string{
		"app":      {"db", "host"}, // HostedOn and ConnectsTo order, Root does not
		"db":       {"disk"},       // DependsOn orders
		"disk":     nil,
		"host":     nil, // watches app: no order, and so no cycle
		"zmonitor": nil,
	}
	if !reflect.DeepEqual(dependsOn, want) {
		t.Errorf("dependsOn %v, want %v", dependsOn, want)
	}
	// Each node after its dependencies, ties by name.
	if wantOrder := []string{"disk", "db", "host", "app", "zmonitor"}; !reflect.DeepEqual(order, wantOrder) {
		t.Errorf("plan order %v, want %v", order, wantOrder)
	}
}
