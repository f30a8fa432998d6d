package lifecycle

import (
	"context"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"calaf.io/calaf/api/v1alpha1"
)

// giveUpAfter is how long a subscription's endpoint may fail before a deleted Service goes
// without its deletion delivered there.
const giveUpAfter = time.Hour

// IdentifierReleaser lets a deleted Service go (removes calaf.io/vnf-identifier) once every
// subscription of its namespace that asks for VnfIdentifierDeletionNotifications has
// delivered its deletion, or has failed for an hour.
type IdentifierReleaser struct {
	client.Client
	// APIReader reads the subscriptions as they are, not as the cache last saw them.
	APIReader client.Reader
	Now       func() time.Time
}

// SetupWithManager registers the releaser: deleted Services that hold the finalizer, and
// any change of a subscription's delivery.
func (r *IdentifierReleaser) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	holding := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return !obj.GetDeletionTimestamp().IsZero() && controllerutil.ContainsFinalizer(obj, v1alpha1.FinalizerVnfIdentifier)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("vnf-identifiers").
		For(&v1alpha1.Service{}, builder.WithPredicates(holding)).
		Watches(&v1alpha1.LifecycleSubscription{}, handler.EnqueueRequestsFromMapFunc(r.deletedServices)).
		Complete(r)
}

// deletedServices maps a subscription to the deleted Services of its namespace that wait.
func (r *IdentifierReleaser) deletedServices(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &v1alpha1.ServiceList{}
	if err := r.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var requests []reconcile.Request
	for _, svc := range list.Items {
		if !svc.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(&svc, v1alpha1.FinalizerVnfIdentifier) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&svc)})
		}
	}
	return requests
}

// Reconcile removes the finalizer of a deleted Service once no subscription waits for it.
func (r *IdentifierReleaser) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	svc := &v1alpha1.Service{}
	if err := r.Get(ctx, req.NamespacedName, svc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if svc.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(svc, v1alpha1.FinalizerVnfIdentifier) {
		return ctrl.Result{}, nil
	}
	subs := &v1alpha1.LifecycleSubscriptionList{}
	if err := r.APIReader.List(ctx, subs, client.InNamespace(svc.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	for i := range subs.Items {
		if r.waitsFor(&subs.Items[i], svc) {
			return ctrl.Result{RequeueAfter: time.Minute}, nil
		}
	}
	patch := client.MergeFrom(svc.DeepCopy())
	controllerutil.RemoveFinalizer(svc, v1alpha1.FinalizerVnfIdentifier)
	return ctrl.Result{}, client.IgnoreNotFound(r.Patch(ctx, svc, patch))
}

// waitsFor tells whether a subscription still has a Service's deletion to deliver.
func (r *IdentifierReleaser) waitsFor(sub *v1alpha1.LifecycleSubscription, svc *v1alpha1.Service) bool {
	if !sub.DeletionTimestamp.IsZero() || !wants(sub, v1alpha1.NotificationDeletion) || !selectsService(sub.Spec.Filter, svc) {
		return false
	}
	for _, c := range sub.Status.Cursors {
		if c.Operation == serviceCursor(svc.Name) && int64(c.Delivered) >= identifierDeleted {
			return false
		}
	}
	ready := apimeta.FindStatusCondition(sub.Status.Conditions, v1alpha1.ConditionReady)
	failingSince := metav1.Time{}
	if ready != nil && ready.Status == metav1.ConditionFalse {
		failingSince = ready.LastTransitionTime
	}
	return failingSince.IsZero() || r.Now().Sub(failingSince.Time) < giveUpAfter
}
