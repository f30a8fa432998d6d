package controller

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"calaf.io/calaf/api/v1alpha1"
)

// echoes remember the resource version each of the operator's own applies returned, so
// that the watch event the apply causes does not reconcile the Service again: the
// reconcile that applied the object already saw it as the apply returned it. Resource
// versions are compared for equality only; what is older is told by the order in which
// the watch brings an object's events: those before the applied version are older, those
// after it newer. While an apply is under way its object's events wait for it; one that
// came after the apply's own version asks for a reconcile when the apply returns.
//
// An object is remembered from its apply until its echo or its deletion comes, or lateFor
// passes (a kind not watched brings neither), or the Service prunes or deletes it: the
// entries are those of recent applies, not of every object ever applied.
type echoes struct {
	lock sync.Mutex
	m    map[string]*echo
	// swept is when entries older than lateFor were last dropped.
	swept time.Time
	// clock tells the time (time.Now when nil).
	clock func() time.Time
}

type echo struct {
	pending bool
	// applied is the resource version the last apply returned.
	applied string
	// during are the versions events brought while the apply was under way, in order;
	// overflow: more came than are kept.
	during   []string
	overflow bool
	// at is when the last apply returned.
	at time.Time
}

// lateFor bounds how long after an apply its echo is waited for, and the cache taken to
// be late with it (unseen): a watch that broke and listed again may never bring that
// version's event.
const lateFor = 30 * time.Second

// maxDuring bounds the versions kept of the events that come during one apply.
const maxDuring = 16

// echoKey identifies an object across kinds.
func echoKey(gvk schema.GroupVersionKind, namespace, name string) string {
	return gvk.Group + "/" + gvk.Kind + "/" + namespace + "/" + name
}

func (e *echoes) now() time.Time {
	if e.clock != nil {
		return e.clock()
	}
	return time.Now()
}

// unseen tells whether the cache is behind the operator's last apply of an object, made
// less than lateFor before now: it holds another version of it (cachedVersion; "" for
// none) while the object's watch has brought neither the version that apply returned nor
// its deletion. Such an object is as the apply left it, not gone or changed by someone: a
// loaded API server or operator is late with the event.
func (e *echoes) unseen(key, cachedVersion string, now time.Time) bool {
	e.lock.Lock()
	defer e.lock.Unlock()
	last, ok := e.m[key]
	return ok && !last.pending && last.applied != cachedVersion && now.Sub(last.at) < lateFor
}

// begin notes that an apply of the object is under way.
func (e *echoes) begin(key string) {
	e.lock.Lock()
	defer e.lock.Unlock()
	if e.m == nil {
		e.m = map[string]*echo{}
	}
	e.m[key] = &echo{pending: true}
}

// done records the resource version an apply returned ("" when it failed); missed tells
// that a change came while the apply was under way that the apply's answer does not
// include: after its own version, or any change when it failed.
func (e *echoes) done(key, resourceVersion string) (missed bool) {
	now := e.now()
	e.lock.Lock()
	defer e.lock.Unlock()
	e.sweep(now)
	cur := e.m[key]
	if cur == nil {
		cur = &echo{}
	}
	if resourceVersion == "" {
		delete(e.m, key)
		return len(cur.during) > 0
	}
	if i := slices.Index(cur.during, resourceVersion); i >= 0 {
		delete(e.m, key) // the echo came during the apply
		return cur.overflow || i < len(cur.during)-1
	}
	e.m[key] = &echo{applied: resourceVersion, at: now}
	return cur.overflow
}

// heard tells whether an event's object is the operator's own apply or came before it:
// not a change the reconcile that applied it did not see. The echo ends the entry.
func (e *echoes) heard(key, resourceVersion string) bool {
	now := e.now()
	e.lock.Lock()
	defer e.lock.Unlock()
	cur, ok := e.m[key]
	switch {
	case !ok:
		return false
	case cur.pending:
		if len(cur.during) < maxDuring {
			cur.during = append(cur.during, resourceVersion)
		} else {
			cur.overflow = true
		}
		return true
	case resourceVersion == cur.applied:
		delete(e.m, key)
		return true
	case now.Sub(cur.at) >= lateFor:
		delete(e.m, key)
		return false
	}
	return true // the watch has not brought the applied version yet: this one is older
}

// deleted records that the watch brought an object's deletion: it is gone, not late.
// A deletion during an apply counts as a change the apply may have missed.
func (e *echoes) deleted(key string) {
	e.lock.Lock()
	defer e.lock.Unlock()
	cur, ok := e.m[key]
	switch {
	case !ok:
	case cur.pending:
		cur.overflow = true
	default:
		delete(e.m, key)
	}
}

// forget drops what is remembered of an object (pruned, or its Service deleted).
func (e *echoes) forget(key string) {
	e.lock.Lock()
	defer e.lock.Unlock()
	delete(e.m, key)
}

// sweep drops, once per lateFor, the entries whose echo did not come within lateFor.
// The caller holds the lock.
func (e *echoes) sweep(now time.Time) {
	if now.Sub(e.swept) < lateFor {
		return
	}
	e.swept = now
	for key, cur := range e.m {
		if !cur.pending && now.Sub(cur.at) >= lateFor {
			delete(e.m, key)
		}
	}
}

// size is how many objects are remembered.
func (e *echoes) size() int {
	e.lock.Lock()
	defer e.lock.Unlock()
	return len(e.m)
}

// forgetObjects drops what the echoes remember of the objects of inventory entries.
func (r *ServiceReconciler) forgetObjects(entries []v1alpha1.InventoryEntry) {
	for _, entry := range entries {
		if obj, err := entryObject(entry); err == nil {
			r.echoes.forget(echoKey(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName()))
		}
	}
}

// ownedChanges lets through every change of an owned object that bumps its resource
// version — deletion, edits by anyone, status progress — except the echo of the
// operator's own apply and the events the watch brings before it. The kind comes from the
// watch: cached typed objects carry none.
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
		DeleteFunc: func(e event.DeleteEvent) bool {
			r.echoes.deleted(key(e.Object))
			return true
		},
	}
}
