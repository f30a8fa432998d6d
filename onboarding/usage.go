package onboarding

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
)

// reconcileUsage sets the package's usageState from the Services that name its VNFD id,
// and keeps the finalizer calaf.io/vnf-package-in-use on it while any does: a package in
// use is deleted (kubectl delete waits) only once no Service names it.
func (r *Reconciler) reconcileUsage(ctx context.Context, pkg *v1alpha1.VnfPackage) error {
	used, err := r.used(ctx, pkg)
	if err != nil {
		return err
	}
	pkg.Status.UsageState = v1alpha1.PackageNotInUse
	if used {
		pkg.Status.UsageState = v1alpha1.PackageInUse
	}
	if used == controllerutil.ContainsFinalizer(pkg, v1alpha1.VnfPackageFinalizer) {
		return nil
	}
	patch := client.MergeFrom(pkg.DeepCopy())
	if used {
		controllerutil.AddFinalizer(pkg, v1alpha1.VnfPackageFinalizer)
	} else {
		controllerutil.RemoveFinalizer(pkg, v1alpha1.VnfPackageFinalizer)
	}
	return client.IgnoreNotFound(r.Patch(ctx, pkg, patch))
}

// used tells whether a Service of the namespace names the VNFD id the package holds (its
// label): labelled with it by the Service reconciler, and naming it in its spec.
func (r *Reconciler) used(ctx context.Context, pkg *v1alpha1.VnfPackage) (bool, error) {
	label := pkg.Labels[v1alpha1.LabelVnfdID]
	if label == "" {
		return false, nil
	}
	list := &v1alpha1.ServiceList{}
	if err := r.Services.List(ctx, list, client.InNamespace(pkg.Namespace), client.MatchingLabels{v1alpha1.LabelVnfdID: label}); err != nil {
		return false, err
	}
	for i := range list.Items {
		if vnfdLabelOf(&list.Items[i]) == label {
			return true, nil
		}
	}
	return false, nil
}

// vnfdLabelOf is the label value of the VNFD id a Service names; "" when it names none.
func vnfdLabelOf(svc *v1alpha1.Service) string {
	if ref := svc.Spec.Source.VnfPackage; ref != nil {
		return source.VnfdLabel(ref.VnfdID)
	}
	return ""
}

// serviceHandler queues the packages a Service names or named (by its label) when it is
// created or deleted, or when what it names, its label or its deletion changes.
func (r *Reconciler) serviceHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], services ...client.Object) {
		seen := map[string]bool{}
		for _, obj := range services {
			svc, ok := obj.(*v1alpha1.Service)
			if !ok {
				continue
			}
			for _, label := range []string{svc.Labels[v1alpha1.LabelVnfdID], vnfdLabelOf(svc)} {
				if label == "" || seen[label] {
					continue
				}
				seen[label] = true
				r.enqueuePackages(ctx, q, svc.Namespace, label)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if usageChanged(e.ObjectOld, e.ObjectNew) {
				enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
	}
}

// usageChanged tells whether an update of a Service may change the usage of a package:
// what it names, its label, or its deletion.
func usageChanged(old, updated client.Object) bool {
	before, ok1 := old.(*v1alpha1.Service)
	after, ok2 := updated.(*v1alpha1.Service)
	if !ok1 || !ok2 {
		return false
	}
	return vnfdLabelOf(before) != vnfdLabelOf(after) || before.Labels[v1alpha1.LabelVnfdID] != after.Labels[v1alpha1.LabelVnfdID] ||
		before.DeletionTimestamp.IsZero() != after.DeletionTimestamp.IsZero()
}

// enqueuePackages queues the packages of a namespace labelled with a VNFD id's label.
func (r *Reconciler) enqueuePackages(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], namespace, label string) {
	list := &v1alpha1.VnfPackageList{}
	if err := r.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{v1alpha1.LabelVnfdID: label}); err != nil {
		return
	}
	for _, pkg := range list.Items {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pkg)})
	}
}
