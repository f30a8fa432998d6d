package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluxcd/pkg/ssa"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// fieldManager is the server-side apply field manager of the operator.
const fieldManager = "calaf"

// fingerprints remember, per object, what was last applied and the live state of the
// operator's own fields (its managedFields entry) that was verified to match it. An object
// whose desired content and verified live fields did not change is not applied again: a
// no-op reconcile sends no write request, not even a dry-run.
type fingerprints struct {
	lock sync.Mutex
	m    map[string]fingerprint
}

type fingerprint struct {
	desired string
	live    string
}

// token is the short form of a verified fingerprint kept in the Service's inventory (empty
// while the live fields are not verified): what a restarted operator compares with.
func (fp fingerprint) token() string {
	if fp.desired == "" || fp.live == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(fp.desired + "/" + fp.live))
	return hex.EncodeToString(sum[:8])
}

// recall returns the fingerprint of an object: the one in memory, else the one the
// inventory recorded (after a restart) when it still matches the desired and live object.
func (f *fingerprints) recall(key string, recorded string, desired, live string) fingerprint {
	if fp := f.get(key); fp.desired != "" {
		return fp
	}
	fp := fingerprint{desired: desired, live: live}
	if recorded == "" || fp.token() != recorded {
		return fingerprint{}
	}
	f.set(key, fp)
	return fp
}

func (f *fingerprints) get(key string) fingerprint {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.m[key]
}

func (f *fingerprints) set(key string, fp fingerprint) {
	f.lock.Lock()
	defer f.lock.Unlock()
	if f.m == nil {
		f.m = map[string]fingerprint{}
	}
	f.m[key] = fp
}

func (f *fingerprints) forget(prefix string) {
	f.lock.Lock()
	defer f.lock.Unlock()
	for key := range f.m {
		if len(key) >= len(prefix) && key[:len(prefix)] == prefix {
			delete(f.m, key)
		}
	}
}

// desiredHash identifies the content of an object to apply.
func desiredHash(obj *unstructured.Unstructured) string {
	data, _ := json.Marshal(obj.Object)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// CachedFieldsAnnotation holds, on objects in the operator's cache only, the hash of the
// operator's managedFields entry, which the cache keeps instead of the entry itself.
const CachedFieldsAnnotation = "calaf.io/cached-fields-hash"

// liveHash identifies a live object by its UID and the operator's managedFields entry:
// it changes when the object is recreated, or when anyone else takes over (edits) a field
// the operator set; status updates and other managers' own fields leave it alone.
func liveHash(obj *unstructured.Unstructured) string {
	if hash, ok := obj.GetAnnotations()[CachedFieldsAnnotation]; ok {
		return hash
	}
	return FieldsHash(obj)
}

// FieldsHash computes liveHash from an object's managed fields.
func FieldsHash(obj metav1.Object) string {
	h := sha256.New()
	h.Write([]byte(obj.GetUID()))
	found := false
	for _, entry := range obj.GetManagedFields() {
		if entry.Manager != fieldManager || entry.Subresource != "" {
			continue
		}
		found = true
		h.Write([]byte(entry.APIVersion))
		h.Write([]byte(entry.Operation))
		if entry.FieldsV1 != nil {
			h.Write(entry.FieldsV1.Raw)
		}
	}
	if !found {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// applyResult counts what an apply changed, and the objects as the API server returned
// them from the apply (fresher than the cache right after a change).
type applyResult struct {
	created, configured, unchanged int
	changes                        []string
	applied                        map[string]*unstructured.Unstructured
	// read are the objects ("Kind/name") as the cache held them before the apply (nil:
	// absent), but those applied in stages: observing them needs no second read.
	read map[string]*unstructured.Unstructured
	// unseen are the objects ("Kind/name") as this process's last apply left them that
	// the cache has not caught up with yet: neither applied again nor observed.
	unseen map[string]bool
	// done are the objects now as desired (applied or unchanged), by object ID.
	done map[string]bool
	// missed: someone else changed an applied object while it was applied (its watch
	// event was held back as a possible echo): the Service needs another reconcile.
	missed atomic.Bool
}

// absentVersion is the resource version a create-only apply carries: no object has it
// (etcd revisions stay far below), so the API server creates an absent object and
// answers 409 Conflict when one of that name exists, instead of applying over it.
const absentVersion = "9223372036854775807"

// applyObjects applies the objects whose desired content or live fields changed since
// they were last applied and verified; the others cost nothing. Namespaced objects are
// applied with one server-side apply request each, all of them at once; cluster-scoped
// ones, CRDs and forced recreations go through fluxcd/pkg/ssa's staged apply (CRDs and
// namespaces first). An object the inventory does not record is never taken over from
// someone else (refused with a stalled error): one the cache does not hold is applied
// create-only and read only when the API server says it exists.
func (r *ServiceReconciler) applyObjects(ctx context.Context, a *access, svc *v1alpha1.Service, inv inventoryIndex, objects []*unstructured.Unstructured) (*applyResult, error) {
	svcKey, force := string(svc.UID), svc.Spec.Force
	result := &applyResult{applied: map[string]*unstructured.Unstructured{}, read: map[string]*unstructured.Unstructured{}, unseen: map[string]bool{}, done: map[string]bool{}}
	var staged, unknownStaged []*unstructured.Unstructured
	var direct directApply
	hashes := map[string]string{}
	liveHashes := map[string]string{}
	for _, obj := range objects {
		id := render.ObjectID(obj)
		desired := desiredHash(obj)
		hashes[id] = desired
		live, err := r.getLive(ctx, a.cached, obj)
		if err != nil {
			return result, err
		}
		if !inv.known[id] && live != nil && !ownedBy(live, svc) {
			return result, takeOverRefused(obj, live)
		}
		if a.account == "" && a.watchedByOperator() && r.lateInCache(obj, live, svcKey+"/"+id, desired) {
			// As this process's last apply left it: not applied again, not observed yet.
			result.unseen[obj.GetKind()+"/"+obj.GetName()], result.done[id] = true, true
			result.unchanged++
			continue
		}
		if live != nil {
			liveHashes[id] = liveHash(live)
			fp := r.fingerprints.recall(svcKey+"/"+id, inv.tokens[id], desired, liveHashes[id])
			if fp.desired == desired && fp.live != "" && fp.live == liveHashes[id] {
				result.unchanged++
				result.done[id] = true
				result.read[obj.GetKind()+"/"+obj.GetName()] = live
				continue
			}
		}
		if log := ctrl.LoggerFrom(ctx).V(1); inv.known[id] && log.Enabled() {
			log.Info("applying a recorded object again", "object", id, "absent", live == nil,
				"desiredChanged", r.fingerprints.get(svcKey+"/"+id).desired != desired)
		}
		if force || obj.GetNamespace() == "" || isStagedKind(obj) {
			staged = append(staged, obj.DeepCopy())
			if !inv.known[id] && live == nil {
				unknownStaged = append(unknownStaged, obj)
			}
			continue
		}
		direct.add(obj, live, !inv.known[id] && live == nil)
		result.read[obj.GetKind()+"/"+obj.GetName()] = live
	}
	if err := r.checkOwnership(ctx, a.direct, svc, unknownStaged); err != nil {
		return result, err
	}
	if err := r.applyDirect(ctx, a, svc, hashes, &direct, result); err != nil {
		return result, err
	}
	if len(staged) == 0 {
		return result, nil
	}
	return result, r.applyStaged(ctx, a, svcKey, hashes, liveHashes, staged, force, result)
}

// lateInCache tells whether the operator's cache (live was read from it) is behind this
// process's last apply of an object whose desired content has not changed since: the
// cache holds another version of it, or none, and its watch has brought neither the
// applied one nor its deletion yet (echoes.unseen).
func (r *ServiceReconciler) lateInCache(obj, live *unstructured.Unstructured, fingerprintKey, desired string) bool {
	if !r.watches(obj.GroupVersionKind()) || r.fingerprints.get(fingerprintKey).desired != desired {
		return false
	}
	cachedVersion := ""
	if live != nil {
		cachedVersion = live.GetResourceVersion()
	}
	return r.echoes.unseen(echoKey(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName()), cachedVersion, time.Now())
}

// watches tells whether the operator's cache watches a kind.
func (r *ServiceReconciler) watches(gvk schema.GroupVersionKind) bool {
	_, ok := r.watched.Load(gvk)
	return ok
}

// applyStaged applies objects through fluxcd/pkg/ssa's staged apply and counts what it
// changed.
func (r *ServiceReconciler) applyStaged(ctx context.Context, a *access, svcKey string, hashes, liveHashes map[string]string, staged []*unstructured.Unstructured, force bool, result *applyResult) error {
	opts := ssa.DefaultApplyOptions()
	opts.Force = force
	changeSet, err := a.manager.ApplyAllStaged(ctx, staged, opts)
	if changeSet != nil {
		for _, entry := range changeSet.Entries {
			id := fmt.Sprintf("%s_%s_%s_%s", entry.ObjMetadata.Namespace, entry.ObjMetadata.Name, entry.ObjMetadata.GroupKind.Group, entry.ObjMetadata.GroupKind.Kind)
			fp := fingerprint{desired: hashes[id]}
			result.done[id] = true
			switch entry.Action {
			case ssa.CreatedAction:
				result.created++
				result.changes = append(result.changes, entry.Subject+" created")
			case ssa.ConfiguredAction:
				result.configured++
				result.changes = append(result.changes, entry.Subject+" configured")
			default:
				result.unchanged++
				fp.live = liveHashes[id]
			}
			r.fingerprints.set(svcKey+"/"+id, fp)
		}
	}
	return err
}

// directApply are the objects applied one request each: with what the cache held of
// them (nil: absent), and whether each is applied create-only.
type directApply struct {
	objects, lives []*unstructured.Unstructured
	createOnly     []bool
}

func (d *directApply) add(obj, live *unstructured.Unstructured, createOnly bool) {
	d.objects, d.lives, d.createOnly = append(d.objects, obj), append(d.lives, live), append(d.createOnly, createOnly)
}

// applyDirect applies objects with one server-side apply request each, all at once, and
// counts what each changed, in the objects' order. The first failure (in that order) is
// returned, after what the others changed was counted.
func (r *ServiceReconciler) applyDirect(ctx context.Context, a *access, svc *v1alpha1.Service, hashes map[string]string, d *directApply, result *applyResult) error {
	applied, errs := make([]*unstructured.Unstructured, len(d.objects)), make([]error, len(d.objects))
	var wg sync.WaitGroup
	for i, obj := range d.objects {
		// The watch of a kind not watched yet starts after the apply: it lists the object
		// as it is then, no echo to wait for.
		key, echoed := echoKey(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName()), a.watchedByOperator() && r.watches(obj.GroupVersionKind())
		if echoed {
			r.echoes.begin(key)
		}
		wg.Go(func() {
			applied[i], errs[i] = r.applyOne(ctx, a, svc, obj, d.createOnly[i], &d.lives[i])
			rv := ""
			if errs[i] == nil {
				rv = applied[i].GetResourceVersion()
			}
			if echoed && r.echoes.done(key, rv) {
				result.missed.Store(true)
			}
		})
	}
	wg.Wait()
	var first error
	for i, obj := range d.objects {
		if errs[i] != nil {
			if first == nil {
				first = applyFailed(obj, errs[i])
			}
			continue
		}
		id, ref := render.ObjectID(obj), obj.GetKind()+"/"+obj.GetName()
		result.applied[ref], result.done[id] = applied[i], true
		r.fingerprints.set(string(svc.UID)+"/"+id, fingerprint{desired: hashes[id], live: liveHash(applied[i])})
		switch {
		case d.lives[i] == nil:
			result.created++
			result.changes = append(result.changes, ref+" created")
		case applied[i].GetResourceVersion() != d.lives[i].GetResourceVersion():
			result.configured++
			result.changes = append(result.changes, ref+" configured")
		default:
			result.unchanged++
		}
	}
	return first
}

// applyOne applies one object and returns it as the API server answered. Create-only,
// it creates the object, or, when one of that name exists, reads it (into live), refuses
// to take it over unless it carries the Service's labels, and applies over it.
func (r *ServiceReconciler) applyOne(ctx context.Context, a *access, svc *v1alpha1.Service, obj *unstructured.Unstructured, createOnly bool, live **unstructured.Unstructured) (*unstructured.Unstructured, error) {
	applied := obj.DeepCopy()
	if createOnly {
		applied.SetResourceVersion(absentVersion)
	}
	err := a.writer.Patch(ctx, applied, client.Apply, client.ForceOwnership, client.FieldOwner(fieldManager))
	if !createOnly || !apierrors.IsConflict(err) {
		return applied, err
	}
	existing, err := getLiveUncached(ctx, a.direct, obj)
	if err != nil {
		return nil, err
	}
	if existing != nil && !ownedBy(existing, svc) {
		return nil, takeOverRefused(obj, existing)
	}
	*live, applied = existing, obj.DeepCopy()
	err = a.writer.Patch(ctx, applied, client.Apply, client.ForceOwnership, client.FieldOwner(fieldManager))
	return applied, err
}

// applyFailed names the object whose apply failed; a refusal to take it over is
// returned as it is.
func applyFailed(obj *unstructured.Unstructured, err error) error {
	var refused *phaseError
	if errors.As(err, &refused) {
		return refused
	}
	return fmt.Errorf("%s/%s apply failed: %w", obj.GetKind(), obj.GetName(), err)
}

// isStagedKind tells whether an object must be applied in ssa's stages: definitions and
// namespaces before what uses them.
func isStagedKind(obj *unstructured.Unstructured) bool {
	switch obj.GroupVersionKind().GroupKind().String() {
	case "CustomResourceDefinition.apiextensions.k8s.io", "Namespace":
		return true
	}
	return false
}

// getLive reads an object as it is in the cluster with reader (the operator's cache for
// watched kinds, or a Service's identity); nil when it does not exist.
func (r *ServiceReconciler) getLive(ctx context.Context, reader client.Reader, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := obj.GroupVersionKind()
	live := r.cachedObject(gvk)
	err := reader.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if u, ok := live.(*unstructured.Unstructured); ok {
		return u, nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// cachedObject returns an empty object to read a kind through the cache: typed for the
// built-in kinds watched from the start (several times smaller in memory than the same
// object as unstructured maps, which matters with thousands of them), unstructured for
// any other kind.
func (r *ServiceReconciler) cachedObject(gvk schema.GroupVersionKind) client.Object {
	if isWatchedKind(gvk) {
		if typed, err := r.Scheme().New(gvk); err == nil {
			if obj, ok := typed.(client.Object); ok {
				return obj
			}
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

func isWatchedKind(gvk schema.GroupVersionKind) bool {
	if gvk == serviceGVK {
		return true // the child Services of substituted nodes: read typed, as every Service
	}
	for _, kind := range watchedKinds {
		if kind == gvk {
			return true
		}
	}
	return false
}
