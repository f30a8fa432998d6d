package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/fluxcd/pkg/ssa"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// liveHash identifies a live object by its UID and the operator's managedFields entry:
// it changes when the object is recreated, or when anyone else takes over (edits) a field
// the operator set; status updates and other managers' own fields leave it alone.
func liveHash(obj *unstructured.Unstructured) string {
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

// applyResult counts what an apply changed.
type applyResult struct {
	created, configured, unchanged int
	changes                        []string
}

// applyObjects applies the objects that need it, in stages (CRDs and namespaces first),
// and records fingerprints. live holds the objects as read before applying (nil when
// absent); it is updated for objects found unchanged.
func (r *ServiceReconciler) applyObjects(ctx context.Context, manager *ssa.ResourceManager, svcKey string, objects []*unstructured.Unstructured, force bool) (*applyResult, error) {
	result := &applyResult{}
	var candidates []*unstructured.Unstructured
	hashes := map[string]string{}
	lives := map[string]string{}
	for _, obj := range objects {
		id := render.ObjectID(obj)
		desired := desiredHash(obj)
		hashes[id] = desired
		live, err := r.getLive(ctx, obj)
		if err != nil {
			return result, err
		}
		if live != nil {
			lives[id] = liveHash(live)
			fp := r.fingerprints.get(svcKey + "/" + id)
			if fp.desired == desired && fp.live != "" && fp.live == lives[id] {
				result.unchanged++
				continue
			}
		}
		candidates = append(candidates, obj.DeepCopy())
	}
	if len(candidates) == 0 {
		return result, nil
	}
	opts := ssa.DefaultApplyOptions()
	opts.Force = force
	changeSet, err := manager.ApplyAllStaged(ctx, candidates, opts)
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
				fp.live = lives[id]
			}
			r.fingerprints.set(svcKey+"/"+id, fp)
		}
	}
	return result, err
}

// getLive reads an object as it is in the cluster (from the cache for watched kinds);
// nil when it does not exist.
func (r *ServiceReconciler) getLive(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return live, nil
}

// managerFor returns the server-side apply manager acting for a Service: the operator
// itself, or the Service's service account when it names one.
func (r *ServiceReconciler) managerFor(namespace, serviceAccount string) (*ssa.ResourceManager, error) {
	c := client.Client(r.Client)
	if serviceAccount != "" {
		var err error
		if c, err = r.impersonate(namespace, serviceAccount); err != nil {
			return nil, err
		}
	}
	return ssa.NewResourceManager(c, r.poller, ssa.Owner{Field: fieldManager, Group: "calaf.io"}), nil
}
