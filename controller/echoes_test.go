package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// The watch event of the operator's own apply, and any older version of the object, do
// not reconcile the Service again; every other change of the object does: someone else's
// edit, its deletion, the same object of another kind or namespace. An event that comes
// while the apply is under way waits for it: a newer version than the apply returned
// makes the apply say it missed a change.
func TestOwnedChangesIgnoreEchoes(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	at := func(namespace, resourceVersion string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "cm", ResourceVersion: resourceVersion}}
	}
	r := &ServiceReconciler{}
	p := r.ownedChanges(gvk)
	key := echoKey(gvk, "ns", "cm")
	r.echoes.begin(key)
	if p.Create(event.CreateEvent{Object: at("ns", "5")}) {
		t.Error("an event during the apply was let through")
	}
	if r.echoes.done(key, "5") {
		t.Error("the apply's own echo counted as a missed change")
	}

	cases := []struct {
		name string
		pass bool
		got  func() bool
	}{
		{"another namespace's object at the applied version", true, func() bool { return p.Create(event.CreateEvent{Object: at("other", "5")}) }},
		{"another kind at the applied version", true, func() bool {
			return r.ownedChanges(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}).Create(event.CreateEvent{Object: at("ns", "5")})
		}},
		{"the created object at the applied version: an echo", false, func() bool { return p.Create(event.CreateEvent{Object: at("ns", "5")}) }},
		{"an update to the applied version", false, func() bool {
			return p.Update(event.UpdateEvent{ObjectOld: at("ns", "4"), ObjectNew: at("ns", "5")})
		}},
		{"an older version", false, func() bool { return p.Create(event.CreateEvent{Object: at("ns", "3")}) }},
		{"a resync (same version)", false, func() bool { return p.Update(event.UpdateEvent{ObjectOld: at("ns", "6"), ObjectNew: at("ns", "6")}) }},
		{"someone else's update", true, func() bool { return p.Update(event.UpdateEvent{ObjectOld: at("ns", "5"), ObjectNew: at("ns", "6")}) }},
		{"deletion", true, func() bool { return p.Delete(event.DeleteEvent{Object: at("ns", "6")}) }},
	}
	for _, c := range cases {
		if got := c.got(); got != c.pass {
			t.Errorf("%s: let through %v, want %v", c.name, got, c.pass)
		}
	}
	r.echoes.begin(key)
	p.Update(event.UpdateEvent{ObjectOld: at("ns", "6"), ObjectNew: at("ns", "9")})
	if !r.echoes.done(key, "8") {
		t.Error("a change newer than the apply's answer, held back during the apply, was not reported missed")
	}
	if !p.Update(event.UpdateEvent{ObjectOld: at("ns", "8"), ObjectNew: at("ns", "10")}) {
		t.Error("a change after the apply was held back")
	}
}

// An object the operator applied is late in the cache while the cache holds an older
// version of it, or none, and the kind's watch has not brought the applied version yet,
// for lateFor at most; once the watch has gone past it, an absent object is gone (deleted
// by someone), not late. Other kinds' watches say nothing of it.
func TestUnseenUntilTheWatchCatchesUp(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	kind, key := echoKind(gvk), echoKey(gvk, "ns", "svc")
	at := func(resourceVersion string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", ResourceVersion: resourceVersion}}
	}
	r := &ServiceReconciler{}
	p := r.ownedChanges(gvk)
	now := time.Now()
	if r.echoes.unseen(kind, key, "", now) {
		t.Error("an object never applied is late in the cache")
	}
	r.echoes.begin(key)
	r.echoes.done(key, "20")
	p.Create(event.CreateEvent{Object: at("12")})
	cases := []struct {
		name, cached string
		want         bool
	}{
		{"not cached, the watch behind the apply", "", true},
		{"an older version cached", "15", true},
		{"the applied version cached", "20", false},
	}
	for _, c := range cases {
		if got := r.echoes.unseen(kind, key, c.cached, now); got != c.want {
			t.Errorf("%s: unseen %v, want %v", c.name, got, c.want)
		}
	}
	r.ownedChanges(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}).Create(event.CreateEvent{Object: at("30")})
	if !r.echoes.unseen(kind, key, "", now) {
		t.Error("another kind's watch counted for this one")
	}
	if r.echoes.unseen(kind, key, "", now.Add(lateFor+time.Second)) {
		t.Error("late in the cache for longer than lateFor after the apply: a watch that listed again may never bring it")
	}
	p.Delete(event.DeleteEvent{Object: at("25")})
	if r.echoes.unseen(kind, key, "", now) {
		t.Error("not cached after the kind's watch went past the apply: late, want gone")
	}
}
