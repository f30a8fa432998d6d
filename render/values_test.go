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
