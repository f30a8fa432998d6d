package tosca

import (
	"reflect"
	"strings"
	"testing"
)

const substitutingTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
topology_template:
  inputs:
    name: { type: string }
    replicas: { type: integer }
  substitution_mappings:
    node_type: example.nodes.Database
    properties:
      size: [ replicas ]
    attributes:
      leader: [ postgres, pod_ip ]
  outputs:
    url: { value: x }
`

// The substituting templates of a package are found with their mappings; an ETSI
// flavour is not one; two templates substituting one type are refused; WithEntry makes
// one the entry, refusing what is not a file of the package.
func TestSubstitutes(t *testing.T) {
	meta := "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: t\nEntry-Definitions: service.yaml\n"
	pkg := openFiles(t, map[string]string{
		"TOSCA-Metadata/TOSCA.meta": meta,
		"service.yaml":              "tosca_definitions_version: tosca_simple_yaml_1_3\ntopology_template: {}\n",
		"db/database.yaml":          substitutingTemplate,
		"flavour.yaml": "tosca_definitions_version: tosca_simple_yaml_1_3\ntopology_template:\n  substitution_mappings:\n" +
			"    node_type: example.VNF\n    properties: { flavour_id: simple }\n",
	})
	subs, err := pkg.Substitutes()
	if err != nil {
		t.Fatal(err)
	}
	want := []Substitute{{File: "db/database.yaml", NodeType: "example.nodes.Database",
		Inputs:         map[string]string{"name": "name", "replicas": "replicas", "size": "replicas"},
		TemplateInputs: []string{"name", "replicas"}, Outputs: []string{"url"},
		Attributes: map[string][2]string{"leader": {"postgres", "pod_ip"}}}}
	if !reflect.DeepEqual(subs, want) {
		t.Errorf("Substitutes = %+v\nwant %+v", subs, want)
	}
	child, err := pkg.WithEntry("db/database.yaml")
	if err != nil || child.Entry != "db/database.yaml" || pkg.Entry != "service.yaml" || child.Digest != pkg.Digest {
		t.Errorf("WithEntry: %+v, %v", child, err)
	}
	if _, err := pkg.WithEntry("../etc/passwd"); err == nil || !strings.Contains(err.Error(), "not a file of the package") {
		t.Errorf("WithEntry of a path outside: %v", err)
	}

	twice := openFiles(t, map[string]string{"TOSCA-Metadata/TOSCA.meta": meta, "service.yaml": "tosca_definitions_version: tosca_simple_yaml_1_3\n",
		"a.yaml": substitutingTemplate, "b.yaml": substitutingTemplate})
	if _, err := twice.Substitutes(); err == nil || !strings.Contains(err.Error(), "substituted twice") {
		t.Errorf("two templates of one type: %v", err)
	}
}
