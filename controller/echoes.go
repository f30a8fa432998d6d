package controller

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// echoes remember the resource version each of the operator's own applies returned, so
// that the watch event the apply causes does not reconcile the Service again: the
// reconcile that applied the object already saw it as the apply returned it. While an
// apply is under way its object's events wait for it: those older than what it returns
// are its own or stale; a newer one (someone else's change meanwhile) asks for a
// reconcile when the apply returns. One entry per object applied is kept.
type echoes struct {
	lock sync.Mutex
	m    map[string]echo
}

type echo struct {
	pending bool
	// applied is the resource version the last apply returned; seen the newest one an
	// event brought while an apply was under way.
	applied, seen uint64
}

// echoKey identifies an object across kinds.
func echoKey(gvk schema.GroupVersionKind, namespace, name string) string {
	return gvk.Group + "/" + gvk.Kind + "/" + namespace + "/" + name
}

// begin notes that an apply of the object is under way.
func (e *echoes) begin(key string) {
	e.lock.Lock()
	defer e.lock.Unlock()
	if e.m == nil {
		e.m = map[string]echo{}
	}
	e.m[key] = echo{pending: true, applied: e.m[key].applied}
}

// done records the resource version an apply returned ("" when it failed); missed tells
// that an event newer than it came while the apply was under way.
func (e *echoes) done(key, resourceVersion string) (missed bool) {
	e.lock.Lock()
	defer e.lock.Unlock()
	cur := e.m[key]
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		delete(e.m, key)
		return cur.seen > 0
	}
	e.m[key] = echo{applied: rv}
	return cur.seen > rv
}

// heard tells whether an event's object is the operator's own apply or older: not a
// change the reconcile that applied it did not see.
func (e *echoes) heard(key, resourceVersion string) bool {
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	e.lock.Lock()
	defer e.lock.Unlock()
	cur, ok := e.m[key]
	if !ok || err != nil {
		return false
	}
	if cur.pending {
		cur.seen = max(cur.seen, rv)
		e.m[key] = cur
		return true
	}
	return rv <= cur.applied
}

// ownedChanges lets through every change of an owned object that bumps its resource
// version — deletion, edits by anyone, status progress — except the echo of the
// operator's own apply (and older versions). The kind comes from the watch: cached typed objects carry none.
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
