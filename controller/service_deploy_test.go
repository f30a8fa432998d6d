package controller

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/api/v1alpha1"
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

// An object's controller has not looked at it yet when its observedGeneration is behind,
// or absent on a workload of apps/v1, whose controller always writes it.
func TestUnobservedGeneration(t *testing.T) {
	object := func(apiVersion, kind string, generation int64, status map[string]any) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
		obj.SetGeneration(generation)
		if status != nil {
			obj.Object["status"] = status
		}
		return obj
	}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"new Deployment", object("apps/v1", "Deployment", 1, nil), true},
		{"Deployment behind", object("apps/v1", "Deployment", 2, map[string]any{"observedGeneration": int64(1)}), true},
		{"Deployment observed", object("apps/v1", "Deployment", 2, map[string]any{"observedGeneration": int64(2)}), false},
		{"new StatefulSet", object("apps/v1", "StatefulSet", 1, map[string]any{}), true},
		{"Job: no observedGeneration to wait for", object("batch/v1", "Job", 1, nil), false},
		{"ConfigMap: no generation", object("v1", "ConfigMap", 0, nil), false},
		{"custom resource behind", object("example.com/v1", "Thing", 3, map[string]any{"observedGeneration": int64(2)}), true},
	} {
		if got := unobservedGeneration(tc.obj); got != tc.want {
			t.Errorf("%s: unobservedGeneration = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A Service's status patch is held once per generation, again while the cache is behind
// the last apply (until maxHold after the first hold), and a Service whose patch was held
// is known as reconciled before (not fresh: its state may be read).
func TestSettledHoldsOncePerGeneration(t *testing.T) {
	var h settled
	start := time.Now()
	svc := &v1alpha1.Service{}
	svc.UID, svc.Generation = "uid-1", 1
	if h.held(svc) {
		t.Fatal("held before any hold")
	}
	if !h.hold(svc, nil, nil, false, start) || !h.held(svc) {
		t.Fatal("the first hold of generation 1 was refused")
	}
	if h.hold(svc, nil, nil, false, start) {
		t.Error("held twice in generation 1")
	}
	if !h.hold(svc, nil, nil, true, start.Add(maxHold-time.Second)) {
		t.Error("not held again while the cache is behind")
	}
	if h.hold(svc, nil, nil, true, start.Add(maxHold)) {
		t.Error("held again past maxHold after the first hold")
	}
	svc.Generation = 2
	if !h.hold(svc, nil, nil, false, start) {
		t.Error("the first hold of generation 2 was refused")
	}
}

// What a held reconcile applied is said by the reconcile that releases its status, once,
// before what that one applied; a Service never held says only its own.
func TestSettledReleasesTheHeldChanges(t *testing.T) {
	var h settled
	start := time.Now()
	svc, other := &v1alpha1.Service{}, &v1alpha1.Service{}
	svc.UID, svc.Generation, other.UID = "uid-1", 1, "uid-2"
	h.hold(svc, nil, []string{"ConfigMap/a created", "Deployment/a created"}, false, start)
	if got := h.release(svc, []string{"Service/a created"}); !slices.Equal(got, []string{"ConfigMap/a created", "Deployment/a created", "Service/a created"}) {
		t.Errorf("first release = %q", got)
	}
	if got := h.release(svc, nil); got != nil {
		t.Errorf("second release = %q, want nothing: said once", got)
	}
	h.hold(svc, nil, []string{"ConfigMap/a configured"}, false, start) // generation 1 again: refused, nothing kept
	svc.Generation = 2
	h.hold(svc, nil, []string{"Deployment/a configured"}, false, start)
	svc.Generation = 3 // a change came before generation 2's patch went out, and is held too
	h.hold(svc, nil, []string{"Service/a configured"}, false, start)
	if got := h.release(svc, nil); !slices.Equal(got, []string{"Deployment/a configured", "Service/a configured"}) {
		t.Errorf("release after two held generations = %q", got)
	}
	if got := h.release(other, []string{"ConfigMap/b configured"}); !slices.Equal(got, []string{"ConfigMap/b configured"}) {
		t.Errorf("release of a Service never held = %q", got)
	}
}

// What a held status patch did not write comes back into every status the next
// reconciles start from, until one says it (the cache caught up with the patch that
// wrote it); after a patch, what it wrote is what is remembered.
func TestSettledRestoresTheHeldInventory(t *testing.T) {
	var h settled
	entry := func(id string) v1alpha1.InventoryEntry { return v1alpha1.InventoryEntry{ID: id, Version: "v1"} }
	ids := func(svc *v1alpha1.Service) (out []string) {
		for _, e := range svc.Status.Inventory {
			out = append(out, e.ID)
		}
		return out
	}
	read := func(inventory ...string) *v1alpha1.Service {
		svc := &v1alpha1.Service{}
		svc.UID, svc.Generation = "uid-1", 1
		for _, id := range inventory {
			svc.Status.Inventory = append(svc.Status.Inventory, entry(id))
		}
		return svc
	}
	both := []string{"ns_a__ConfigMap", "ns_b_apps_Deployment"}
	h.hold(read(), []v1alpha1.InventoryEntry{entry(both[0]), entry(both[1])}, nil, false, time.Now())

	for i := range 2 { // a stale read, twice
		svc := read("ns_a__ConfigMap")
		h.restore(svc)
		if got := ids(svc); !slices.Equal(got, both) {
			t.Fatalf("read %d: restored inventory = %v", i, got)
		}
	}
	pruned := read()
	h.restore(pruned)
	pruned.Status.Inventory = pruned.Status.Inventory[:1] // the Deployment was pruned
	h.remember(pruned)                                    // and the patch written
	stale := read()
	h.restore(stale)
	if !slices.Equal(ids(stale), both[:1]) {
		t.Errorf("after a patch, restored %v, want what it wrote", ids(stale))
	}
	h.restore(read(both[0])) // the cache caught up
	later := read()
	h.restore(later)
	if len(later.Status.Inventory) != 0 {
		t.Errorf("restored %v after a status said it all", ids(later))
	}
	h.forget(read())
	if h.held(read()) {
		t.Error("a forgotten Service is still held")
	}
}
