package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// echoes remember the resource version each of the operator's own applies returned, so
// that the watch event the apply causes does not reconcile the Service again: the
// reconcile that applied the object already saw it as the apply returned it.
type echoes struct {
	m sync.Map // echoKey → resource version
}

// echoKey identifies an object across kinds.
func echoKey(gvk schema.GroupVersionKind, namespace, name string) string {
	return gvk.Group + "/" + gvk.Kind + "/" + namespace + "/" + name
}

// expect records the resource version an apply returned. An entry whose echo came
// before the apply returned stays until the object's next apply replaces it.
func (e *echoes) expect(key, resourceVersion string) {
	e.m.Store(key, resourceVersion)
}

// heard tells whether an event carries the object at the version the operator's own
// apply returned, and forgets that version once heard.
func (e *echoes) heard(key, resourceVersion string) bool {
	return resourceVersion != "" && e.m.CompareAndDelete(key, resourceVersion)
}

// ownedChanges lets through every change of an owned object that bumps its resource
// version — deletion, edits by anyone, status progress — except the echo of the
// operator's own apply. The kind comes from the watch: cached typed objects carry none.
func (r *ServiceReconciler) ownedChanges(gvk schema.GroupVersionKind) predicate.Predicate {
	key := func(obj client.Object) string { return echoKey(gvk, obj.GetNamespace(), obj.GetName()) }
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			return !r.echoes.heard(key(e.Object), e.Object.GetResourceVersion())
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil || e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() {
				return false
			}
			return !r.echoes.heard(key(e.ObjectNew), e.ObjectNew.GetResourceVersion())
		},
	}
}
