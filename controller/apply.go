package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/fluxcd/pkg/ssa"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	// missed: someone else changed an applied object while it was applied (its watch
	// event was held back as a possible echo): the Service needs another reconcile.
	missed atomic.Bool
}

// applyObjects applies the objects whose desired content or live fields changed since
// they were last applied and verified; the others cost nothing. Namespaced objects are
// applied with one server-side apply request each, all of them at once; cluster-scoped
// ones, CRDs and forced recreations go through fluxcd/pkg/ssa's staged apply (CRDs and
// namespaces first). recorded holds the inventory's fingerprint tokens by object ID.
func (r *ServiceReconciler) applyObjects(ctx context.Context, a *access, svcKey string, recorded map[string]string, objects []*unstructured.Unstructured, force bool) (*applyResult, error) {
	result := &applyResult{applied: map[string]*unstructured.Unstructured{}}
	var staged, direct, lives []*unstructured.Unstructured
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
		if live != nil {
			liveHashes[id] = liveHash(live)
			fp := r.fingerprints.recall(svcKey+"/"+id, recorded[id], desired, liveHashes[id])
			if fp.desired == desired && fp.live != "" && fp.live == liveHashes[id] {
				result.unchanged++
				continue
			}
		}
		if force || obj.GetNamespace() == "" || isStagedKind(obj) {
			staged = append(staged, obj.DeepCopy())
			continue
		}
		direct, lives = append(direct, obj), append(lives, live)
	}
	if err := r.applyDirect(ctx, a, svcKey, hashes, direct, lives, result); err != nil {
		return result, err
	}
	if len(staged) == 0 {
		return result, nil
	}
	opts := ssa.DefaultApplyOptions()
	opts.Force = force
	changeSet, err := a.manager.ApplyAllStaged(ctx, staged, opts)
	if changeSet != nil {
		for _, entry := range changeSet.Entries {
			id := fmt.Sprintf("%s_%s_%s_%s", entry.ObjMetadata.Namespace, entry.ObjMetadata.Name, entry.ObjMetadata.GroupKind.Group, entry.ObjMetadata.GroupKind.Kind)
			fp := fingerprint{desired: hashes[id]}
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
	return result, err
}

// applyDirect applies objects with one server-side apply request each, all at once, and
// counts what each changed, in the objects' order; lives are the objects as they were
// (nil: absent). The first failure (in that order) is returned, after what the others
// changed was counted.
func (r *ServiceReconciler) applyDirect(ctx context.Context, a *access, svcKey string, hashes map[string]string, objects, lives []*unstructured.Unstructured, result *applyResult) error {
	applied, errs := make([]*unstructured.Unstructured, len(objects)), make([]error, len(objects))
	var wg sync.WaitGroup
	for i, obj := range objects {
		key := echoKey(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
		r.echoes.begin(key)
		wg.Go(func() {
			applied[i] = obj.DeepCopy()
			errs[i] = a.writer.Patch(ctx, applied[i], client.Apply, client.ForceOwnership, client.FieldOwner(fieldManager))
			rv := ""
			if errs[i] == nil {
				rv = applied[i].GetResourceVersion()
			}
			if r.echoes.done(key, rv) {
				result.missed.Store(true)
			}
		})
	}
	wg.Wait()
	var first error
	for i, obj := range objects {
		if errs[i] != nil {
			if first == nil {
				first = fmt.Errorf("%s/%s apply failed: %w", obj.GetKind(), obj.GetName(), errs[i])
			}
			continue
		}
		id, ref := render.ObjectID(obj), obj.GetKind()+"/"+obj.GetName()
		result.applied[ref] = applied[i]
		r.fingerprints.set(svcKey+"/"+id, fingerprint{desired: hashes[id], live: liveHash(applied[i])})
		switch {
		case lives[i] == nil:
			result.created++
			result.changes = append(result.changes, ref+" created")
		case applied[i].GetResourceVersion() != lives[i].GetResourceVersion():
			result.configured++
			result.changes = append(result.changes, ref+" configured")
		default:
			result.unchanged++
		}
	}
	return first
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
	for _, kind := range watchedKinds {
		if kind == gvk {
			return true
		}
	}
	return false
}
