package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"calaf.io/calaf/api/v1alpha1"
	sourcepkg "calaf.io/calaf/source"
)

// ensureVnfdLabel labels a Service that names a VnfPackage with the package's VNFD id
// (calaf.io/vnfd-id, sourcepkg.VnfdLabel), and unlabels one that no longer does: the
// package's users are found by it (usageState, and the finalizer that keeps a package in
// use). It tells whether it patched the Service.
func (r *ServiceReconciler) ensureVnfdLabel(ctx context.Context, svc *v1alpha1.Service) (bool, error) {
	want := ""
	if ref := svc.Spec.Source.VnfPackage; ref != nil {
		want = sourcepkg.VnfdLabel(ref.VnfdID)
	}
	if svc.Labels[v1alpha1.LabelVnfdID] == want {
		return false, nil
	}
	patch := client.MergeFrom(svc.DeepCopy())
	if want == "" {
		delete(svc.Labels, v1alpha1.LabelVnfdID)
	} else {
		if svc.Labels == nil {
			svc.Labels = map[string]string{}
		}
		svc.Labels[v1alpha1.LabelVnfdID] = want
	}
	return true, r.Patch(ctx, svc, patch)
}

// servicesOfPackage maps a VnfPackage to the Services of its namespace that name its
// VNFD id (by their label), so that a Service waiting for its package, or refused it,
// is reconciled when the package's onboarding, operational state or deletion changes.
func (r *ServiceReconciler) servicesOfPackage(ctx context.Context, obj client.Object) []reconcile.Request {
	label := obj.GetLabels()[v1alpha1.LabelVnfdID]
	if label == "" {
		return nil
	}
	list := &v1alpha1.ServiceList{}
	if err := r.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingLabels{v1alpha1.LabelVnfdID: label}); err != nil {
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return requests
}

// packageUsability passes the VnfPackage events that may change whether its Services
// may use it: creation and deletion (predicate.Funcs passes them), and updates of its
// label, onboarding state, revision, operational state, or the start of its deletion —
// not of its usage state, which the Services change.
type packageUsability struct {
	predicate.Funcs
}

func (packageUsability) Update(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*v1alpha1.VnfPackage)
	updated, ok2 := e.ObjectNew.(*v1alpha1.VnfPackage)
	if !ok1 || !ok2 {
		return false
	}
	return old.Labels[v1alpha1.LabelVnfdID] != updated.Labels[v1alpha1.LabelVnfdID] ||
		old.Status.OnboardingState != updated.Status.OnboardingState || old.Status.Revision != updated.Status.Revision ||
		old.Status.ObservedGeneration != updated.Status.ObservedGeneration ||
		old.Spec.OperationalState != updated.Spec.OperationalState || old.DeletionTimestamp.IsZero() != updated.DeletionTimestamp.IsZero()
}
