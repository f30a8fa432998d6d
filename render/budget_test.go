package render

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tliron/go-ard"
	cloutpkg "github.com/tliron/puccini/clout"

	"calaf.io/calaf/tosca"
)

// TestBudget checks that a render's budget grows by the timeout for every started 100
// node templates beyond the first 100, up to 30 timeouts, counting node templates only.
func TestBudget(t *testing.T) {
	for _, c := range []struct {
		nodes   int
		timeout time.Duration
		want    time.Duration
	}{
		{0, 2 * time.Second, 2 * time.Second},
		{1, 2 * time.Second, 2 * time.Second},
		{100, 2 * time.Second, 2 * time.Second},
		{101, 2 * time.Second, 4 * time.Second},
		{250, 2 * time.Second, 6 * time.Second},
		{1000, 2 * time.Second, 20 * time.Second},
		{1000, 0, 100 * time.Second},
		{5000, 2 * time.Second, 60 * time.Second}, // capped at 30 timeouts
	} {
		clout := cloutpkg.NewClout()
		for i := range c.nodes {
			clout.NewVertex(fmt.Sprintf("n%d", i)).Metadata["puccini"] = ard.StringMap{"version": "1.0", "kind": "NodeTemplate"}
			clout.NewVertex(fmt.Sprintf("p%d", i)).Metadata["puccini"] = ard.StringMap{"version": "1.0", "kind": "Policy"}
		}
		if got := Budget(&tosca.Compiled{Clout: clout}, c.timeout); got != c.want {
			t.Errorf("%d node templates, timeout %v: budget %v, want %v", c.nodes, c.timeout, got, c.want)
		}
	}
}

// TestRendererTimeoutNamesNode checks that a renderer that never returns is stopped after
// the script timeout, and that the diagnostic names its node: in a package of 400 node
// templates (a budget of 4 timeouts, of which the driver takes a fraction), "aloop" is the
// first node rendered, its 350 neighbours have no renderer.
func TestRendererTimeoutNamesNode(t *testing.T) {
	var b strings.Builder
	b.WriteString(`tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:loop.render: |-
    exports.render = function (node, ctx) { for (;;) {} };
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  x.Loop:
    derived_from: calaf.nodes.Root
    metadata:
      calaf.render: loop.render
topology_template:
  node_templates:
    aloop:
      type: x.Loop
`)
	for i := range 399 {
		fmt.Fprintf(&b, "    n%d:\n      type: calaf.nodes.Root\n", i)
	}
	_, err := renderTemplate(t, b.String(), Options{Timeout: 2 * time.Second})
	want := `node "aloop": its renderer did not finish within 2s: an endless loop in the renderer?`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("render: %v, want %q", err, want)
	}
}
