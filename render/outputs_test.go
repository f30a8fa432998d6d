package render

import (
	"reflect"
	"testing"
)

const outputDefinitionsTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  inputs:
    password: { type: string, default: pw-default }
    user: { type: string, default: alice }
    tier: { type: string, default: gold }
  node_templates:
    config:
      type: calaf.nodes.ConfigMap
      properties:
        data: { tier: { get_input: tier } }
  outputs:
    url:
      type: string
      metadata: { calaf.io/publish-secret: "true", owner: ops }
      value: { concat: [ "db://", { get_input: user }, ":", { get_input: password }, "@db" ] }
    tier:
      value: { get_property: [ config, data ] }
    constant:
      value: 42
`

// What outputs declare besides their values is read before they are evaluated: the inputs
// their expression reads, however deep (a concat of get_input), and their metadata;
// outputs that declare neither are left out.
func TestOutputDefinitions(t *testing.T) {
	result, err := renderTemplate(t, outputDefinitionsTemplate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]OutputDefinition{
		"url": {Inputs: []string{"password", "user"}, Metadata: map[string]string{MetadataPublishSecret: "true", "owner": "ops"}},
	}
	if !reflect.DeepEqual(result.OutputDefinitions, want) {
		t.Errorf("output definitions %+v, want %+v", result.OutputDefinitions, want)
	}
	if result.Outputs["url"] != "db://alice:pw-default@db" {
		t.Errorf("output url %v", result.Outputs["url"])
	}
}
