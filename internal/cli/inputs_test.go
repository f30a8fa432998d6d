package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const typedInputsPackage = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  inputs:
    mcc: { type: string }
    release: { type: version, default: "1.0" }
    replicas: { type: integer, default: 1 }
    debug: { type: boolean, default: false }
  node_templates:
    settings:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          mcc: { get_input: mcc }
          release: { concat: [ { get_input: release } ] }
    app:
      type: calaf.nodes.Deployment
      properties:
        image: busybox:1.36
        replicas: { get_input: replicas }
`

// -i values take the type the template declares, not the one the shell text suggests:
// 208 is a string for a string input, an integer for an integer one, in every command
// that compiles a local package.
func TestInputsTypedByTheTemplate(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(typedInputsPackage), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{"validate", "render", "compile", "graph"} {
		code, stdout, stderr := runCalaf(t, caseTimeout, command, dir, "-i", "mcc=208", "-i", "release=2.10", "-i", "replicas=3", "-i", "debug=true")
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s", command, code, stderr)
		}
		if command == "render" && (!strings.Contains(stdout, `mcc: "208"`) || !strings.Contains(stdout, "replicas: 3") || !strings.Contains(stdout, `release: "2.10"`)) {
			t.Errorf("render: string inputs kept as given (208, 2.10), integers as integers:\n%s", stdout)
		}
	}
	// A value that does not fit an integer input is still refused.
	code, _, stderr := runCalaf(t, caseTimeout, "validate", dir, "-i", "mcc=208", "-i", "replicas=three")
	if code != ExitInvalid || !strings.Contains(stderr, `inputs["replicas"]`) {
		t.Errorf("replicas=three: exit %d, %s", code, stderr)
	}
}
