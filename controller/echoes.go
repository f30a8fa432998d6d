package controller

import (
	"strconv"
	"sync"
	"time"

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
	// seen is, by kind (echoKind), the newest resource version the operator's watch of
	// the kind has brought: the cache holds every change up to it.
	seen map[string]uint64
}

type echo struct {
	pending bool
	// applied is the resource version the last apply returned; seen the newest one an
	// event brought while an apply was under way.
	applied, seen uint64
	// at is when the last apply returned.
	at time.Time
}

// lateFor bounds how long after an apply the cache may be taken to be late with it
// (unseen): a watch that broke and listed again may never bring that version's events.
const lateFor = 30 * time.Second

// echoKey identifies an object across kinds.
func echoKey(gvk schema.GroupVersionKind, namespace, name string) string {
	return echoKind(gvk) + "/" + namespace + "/" + name
}

// echoKind identifies a kind, as echoKey begins.
func echoKind(gvk schema.GroupVersionKind) string { return gvk.Group + "/" + gvk.Kind }

// saw records that the watch of a kind brought an object at a resource version.
func (e *echoes) saw(kind, resourceVersion string) {
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		return
	}
	e.lock.Lock()
	defer e.lock.Unlock()
	if e.seen == nil {
		e.seen = map[string]uint64{}
	}
	e.seen[kind] = max(e.seen[kind], rv)
}

// unseen tells whether the cache is behind the operator's last apply of an object, made
// less than lateFor before now: it holds an older version of it (cachedVersion; "" for
// none) while the kind's watch has not brought the version that apply returned yet. Such
// an object is as the apply left it, not gone or changed by someone: a loaded API server
// or operator is late with the event.
func (e *echoes) unseen(kind, key, cachedVersion string, now time.Time) bool {
	cached, _ := strconv.ParseUint(cachedVersion, 10, 64)
	e.lock.Lock()
	defer e.lock.Unlock()
	last := e.m[key]
	return last.applied > cached && e.seen[kind] < last.applied && now.Sub(last.at) < lateFor
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
	e.m[key] = echo{applied: rv, at: time.Now()}
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
// operator's own apply (and older versions), and records how far the kind's watch got.
// The kind comes from the watch: cached typed objects carry none.
func (r *ServiceReconciler) ownedChanges(gvk schema.GroupVersionKind) predicate.Predicate {
	kind := echoKind(gvk)
	key := func(obj client.Object) string { return echoKey(gvk, obj.GetNamespace(), obj.GetName()) }
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			r.echoes.saw(kind, e.Object.GetResourceVersion())
			return !r.echoes.heard(key(e.Object), e.Object.GetResourceVersion())
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil || e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() {
				return false
			}
			r.echoes.saw(kind, e.ObjectNew.GetResourceVersion())
			return !r.echoes.heard(key(e.ObjectNew), e.ObjectNew.GetResourceVersion())
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			r.echoes.saw(kind, e.Object.GetResourceVersion())
			return true
		},
	}
}
