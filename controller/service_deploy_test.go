package controller

import (
	"testing"

	"calaf.io/calaf/render"
)

// A wave is the nodes from the first on whose dependencies are all healthy.
func TestWaveLength(t *testing.T) {
	node := func(name string, deps ...string) *render.Node { return &render.Node{Name: name, DependsOn: deps} }
	account, config := node("account"), node("config")
	app := node("app", "config", "account")
	for _, tc := range []struct {
		name    string
		nodes   []*render.Node
		healthy []string
		want    int
	}{
		{"independent nodes together, up to the first that depends on them", []*render.Node{account, config, app}, nil, 2},
		{"its dependencies healthy: the next wave", []*render.Node{app}, []string{"config", "account"}, 1},
		{"a dependency not healthy: none", []*render.Node{app, node("other")}, []string{"config"}, 0},
		{"a chain: one by one", []*render.Node{node("a"), node("b", "a"), node("c", "b")}, nil, 1},
		{"nothing", nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			healthy := map[string]bool{}
			for _, name := range tc.healthy {
				healthy[name] = true
			}
			if got := waveLength(tc.nodes, healthy); got != tc.want {
				t.Errorf("waveLength = %d, want %d", got, tc.want)
			}
		})
	}
}
