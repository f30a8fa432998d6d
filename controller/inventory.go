package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// mergeInventory returns the inventory after an apply, in deployment order: the desired
// objects that were applied (by object ID) or existed before, then the earlier entries
// no longer desired (pruned next). token gives each entry's verified fingerprint; an entry without
// one keeps the token it had.
func mergeInventory(old []v1alpha1.InventoryEntry, result *render.Result, applied map[string]bool, token func(id string) string) []v1alpha1.InventoryEntry {
	recorded := indexInventory(old)
	had, tokens := recorded.known, recorded.tokens
	desired := map[string]bool{}
	var inventory []v1alpha1.InventoryEntry
	for _, node := range result.Nodes {
		for _, obj := range node.Objects {
			id := render.ObjectID(obj)
			desired[id] = true
			if applied[id] || had[id] {
				entry := v1alpha1.InventoryEntry{ID: id, Version: obj.GroupVersionKind().Version, Applied: token(id)}
				if entry.Applied == "" && !applied[id] {
					entry.Applied = tokens[id]
				}
				inventory = append(inventory, entry)
			}
		}
	}
	for _, entry := range old {
		if !desired[entry.ID] {
			inventory = append(inventory, entry)
		}
	}
	return inventory
}

// inventoryIndex is what an inventory recorded, by object ID.
type inventoryIndex struct {
	// tokens are the fingerprint tokens recorded.
	tokens map[string]string
	// known are the objects the Service applied before.
	known map[string]bool
}

func indexInventory(inventory []v1alpha1.InventoryEntry) inventoryIndex {
	inv := inventoryIndex{tokens: make(map[string]string, len(inventory)), known: make(map[string]bool, len(inventory))}
	for _, entry := range inventory {
		inv.known[entry.ID] = true
		if entry.Applied != "" {
			inv.tokens[entry.ID] = entry.Applied
		}
	}
	return inv
}

// entryObject returns an object reference for an inventory entry.
func entryObject(entry v1alpha1.InventoryEntry) (*unstructured.Unstructured, error) {
	parts := strings.Split(entry.ID, "_")
	if len(parts) != 4 {
		return nil, fmt.Errorf("malformed inventory entry %q", entry.ID)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: parts[2], Version: entry.Version, Kind: parts[3]})
	obj.SetNamespace(parts[0])
	obj.SetName(parts[1])
	return obj, nil
}

// ownedBy tells whether an object carries the labels of a Service.
func ownedBy(obj client.Object, svc *v1alpha1.Service) bool {
	labels := obj.GetLabels()
	return labels[v1alpha1.LabelService] == svc.Name && labels[v1alpha1.LabelServiceNamespace] == svc.Namespace
}

// checkOwnership refuses to take over objects that exist without this Service's labels:
// another tool's or another Service's objects are never adopted or overwritten. The
// objects are read at once (one round trip).
func (r *ServiceReconciler) checkOwnership(ctx context.Context, reader client.Reader, svc *v1alpha1.Service, objects []*unstructured.Unstructured) error {
	lives, errs := make([]*unstructured.Unstructured, len(objects)), make([]error, len(objects))
	var wg sync.WaitGroup
	for i, obj := range objects {
		wg.Go(func() { lives[i], errs[i] = getLiveUncached(ctx, reader, obj) })
	}
	wg.Wait()
	for i, obj := range objects {
		if errs[i] != nil {
			return classifyAPI(v1alpha1.ConditionApplied, v1alpha1.ReasonApplyFailed, errs[i])
		}
		if live := lives[i]; live != nil && !ownedBy(live, svc) {
			return takeOverRefused(obj, live)
		}
	}
	return nil
}

// takeOverRefused is the stall of an object that exists and is not the Service's.
func takeOverRefused(obj, live *unstructured.Unstructured) *phaseError {
	owner := "no Calaf Service"
	if name := live.GetLabels()[v1alpha1.LabelService]; name != "" {
		owner = "Service " + live.GetLabels()[v1alpha1.LabelServiceNamespace] + "/" + name
	}
	return stalled(v1alpha1.ConditionApplied, v1alpha1.ReasonApplyFailed,
		"%s %q already exists and belongs to %s: refusing to take it over", obj.GetKind(), obj.GetName(), owner)
}

// getLiveUncached reads an object from the API server with reader; nil when it does not
// exist.
func getLiveUncached(ctx context.Context, reader client.Reader, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := reader.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, live)
	if apierrors.IsNotFound(err) || isNoMatch(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return live, nil
}

func (r *ServiceReconciler) warn(svc *v1alpha1.Service, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(svc, nil, "Warning", reason, "Reconcile", format, args...)
	}
}
