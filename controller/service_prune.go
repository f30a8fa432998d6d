package controller

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/render"
)

// reconcilePrune deletes the objects of the inventory that the package no longer renders.
// Only objects that still carry this Service's labels are deleted; others are forgotten.
func (r *ServiceReconciler) reconcilePrune(ctx context.Context, s *scope) error {
	svc := s.Service
	desired := map[string]bool{}
	for _, obj := range s.Result.Objects {
		desired[render.ObjectID(obj)] = true
	}
	var kept []v1alpha1.InventoryEntry
	var pruned []string
	var failure error
	for i := len(svc.Status.Inventory) - 1; i >= 0; i-- {
		entry := svc.Status.Inventory[i]
		if desired[entry.ID] {
			kept = append(kept, entry)
			continue
		}
		obj, err := entryObject(entry)
		if err != nil {
			continue
		}
		a := s.access.route(obj.GroupVersionKind())
		live, err := getLiveUncached(ctx, a.direct, obj)
		if err != nil {
			failure = err
			kept = append(kept, entry)
			continue
		}
		if live == nil {
			continue
		}
		if !ownedBy(live, svc) {
			r.warn(svc, "PruneSkipped", "%s %s no longer carries this Service's labels: left alone", obj.GetKind(), obj.GetName())
			continue
		}
		if err := a.writer.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			failure = err
			kept = append(kept, entry)
			continue
		}
		pruned = append(pruned, obj.GetKind()+"/"+obj.GetName()+" deleted")
		r.fingerprints.forget(string(svc.UID) + "/" + entry.ID)
		r.forgetObjects([]v1alpha1.InventoryEntry{entry})
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	svc.Status.Inventory = kept
	if len(pruned) > 0 {
		r.Metrics.countPruned(len(pruned))
		if r.Recorder != nil {
			r.Recorder.Eventf(svc, nil, "Normal", "Pruned", "Prune", "%s", text.Truncate(strings.Join(pruned, "\n"), 1024))
		}
	}
	if failure != nil {
		return classifyAPI(v1alpha1.ConditionApplied, v1alpha1.ReasonPruneFailed, failure)
	}
	return nil
}
