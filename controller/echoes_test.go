package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// The watch event of the operator's own apply does not reconcile the Service again, once;
// every other change of the object does: someone else's edit, a status update, its
// deletion, and the same object of another kind or namespace.
func TestOwnedChangesIgnoreEchoes(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	at := func(namespace, resourceVersion string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "cm", ResourceVersion: resourceVersion}}
	}
	r := &ServiceReconciler{}
	p := r.ownedChanges(gvk)
	r.echoes.expect(echoKey(gvk, "ns", "cm"), "5")

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
		{"an update to the applied version once heard", true, func() bool {
			return p.Update(event.UpdateEvent{ObjectOld: at("ns", "4"), ObjectNew: at("ns", "5")})
		}},
		{"a resync (same version)", false, func() bool { return p.Update(event.UpdateEvent{ObjectOld: at("ns", "6"), ObjectNew: at("ns", "6")}) }},
		{"someone else's update", true, func() bool { return p.Update(event.UpdateEvent{ObjectOld: at("ns", "5"), ObjectNew: at("ns", "6")}) }},
		{"deletion", true, func() bool { return p.Delete(event.DeleteEvent{Object: at("ns", "6")}) }},
	}
	for _, c := range cases {
		if got := c.got(); got != c.pass {
			t.Errorf("%s: let through %v, want %v", c.name, got, c.pass)
		}
	}
	r.echoes.expect(echoKey(gvk, "ns", "cm"), "7")
	if p.Update(event.UpdateEvent{ObjectOld: at("ns", "6"), ObjectNew: at("ns", "7")}) {
		t.Error("the update to the version the operator's apply returned was let through")
	}
}
