package orchestration

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// OperationReconciler accepts new Operations: it ties each to its Service (an owner
// reference, so it goes with the Service, and the Service's label), checks that the
// Service has the node and marks it Pending; a Pending Operation makes it ask for a
// reconcile of the Service, whose orchestrator runs it. Operations that started are the
// orchestrator's.
type OperationReconciler struct {
	client.Client
	// Notify asks for an immediate reconcile of a Service (ServiceReconciler.Trigger).
	Notify   func(namespace, name string) bool
	Recorder EventRecorder
	// Gated leaves new Operations to the lifecycle reconciler (package lifecycle), which
	// queues them and marks them Pending when their turn comes.
	Gated bool
	// ServiceElsewhere, when set, tells whether a Service this operator does not hold
	// belongs to another shard (whose operator handles its Operations).
	ServiceElsewhere func(ctx context.Context, key client.ObjectKey) bool
}

// SetupWithManager registers the reconciler.
func (r *OperationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Operation{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return waiting(e.Object) },
			UpdateFunc: func(e event.UpdateEvent) bool { return waiting(e.ObjectNew) },
			DeleteFunc: func(event.DeleteEvent) bool { return false },
		})).
		Complete(r)
}

// waiting tells whether an Operation is new or accepted and not started.
func waiting(obj client.Object) bool {
	op, ok := obj.(*v1alpha1.Operation)
	return ok && (op.Status.Phase == "" || op.Status.Phase == v1alpha1.OperationPending)
}

// Reconcile accepts or refuses a new Operation. Once the cache shows it accepted
// (Pending), it asks for a reconcile of its Service, whose reconcile then lists it from
// the same cache.
func (r *OperationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	op := &v1alpha1.Operation{}
	if err := r.Get(ctx, req.NamespacedName, op); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	switch op.Status.Phase {
	case "":
		if r.Gated {
			return ctrl.Result{}, nil
		}
	case v1alpha1.OperationPending:
		if r.Notify != nil {
			r.Notify(op.Namespace, op.Spec.ServiceName)
		}
		return ctrl.Result{}, nil
	default:
		return ctrl.Result{}, nil
	}
	svc := &v1alpha1.Service{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: op.Namespace, Name: op.Spec.ServiceName}, svc); err != nil {
		if apierrors.IsNotFound(err) {
			if r.ServiceElsewhere != nil && r.ServiceElsewhere(ctx, client.ObjectKeyFromObject(svc)) {
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, r.refuse(ctx, op, fmt.Sprintf("Service %s not found in namespace %s", op.Spec.ServiceName, op.Namespace))
		}
		return ctrl.Result{}, err
	}
	if !svc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.refuse(ctx, op, fmt.Sprintf("Service %s is being deleted", svc.Name))
	}
	if len(svc.Status.Nodes) > 0 && !hasNode(svc, op.Spec.Node) {
		var names []string
		for _, node := range svc.Status.Nodes {
			names = append(names, node.Name)
		}
		return ctrl.Result{}, r.refuse(ctx, op, fmt.Sprintf("Service %s has no node template %s (it has %s)", svc.Name, op.Spec.Node, strings.Join(names, ", ")))
	}

	patch := client.MergeFrom(op.DeepCopy())
	if err := controllerutil.SetOwnerReference(svc, op, r.Scheme()); err != nil {
		return ctrl.Result{}, err
	}
	labels := op.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.LabelService] = svc.Name
	labels[v1alpha1.LabelNode] = render.LabelValue(op.Spec.Node)
	op.SetLabels(labels)
	if err := r.Patch(ctx, op, patch); err != nil {
		return ctrl.Result{}, err
	}

	statusPatch := client.MergeFromWithOptions(op.DeepCopy(), client.MergeFromWithOptimisticLock{})
	op.Status.Phase = v1alpha1.OperationPending
	op.Status.Message = fmt.Sprintf("waiting for node %s of Service %s to be ready", op.Spec.Node, svc.Name)
	setOperationCondition(op)
	if err := r.Status().Patch(ctx, op, statusPatch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}

func hasNode(svc *v1alpha1.Service, name string) bool {
	for _, node := range svc.Status.Nodes {
		if node.Name == name {
			return true
		}
	}
	return false
}

// refuse fails an Operation that cannot run at all.
func (r *OperationReconciler) refuse(ctx context.Context, op *v1alpha1.Operation, message string) error {
	patch := client.MergeFromWithOptions(op.DeepCopy(), client.MergeFromWithOptimisticLock{})
	now := metav1.Now()
	op.Status.Phase, op.Status.Message = v1alpha1.OperationFailed, message
	op.Status.StartTime, op.Status.CompletionTime = &now, &now
	setOperationCondition(op)
	if err := r.Status().Patch(ctx, op, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(op, nil, "Warning", "OperationFailed", "RunOperation", "%s", message)
	}
	return nil
}
