package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOfflineCommands runs the offline commands on the examples: their exit codes, and
// that what they print is what they say.
func TestOfflineCommands(t *testing.T) {
	const hello = "../../examples/hello-world"
	const network = "../../examples/network-service"
	cases := []struct {
		name string
		args []string
		code int
		out  []string // substrings of stdout (exit 0) or stderr
	}{
		{"validate", []string{"validate", network}, ExitOK, []string{"valid: Definitions/core.yaml", "9 node templates, 13 objects"}},
		{"validate with inputs", []string{"validate", hello, "-i", "replicas=3", "-i", "message=hi there"}, ExitOK, []string{"valid: service.yaml"}},
		{"input out of range", []string{"validate", hello, "-i", "replicas=11"}, ExitInvalid, []string{`inputs["replicas"]`}},
		{"render yaml", []string{"render", hello, "--service", "hw", "-n", "web"}, ExitOK, []string{"# node: web (calaf.nodes.Deployment)", "name: hw-web", "namespace: web"}},
		{"render -i", []string{"render", hello, "-i", "replicas=4"}, ExitOK, []string{"replicas: 4"}},
		{"graph dot", []string{"graph", network}, ExitOK, []string{`digraph "Definitions/core"`, `"amf" -> "smf"`}},
		{"graph svg", []string{"graph", network, "-o", "svg"}, ExitOK, []string{"<svg", "</svg>"}},
		{"graph html", []string{"graph", network, "-o", "html"}, ExitOK, []string{"<!DOCTYPE html>", "<svg", "<table>"}},
		{"compile", []string{"compile", hello}, ExitOK, []string{"version:", "vertexes:"}},
		{"no source", []string{"validate"}, ExitUsage, []string{"accepts 1 arg"}},
		{"unknown flag", []string{"validate", hello, "--bogus"}, ExitUsage, []string{"unknown flag"}},
		{"unknown output", []string{"render", hello, "-o", "toml"}, ExitUsage, []string{`unknown output format "toml"`}},
		{"input without value", []string{"validate", hello, "-i", "replicas"}, ExitUsage, []string{`input "replicas" is not name=value`}},
		{"missing inputs file", []string{"validate", hello, "--inputs", "/nonexistent/inputs.yaml"}, ExitInvalid, []string{"/nonexistent/inputs.yaml: inputs file: cannot read it: no such file or directory"}},
		{"missing package", []string{"validate", "/nonexistent/package"}, ExitInvalid, []string{"cannot read package"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCalaf(t, caseTimeout, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, stdout, stderr)
			}
			text := stdout
			if c.code != ExitOK {
				text = stderr
			}
			for _, want := range c.out {
				if !strings.Contains(text, want) {
					t.Errorf("output does not say %q:\n%s", want, text)
				}
			}
		})
	}
}

// TestRenderJSON checks that render -o json prints a List of the same objects as YAML.
func TestRenderJSON(t *testing.T) {
	code, stdout, stderr := runCalaf(t, caseTimeout, "render", "../../examples/network-service", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "List" || len(list.Items) != 13 {
		t.Errorf("kind %q with %d items, want a List of 13", list.Kind, len(list.Items))
	}
}
