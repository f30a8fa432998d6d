package render

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/tliron/go-ard"
	"github.com/tliron/kutil/problems"
	cloutpkg "github.com/tliron/puccini/clout"
	"github.com/tliron/puccini/clout/js"

	"calaf.io/calaf/tosca"
)

// TestResolveMatchesPuccini resolves the requirements of packages with Calaf's indexed
// calaf.resolve and with Puccini's tosca.resolve, each on its own copy of the Clout, and
// wants the same relationships (source, requirement, target, capability, in edge order)
// and the same problems: the cases of testdata/resolve (requirements by node template,
// node type, capability type and name, node and capability filters, occurrences left
// short or full, substitution mappings, unsatisfiable requirements), the examples and the
// ETSI test packages.
func TestResolveMatchesPuccini(t *testing.T) {
	cases := []struct {
		dir, flavour string
		relates      bool // the package has requirements: no relationship would test nothing
	}{
		{"testdata/resolve", "", true},
		{"../examples/hello-world", "", true},
		{"../examples/network-service", "", true},
		{"../examples/vendor-profile", "", true},
		{"../test/etsi/cnf-manifests", "simple", false},
		{"../test/etsi/cnf-manifests", "complex", false},
		{"../test/etsi/cnf-helm", "mciop", true},
		{"../test/etsi/cnf-oscontainer", "standard", true},
		{"../test/etsi/cnf-idioms", "simple", false},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.dir)+"/"+c.flavour, func(t *testing.T) {
			compiled := compileForResolve(t, c.dir, c.flavour)
			ours, ourProblems := resolveWith(t, compiled, resolveScriptlet)
			theirs, theirProblems := resolveWith(t, compiled, "tosca.resolve")
			if c.relates && len(theirs) == 0 {
				t.Fatal("Puccini resolved no relationship: the case tests nothing")
			}
			if !reflect.DeepEqual(ours, theirs) {
				t.Errorf("relationships differ:\ncalaf.resolve: %q\ntosca.resolve: %q", ours, theirs)
			}
			if !reflect.DeepEqual(ourProblems, theirProblems) {
				t.Errorf("problems differ:\ncalaf.resolve: %q\ntosca.resolve: %q", ourProblems, theirProblems)
			}
		})
	}
}

// TestResolveCasesProblems pins what testdata/resolve is there for: each unsatisfiable
// requirement is reported, with the reason that tells its kind.
func TestResolveCasesProblems(t *testing.T) {
	_, probs := resolveWith(t, compileForResolve(t, "testdata/resolve", ""), resolveScriptlet)
	want := []string{
		`could not satisfy "by_node_type" because there are no candidate node templates`,
		`could not satisfy "filtered" because there are no candidate node templates`,
		`could not satisfy "missing" because no candidate node template provides required capability`,
		`could not satisfy "named" because no candidate node template provides required capability`,
		`not enough relationships: 0 < 1`,
	}
	var got []string
	for _, p := range probs {
		for _, w := range want {
			if len(p) >= len(w) && p[len(p)-len(w):] == w {
				got = append(got, w)
			}
		}
	}
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems %q, want to find %q", probs, want)
	}
}

func compileForResolve(t *testing.T, dir, flavour string) *tosca.Compiled {
	t.Helper()
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pkg.Close() })
	compiled, err := tosca.NewCompiler(1).CompileWith(context.Background(), pkg, nil, tosca.CompileOptions{Flavour: flavour})
	if err != nil {
		t.Fatal(err)
	}
	return compiled
}

// resolveWith runs one resolution scriptlet on a copy of the compiled Clout and returns
// its relationships and problems as text.
func resolveWith(t *testing.T, compiled *tosca.Compiled, scriptlet string) (relationships, problemTexts []string) {
	t.Helper()
	clout, problemTexts := runScript(t, compiled, "require('"+scriptlet+"');")
	return cloutRelationships(clout), problemTexts
}

// cloutRelationships lists the relationship edges of every vertex, vertexes by id and
// edges in their order.
func cloutRelationships(clout *cloutpkg.Clout) []string {
	var ids []string
	for id := range clout.Vertexes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var relationships []string
	for _, id := range ids {
		for _, edge := range clout.Vertexes[id].EdgesOut {
			if kind, _ := ard.With(edge.Metadata).Get("puccini", "kind").String(); kind != "Relationship" {
				continue
			}
			relationships = append(relationships, fmt.Sprintf("%v.%v -> %v.%v %v", edge.Source.Properties["name"], edge.Properties["name"],
				edge.Target.Properties["name"], edge.Properties["capability"], typeNames(edge.Properties["types"])))
		}
	}
	return relationships
}

func typeNames(v any) []string {
	var keys []string
	if m, ok := v.(ard.StringMap); ok {
		for k := range m {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// namedLookupTemplate reads properties and attributes of other node templates by name,
// which the driver finds through its index (indexNodeTemplates).
const namedLookupTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
    config:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          image: { get_property: [ web, image ] }
    web:
      type: calaf.nodes.Deployment
      properties:
        image: busybox:1.36
  outputs:
    replicas:
      value: { get_attribute: [ web, ready_replicas ] }
`

// TestNamedNodeTemplateLookup renders functions that name a node template: the values
// found through the driver's index, an attribute by name with its observed value.
func TestNamedNodeTemplateLookup(t *testing.T) {
	opts := Options{Attributes: map[string]map[string]any{"web": {"ready_replicas": int64(3)}}}
	result, err := renderTemplate(t, namedLookupTemplate, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range result.Nodes {
		if node.Name != "config" {
			continue
		}
		data := node.Objects[0].Object["data"].(map[string]any)
		if data["image"] != "busybox:1.36" {
			t.Errorf("config data %v, want image busybox:1.36", data)
		}
	}
	if got := result.Outputs["replicas"]; got != int64(3) {
		t.Errorf("output replicas %v (%T), want 3", got, got)
	}
}

// TestCoerceMatchesPuccini evaluates every value of packages (after Calaf's resolution)
// with Calaf's calaf.values and with Puccini's traversal.coerce, each on its own copy of
// the Clout, and wants the same Clout and the same problems.
func TestCoerceMatchesPuccini(t *testing.T) {
	cases := []struct{ dir, flavour string }{
		{"testdata/resolve", ""},
		{"../examples/hello-world", ""},
		{"../examples/network-service", ""},
		{"../examples/vendor-profile", ""},
		{"../examples/testdata/profile-types", ""},
		{"../test/etsi/cnf-manifests", "complex"},
		{"../test/etsi/cnf-helm", "mciop"},
		{"../test/etsi/cnf-oscontainer", "standard"},
		{"../test/etsi/cnf-idioms", "simple"},
	}
	scripts := map[string]string{
		"calaf":   "require('calaf.resolve'); require('calaf.values').coerce();",
		"puccini": "require('calaf.resolve'); require('tosca.lib.traversal').coerce();",
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.dir)+"/"+c.flavour, func(t *testing.T) {
			compiled := compileForResolve(t, c.dir, c.flavour)
			out := map[string]string{}
			probs := map[string][]string{}
			for name, script := range scripts {
				clout, texts := runScript(t, compiled, script)
				data, err := json.Marshal(clout)
				if err != nil {
					t.Fatal(err)
				}
				out[name], probs[name] = string(data), texts
			}
			if out["calaf"] != out["puccini"] {
				t.Errorf("coerced Clouts differ:\ncalaf.values:       %s\ntraversal.coerce: %s", out["calaf"], out["puccini"])
			}
			if !reflect.DeepEqual(probs["calaf"], probs["puccini"]) {
				t.Errorf("problems differ:\ncalaf.values: %q\ntraversal.coerce: %q", probs["calaf"], probs["puccini"])
			}
		})
	}
}

// runScript runs a script on a copy of the compiled Clout with Calaf's scriptlets and
// returns the copy and the problems reported.
func runScript(t *testing.T, compiled *tosca.Compiled, script string) (*cloutpkg.Clout, []string) {
	t.Helper()
	clout, err := compiled.Clout.Copy()
	if err != nil {
		t.Fatal(err)
	}
	for name, source := range map[string]string{resolveScriptlet: resolveSource, valuesScriptlet: valuesSource, "calaf.test": script} {
		if err := js.SetScriptlet(name, source, clout); err != nil {
			t.Fatal(err)
		}
	}
	probs := problems.NewProblems(nil)
	sandbox := &tosca.Sandbox{Timeout: time.Minute, Log: logr.Discard()}
	if _, err := sandbox.Exec(context.Background(), clout, probs, "calaf.test", ""); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, p := range probs.Slice() {
		texts = append(texts, fmt.Sprintf("%s %s %d:%d %s", p.Section, p.Item, p.Row, p.Column, p.Message))
	}
	if calaf, ok := ard.With(clout.Metadata).Get("puccini", "scriptlets", "calaf").StringMap(); ok {
		delete(calaf, "test")
	}
	return clout, texts
}
