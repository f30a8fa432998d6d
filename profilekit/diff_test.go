package profilekit_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"calaf.io/calaf/profilekit"
)

// TestDiffVerdicts: each kind of change to the example vendor profile, alone, gets the
// severity it deserves, and the verdict follows: a break is a break whatever else changed.
func TestDiffVerdicts(t *testing.T) {
	old := acmeProfile(t, "")
	oldCatalog, err := profilekit.LoadDir(old, profilekit.ProfileEntry, profilekit.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type change struct{ from, to string }
	cases := []struct {
		name     string
		edits    []change
		severity profilekit.Severity
		want     string
	}{
		{"type removed", []change{{"  acme.datatypes.Eviction:\n", "  acme.datatypes.Evicted:\n"}, {"type: acme.datatypes.Eviction", "type: acme.datatypes.Evicted"}},
			profilekit.Breaking, "data type acme.datatypes.Eviction: removed"},
		{"property removed", []change{{"      max_memory:\n        description: Memory the cache may use for entries, as a Kubernetes quantity.\n        type: string\n        default: 64Mi\n", ""}},
			profilekit.Breaking, "property max_memory removed"},
		{"property made required without a default", []change{{"        type: string\n        default: 64Mi\n", "        type: string\n"}},
			profilekit.Breaking, "property max_memory: its default 64Mi was removed, and it is required"},
		{"required property added", []change{{"    attributes:\n      disruptions_allowed:", "      shards:\n        type: integer\n    attributes:\n      disruptions_allowed:"}},
			profilekit.Breaking, "property shards added, required and without a default"},
		{"valid values narrowed", []change{{"valid_values: [ lru, lfu, ttl ]", "valid_values: [ lru, lfu ]"}},
			profilekit.Breaking, "property policy: constraint narrowed: valid_values: [lru, lfu, ttl] → valid_values: [lru, lfu] (no longer valid: ttl)"},
		{"lower bound raised", []change{{"        - greater_or_equal: 0", "        - greater_or_equal: 1"}},
			profilekit.Breaking, "property min_available: constraint narrowed: greater_or_equal: 0 → greater_or_equal: 1"},
		{"constraint added", []change{{"        type: string\n        default: 64Mi\n", "        type: string\n        default: 64Mi\n        constraints:\n        - pattern: '[0-9]+Mi'\n"}},
			profilekit.Breaking, "property max_memory: constraint pattern: '[0-9]+Mi' added"},
		{"property type changed", []change{{"        type: string\n        default: 64Mi", "        type: integer\n        default: 64"}},
			profilekit.Breaking, "property max_memory: type integer instead of string"},
		{"attribute removed", []change{{"    attributes:\n      disruptions_allowed:\n        description: Pods that may be evicted right now, as the disruption budget says.\n        type: integer\n", ""}},
			profilekit.Breaking, "attribute disruptions_allowed removed"},
		{"derived from something else", []change{{"derived_from: calaf.nodes.StatefulSet", "derived_from: calaf.nodes.Deployment"}},
			profilekit.Breaking, "no longer derives from calaf.nodes.StatefulSet"},
		{"mandatory requirement added", []change{{"    attributes:\n      disruptions_allowed:", "    requirements:\n    - backup:\n        capability: calaf.capabilities.Mountable\n    attributes:\n      disruptions_allowed:"}},
			profilekit.Breaking, "requirement backup added, mandatory (at least 1)"},

		{"type added", []change{{"node_types:\n", "node_types:\n\n  acme.nodes.Queue:\n    derived_from: calaf.nodes.Deployment\n"}},
			profilekit.Additive, "node type acme.nodes.Queue: added"},
		{"optional property added", []change{{"    attributes:\n      disruptions_allowed:", "      shards:\n        type: integer\n        default: 1\n    attributes:\n      disruptions_allowed:"}},
			profilekit.Additive, "property shards added (default 1)"},
		{"valid values widened", []change{{"valid_values: [ lru, lfu, ttl ]", "valid_values: [ lru, lfu, ttl, random ]"}},
			profilekit.Additive, "property policy: constraint widened"},
		{"lower bound lowered", []change{{"        - greater_than: 0", "        - greater_than: -1"}},
			profilekit.Additive, "property ttl_seconds: constraint widened: greater_than: 0 → greater_than: -1"},
		{"required no more", []change{{"        type: integer\n        default: 3600", "        type: integer\n        required: false"}},
			profilekit.Note, "property ttl_seconds: its default 3600 was removed"}, // not a break: the property is optional
		{"attribute added", []change{{"    attributes:\n", "    attributes:\n      hit_ratio:\n        type: float\n"}},
			profilekit.Additive, "attribute hit_ratio added"},
		{"capability added", []change{{"    attributes:\n      disruptions_allowed:", "    capabilities:\n      metrics:\n        type: tosca.capabilities.Endpoint\n    attributes:\n      disruptions_allowed:"}},
			profilekit.Additive, "capability metrics added"},
		{"interface added", []change{{"    attributes:\n      disruptions_allowed:", "    interfaces:\n      Backup:\n        type: tosca.interfaces.Root\n    attributes:\n      disruptions_allowed:"}},
			profilekit.Additive, "interface Backup added"},
		{"optional requirement added", []change{{"    attributes:\n      disruptions_allowed:", "    requirements:\n    - backup:\n        capability: calaf.capabilities.Mountable\n        occurrences: [ 0, 1 ]\n    attributes:\n      disruptions_allowed:"}},
			profilekit.Additive, "requirement backup added"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := acmeProfile(t, "")
			for _, e := range c.edits {
				edit(t, filepath.Join(dir, "profile.yaml"), e.from, e.to)
			}
			newCatalog, err := profilekit.LoadDir(dir, profilekit.ProfileEntry, profilekit.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			report := profilekit.Compare(oldCatalog, newCatalog)
			found := false
			var lines []string
			for _, change := range report.Changes {
				lines = append(lines, change.String())
				found = found || change.Severity == c.severity && strings.Contains(change.String(), c.want)
			}
			if !found {
				t.Errorf("no %s change %q among:\n%s", c.severity, c.want, strings.Join(lines, "\n"))
			}
			if wantBreak := c.severity == profilekit.Breaking; report.Breaks() != wantBreak {
				t.Errorf("breaks: %v, want %v (%s):\n%s", report.Breaks(), wantBreak, report.Verdict(), strings.Join(lines, "\n"))
			}
		})
	}
	if report := profilekit.Compare(oldCatalog, oldCatalog); len(report.Changes) != 0 {
		t.Errorf("a profile differs from itself: %v", report.Changes)
	}
}

// TestDiffRenders: a renderer whose output changes on the old version's test cases breaks
// them; one that renders the same does not.
func TestDiffRenders(t *testing.T) {
	old := acmeProfile(t, acmeTests)
	runner := &profilekit.Runner{Render: profilekit.LocalRender()}
	ctx := context.Background()
	tests := filepath.Join(old, "tests")
	oldRun, err := runner.Run(ctx, old, tests)
	if err != nil {
		t.Fatal(err)
	}
	same := acmeProfile(t, "")
	edit(t, filepath.Join(same, "js", "cache.js"), "// The configuration first", "// Still the configuration first")
	sameRun, err := runner.Run(ctx, same, tests)
	if err != nil {
		t.Fatal(err)
	}
	if changes := profilekit.CompareRenders(oldRun, sameRun); len(changes) != 0 {
		t.Errorf("a comment changed the output: %v", changes)
	}
	changed := acmeProfile(t, "")
	edit(t, filepath.Join(changed, "js", "cache.js"), "'max_memory = ' + p.max_memory", "'maxmemory ' + p.max_memory")
	changedRun, err := runner.Run(ctx, changed, tests)
	if err != nil {
		t.Fatal(err)
	}
	changes := profilekit.CompareRenders(oldRun, changedRun)
	if len(changes) != 1 || changes[0].Severity != profilekit.Breaking || !strings.Contains(changes[0].Detail, "\n-    max_memory = 64Mi\n+    maxmemory 64Mi\n") {
		t.Fatalf("want one break showing the changed line, got %+v", changes)
	}
	if !strings.HasPrefix(changes[0].Subject, "test case cache.yaml: a cache with its budget") {
		t.Errorf("the change names %q", changes[0].Subject)
	}
}
