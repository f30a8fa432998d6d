package tosca

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every required input left without a value is reported in one run, in the order the
// template declares them, the same in every run (Puccini alone reports one, at random).
func TestMissingInputsAllAtOnce(t *testing.T) {
	dir := t.TempDir()
	template := `tosca_definitions_version: tosca_simple_yaml_1_3
topology_template:
  inputs:
    zeta: { type: string }
    alpha: { type: integer }
    given: { type: string }
    optional: { type: string, required: false }
    defaulted: { type: string, default: x }
    mid: { type: boolean }
  node_templates:
    n: { type: tosca.nodes.Root }
`
	if err := os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`service.yaml:4:5: topology_template.inputs["zeta"]: unassigned required input definition`,
		`service.yaml:5:5: topology_template.inputs["alpha"]: unassigned required input definition`,
		`service.yaml:9:5: topology_template.inputs["mid"]: unassigned required input definition`,
	}
	for run := 0; run < 5; run++ {
		pkg, err := Open(dir, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewCompiler(1).Compile(context.Background(), pkg, map[string]any{"given": "yes"})
		pkg.Close()
		var got []string
		for _, d := range DiagnosticsOf(err) {
			got = append(got, d.String())
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("run %d:\n%s\nwant\n%s", run, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
