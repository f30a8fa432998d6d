package controller

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"calaf.io/calaf/api/v1alpha1"
)

// configMapAt is ConfigMap cm of a namespace at a resource version.
func configMapAt(namespace, resourceVersion string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "cm", ResourceVersion: resourceVersion}}
}

// The watch event of the operator's own apply, and the events of the object that come
// before it, do not reconcile the Service again; every other change of the object does:
// someone else's edit after it, its deletion, the same object of another kind or
// namespace. Resource versions are compared for equality only (they need not be numbers,
// nor numbers that grow): what is older is told by the watch's order.
func TestOwnedChangesIgnoreEchoes(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	r := &ServiceReconciler{}
	p := r.ownedChanges(gvk)
	key := echoKey(gvk, "ns", "cm")
	r.echoes.begin(key)
	if r.echoes.done(key, "b7") {
		t.Fatal("an apply no event came during reported a missed change")
	}
	update := func(from, to string) func() bool {
		return func() bool {
			return p.Update(event.UpdateEvent{ObjectOld: configMapAt("ns", from), ObjectNew: configMapAt("ns", to)})
		}
	}
	cases := []struct {
		name string
		pass bool
		got  func() bool
	}{
		{"another namespace's object at the applied version", true, func() bool { return p.Create(event.CreateEvent{Object: configMapAt("other", "b7")}) }},
		{"another kind at the applied version", true, func() bool {
			return r.ownedChanges(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}).Create(event.CreateEvent{Object: configMapAt("ns", "b7")})
		}},
		{"a version the watch brings before the applied one", false, func() bool { return p.Create(event.CreateEvent{Object: configMapAt("ns", "x9")}) }},
		{"the applied version: the echo", false, update("x9", "b7")},
		{"a resync (same version)", false, update("a1", "a1")},
		{"someone else's update after the echo", true, update("b7", "a1")},
		{"deletion", true, func() bool { return p.Delete(event.DeleteEvent{Object: configMapAt("ns", "a2")}) }},
	}
	for _, c := range cases {
		if got := c.got(); got != c.pass {
			t.Errorf("%s: let through %v, want %v", c.name, got, c.pass)
		}
	}

	// Versions that read as numbers are no more ordered than others: a change after the
	// echo whose version is a smaller number is someone else's all the same.
	r.echoes.begin(key)
	r.echoes.done(key, "20")
	if p.Update(event.UpdateEvent{ObjectOld: configMapAt("ns", "19"), ObjectNew: configMapAt("ns", "20")}) {
		t.Error("the echo of version 20 was let through")
	}
	if !p.Update(event.UpdateEvent{ObjectOld: configMapAt("ns", "20"), ObjectNew: configMapAt("ns", "3")}) {
		t.Error("a change after the echo was held back because its version is a smaller number")
	}
}

// An event that comes while the apply is under way waits for it: when the apply's own
// version came among them, what came after it is a change the apply missed; when it did
// not, they all came before it.
func TestEchoesDuringTheApply(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	r := &ServiceReconciler{}
	p := r.ownedChanges(gvk)
	key := echoKey(gvk, "ns", "cm")

	r.echoes.begin(key)
	for _, rv := range []string{"k1", "k2"} {
		if p.Create(event.CreateEvent{Object: configMapAt("ns", rv)}) {
			t.Fatalf("an event during the apply (%s) was let through", rv)
		}
	}
	if !r.echoes.done(key, "k1") {
		t.Error("a change that came after the apply's own version, during the apply, was not reported missed")
	}
	if !p.Update(event.UpdateEvent{ObjectOld: configMapAt("ns", "k2"), ObjectNew: configMapAt("ns", "k3")}) {
		t.Error("a change after the apply was held back")
	}

	r.echoes.begin(key)
	p.Update(event.UpdateEvent{ObjectOld: configMapAt("ns", "k3"), ObjectNew: configMapAt("ns", "k4")})
	if r.echoes.done(key, "k5") {
		t.Error("an event that came before the apply's own version counted as a missed change")
	}
	if p.Update(event.UpdateEvent{ObjectOld: configMapAt("ns", "k4"), ObjectNew: configMapAt("ns", "k5")}) {
		t.Error("the apply's echo, after the apply returned, was let through")
	}

	r.echoes.begin(key)
	p.Create(event.CreateEvent{Object: configMapAt("ns", "k6")})
	if !r.echoes.done(key, "") {
		t.Error("a failed apply during which the object changed did not ask for another reconcile")
	}
}

// An object the operator applied is late in the cache while the cache holds another
// version of it, or none, and its watch has not brought the applied version yet, for
// lateFor at most; once the watch brought it or its deletion, an absent object is gone
// (deleted by someone), not late. Other objects' events say nothing of it.
func TestUnseenUntilTheWatchCatchesUp(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	key := echoKey(gvk, "ns", "svc")
	at := func(name, resourceVersion string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: resourceVersion}}
	}
	now := time.Now()
	r := &ServiceReconciler{}
	r.echoes.clock = func() time.Time { return now }
	p := r.ownedChanges(gvk)
	if r.echoes.unseen(key, "", now) {
		t.Error("an object never applied is late in the cache")
	}
	r.echoes.begin(key)
	r.echoes.done(key, "v-20")
	p.Create(event.CreateEvent{Object: at("other", "v-30")})
	r.ownedChanges(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}).Create(event.CreateEvent{Object: at("svc", "v-31")})
	cases := []struct {
		name, cached string
		want         bool
	}{
		{"not cached, its echo not come", "", true},
		{"another version cached", "v-15", true},
		{"the applied version cached", "v-20", false},
	}
	for _, c := range cases {
		if got := r.echoes.unseen(key, c.cached, now); got != c.want {
			t.Errorf("%s: unseen %v, want %v", c.name, got, c.want)
		}
	}
	if r.echoes.unseen(key, "", now.Add(lateFor)) {
		t.Error("late in the cache lateFor after the apply: a watch that listed again may never bring it")
	}
	p.Delete(event.DeleteEvent{Object: at("svc", "v-25")})
	if r.echoes.unseen(key, "", now) {
		t.Error("not cached after the watch brought its deletion: late, want gone")
	}
}

// The bookkeeping keeps an object only from its apply to its echo (or its deletion, or
// lateFor when neither comes: a kind not watched), and forgets the objects a Service
// prunes or deletes: a long-lived operator keeps no entry per object it ever applied.
func TestEchoesForgotten(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	now := time.Now()
	r := &ServiceReconciler{}
	r.echoes.clock = func() time.Time { return now }
	p := r.ownedChanges(gvk)
	const n = 1000
	for i := range n {
		key := echoKey(gvk, "ns", fmt.Sprintf("cm-%d", i))
		r.echoes.begin(key)
		r.echoes.done(key, fmt.Sprintf("rv-%d", i))
	}
	if got := r.echoes.size(); got != n {
		t.Fatalf("%d entries after %d applies, want %d", got, n, n)
	}
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%d", i), ResourceVersion: fmt.Sprintf("rv-%d", i)}}
		p.Create(event.CreateEvent{Object: cm})
	}
	if got := r.echoes.size(); got != 0 {
		t.Errorf("%d entries kept after every echo came, want none", got)
	}

	// Not watched (lockdown): no echo ever comes.
	for i := range n {
		key := echoKey(gvk, "ns", fmt.Sprintf("unwatched-%d", i))
		r.echoes.begin(key)
		r.echoes.done(key, "rv")
	}
	now = now.Add(lateFor)
	key := echoKey(gvk, "ns", "later")
	r.echoes.begin(key)
	r.echoes.done(key, "rv")
	if got := r.echoes.size(); got != 1 {
		t.Errorf("%d entries kept lateFor after applies whose echo never came, want 1 (the last apply's)", got)
	}

	// Pruned, or the Service deleted: forgotten at once.
	r.echoes.begin(echoKey(gvk, "ns", "pruned"))
	r.echoes.done(echoKey(gvk, "ns", "pruned"), "rv")
	r.forgetObjects([]v1alpha1.InventoryEntry{{ID: "ns_pruned__ConfigMap", Version: "v1"}, {ID: "ns_later__ConfigMap", Version: "v1"}})
	if got := r.echoes.size(); got != 0 {
		t.Errorf("%d entries kept for objects pruned or deleted, want none", got)
	}
}
