package controller

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"calaf.io/calaf/api/v1alpha1"
)

// uninstantiate makes a Service NOT_INSTANTIATED (SOL003: a VNF instance before its
// INSTANTIATE and after its TERMINATE): what it runs is torn down as its deletion would —
// each node's Standard stop and delete operations (unless calaf.io/teardown: skip), its
// objects node by node, dependents first, then the claims its StatefulSets made (unless
// spec.retainVolumes: they stay, still the Service's, for the next instantiation) — and
// the Service stays, with its finalizer, its package and its identity. Its package is
// fetched and compiled only for the teardown operations of what still runs. The deletion
// policy Orphan is not applied: it speaks of the Service's own deletion, and objects
// left running without Calaf's labels would be a VNF SOL003 calls not instantiated, which
// the next instantiation could not take over.
func (r *ServiceReconciler) uninstantiate(ctx context.Context, svc *v1alpha1.Service) (ctrl.Result, error) {
	if requested := svc.Annotations[v1alpha1.ReconcileRequestAnnotation]; requested != "" {
		svc.Status.LastHandledReconcileAt = requested
	}
	r.forgetObjects(svc.Status.Inventory) // nothing of it is applied again, until it is instantiated
	done, err := r.deleteInReverse(ctx, svc)
	if done && err == nil && !svc.Spec.RetainVolumes {
		done, err = r.releaseVolumes(ctx, svc, true)
	}
	if err != nil {
		failure := newPhaseError(v1alpha1.ConditionReady, v1alpha1.ReasonNotInstantiated, retry, err)
		setConditions(svc, passed{notInstantiated: true}, failure, err.Error(), time.Now())
		return ctrl.Result{}, err
	}
	if !done {
		return ctrl.Result{RequeueAfter: deletePollInterval}, nil
	}
	r.fingerprints.forget(string(svc.UID) + "/")
	r.teardownWarned.Delete(svc.UID)
	r.settled.forget(svc)
	setConditions(svc, passed{notInstantiated: true}, nil, "", time.Now())
	return ctrl.Result{RequeueAfter: requeueAfter(durationOr(svc.Spec.Interval, v1alpha1.DefaultInterval))}, nil
}
