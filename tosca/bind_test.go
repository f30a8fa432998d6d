package tosca

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	cloutpkg "github.com/tliron/puccini/clout"
)

// Binding inputs onto a package's template gives exactly the Clout a full compile with
// those inputs gives, for every example and a variety of inputs. The first compile of a
// package is a full one (the first set of each case); the others are bound.
func TestBoundInputsEqualFullCompile(t *testing.T) {
	cases := map[string][]map[string]any{
		"../examples/hello-world": {
			{"replicas": 1},
			{"replicas": 3},
			{"message": "bonjour", "replicas": int64(0), "image": "registry.example/web:2"},
			{"replicas": json.Number("7")},
		},
		"../test/bench/fleet/package": {
			{"app": "a0"},
			{"app": "a1"},
			{"app": "a2", "replicas": 2, "message": "bonjour"},
		},
		"../examples/network-service": {
			{"mcc": "001"},
			{"mcc": "208", "mnc": "93", "amf_replicas": 2},
			{"dnn": "ims", "subscriber_storage": "1Gi", "smf_replicas": 3, "image": "busybox:1.37"},
		},
	}
	for dir, inputSets := range cases {
		pkg, err := Open(dir, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		binder := NewCompiler(16)
		binder.Binding = true
		binds := 0
		binder.OnBind = func() { binds++ }
		for _, inputs := range inputSets {
			bound, err := binder.Compile(context.Background(), pkg, inputs)
			if err != nil {
				t.Fatalf("%s %v: %v", dir, inputs, err)
			}
			full, err := NewCompiler(1).Compile(context.Background(), pkg, inputs)
			if err != nil {
				t.Fatalf("%s %v: %v", dir, inputs, err)
			}
			if diff := cmp.Diff(NormalizeClout(full.Clout), NormalizeClout(bound.Clout)); diff != "" {
				t.Errorf("%s %v: bound Clout differs from a full compile (-full +bound):\n%s", dir, inputs, diff)
			}
		}
		if binds != len(inputSets)-1 {
			t.Errorf("%s: %d of %d compiles after the first were bound; the rest fell back to full compiles", dir, binds, len(inputSets)-1)
		}
	}
}

// Inputs that cannot be bound — undeclared, of the wrong type, a required one missing —
// fall back to a full compile, which reports Puccini's own diagnostics.
func TestUnbindableInputsAreCompiled(t *testing.T) {
	cases := []struct {
		dir    string
		inputs map[string]any
		want   string
	}{
		{"../examples/hello-world", map[string]any{"replicas": "three"}, `"string" instead of "integer"`},
		{"../examples/hello-world", map[string]any{"replicass": 3}, "undeclared input"},
		{"../test/bench/fleet/package", map[string]any{"replicas": 3}, "unassigned required input"},
	}
	for _, tc := range cases {
		pkg, err := Open(tc.dir, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		c := NewCompiler(16)
		c.Binding = true
		c.OnBind = func() { t.Errorf("%s %v: bound inputs that a full compile must check", tc.dir, tc.inputs) }
		_, err = c.Compile(context.Background(), pkg, tc.inputs)
		if err == nil || !IsInvalid(err) {
			t.Fatalf("%v: want an invalid-package error, got %v", tc.inputs, err)
		}
		found := false
		for _, d := range DiagnosticsOf(err) {
			if contains(d.Message, tc.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%v: diagnostics %v do not say %q", tc.inputs, DiagnosticsOf(err), tc.want)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0))
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// Bound makes a compiled package only from what the compiler holds: nothing before the
// package's template exists, then the inputs bound onto it — the same Clout a full
// compile gives — without compiling; inputs it cannot bind are left to a compile. A
// package compiled once costs one compile and has no template yet: the second compile,
// with other inputs, makes it.
func TestBoundNeverCompiles(t *testing.T) {
	pkg, err := Open("../test/bench/fleet/package", DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompiler(16)
	c.Binding = true
	compiles := 0
	c.OnCompile = func(time.Duration, error) { compiles++ }
	if _, ok := c.Bound(pkg, map[string]any{"app": "a1"}, CompileOptions{}); ok || compiles != 0 {
		t.Fatalf("Bound without a template: ok %v, %d compiles", ok, compiles)
	}
	first, err := c.Compile(context.Background(), pkg, map[string]any{"app": "a1"})
	if err != nil || compiles != 1 {
		t.Fatalf("the first compile of a package: %v, %d compiles (want 1)", err, compiles)
	}
	if _, ok := c.Bound(pkg, map[string]any{"app": "a2", "replicas": 2}, CompileOptions{}); ok {
		t.Fatal("Bound after one compile of the package: there is no template yet")
	}
	second, err := c.Compile(context.Background(), pkg, map[string]any{"app": "a0"})
	if err != nil {
		t.Fatal(err)
	}
	compiles = 0
	bound, ok := c.Bound(pkg, map[string]any{"app": "a2", "replicas": 2}, CompileOptions{})
	if !ok || compiles != 0 {
		t.Fatalf("Bound with the template made: ok %v, %d compiles", ok, compiles)
	}
	full, err := NewCompiler(1).Compile(context.Background(), pkg, map[string]any{"app": "a2", "replicas": 2})
	if err != nil {
		t.Fatal(err)
	}
	isBound := func(c *Compiled) bool { return c.Template != nil }
	if isBound(first) || !isBound(second) || !isBound(bound) || isBound(full) {
		t.Errorf("bound onto a template: first %v (a full compile), second %v, bound %v, full %v (a compiler without binding)", isBound(first), isBound(second), isBound(bound), isBound(full))
	}
	if diff := cmp.Diff(NormalizeClout(full.Clout), NormalizeClout(bound.Clout)); diff != "" {
		t.Errorf("bound Clout differs from a full compile (-full +bound):\n%s", diff)
	}
	if _, ok := c.Bound(pkg, map[string]any{"app": "a3", "undeclared": "x"}, CompileOptions{}); ok || compiles != 0 {
		t.Errorf("Bound with an undeclared input: ok %v, %d compiles", ok, compiles)
	}
}

// BindShared gives the Clout Bind gives, sharing the template's topology and leaving the
// template and every Clout bound before it as they were.
func TestBindSharedLeavesOthersAlone(t *testing.T) {
	pkg, err := Open("../examples/hello-world", DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompiler(16)
	c.Binding = true
	for _, inputs := range []map[string]any{{"replicas": 1}, {"replicas": 2}} {
		if _, err := c.Compile(context.Background(), pkg, inputs); err != nil {
			t.Fatal(err)
		}
	}
	template := c.templateFor(context.Background(), pkg)
	if template == nil {
		t.Fatal("hello-world has no template")
	}
	base := NormalizeClout(template.Base)
	sets := []map[string]any{{"replicas": 3}, {"replicas": 4, "message": "bonjour"}, {"message": "hallo"}}
	var shared []*cloutpkg.Clout
	for _, inputs := range sets {
		clout, ok := template.BindShared(inputs)
		if !ok {
			t.Fatalf("%v do not bind", inputs)
		}
		shared = append(shared, clout)
	}
	for i, inputs := range sets {
		copied, ok := template.Bind(inputs)
		if !ok {
			t.Fatalf("%v do not bind", inputs)
		}
		if diff := cmp.Diff(NormalizeClout(copied), NormalizeClout(shared[i])); diff != "" {
			t.Errorf("%v: BindShared differs from Bind (-Bind +BindShared):\n%s", inputs, diff)
		}
		if reflect.ValueOf(shared[i].Vertexes).Pointer() != reflect.ValueOf(template.Base.Vertexes).Pointer() {
			t.Errorf("%v: the topology was copied, not shared", inputs)
		}
	}
	if diff := cmp.Diff(base, NormalizeClout(template.Base)); diff != "" {
		t.Errorf("binding changed the template's base:\n%s", diff)
	}
}
