// Package lifecycle runs the operation occurrences of Services (docs/lifecycle.md): every
// Operation — a SOL003 lifecycle operation (SCALE, SCALE_TO_LEVEL, HEAL, CHANGE_PACKAGE,
// MODIFY, OPERATE, TERMINATE) or a CUSTOM operation of a node — goes through the SOL003
// state machine, one occurrence at a time per Service in creation order, as a list of
// steps recorded in its status so that none runs twice. An occurrence acts only through
// the API: it changes the Service's spec (scale levels, source, inputs, stop) and waits
// for the Service reconciler to make it healthy, deletes pods to heal them, and runs its
// hooks as Operations that the orchestrator runs in the pods. It also delivers the
// notifications of subscriptions and turns alerts into occurrences.
package lifecycle

import (
	"context"
	"sort"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
)

// EventRecorder records Events (k8s.io/client-go/tools/events).
type EventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{})
}

// Reconciler runs the occurrences of each Service. It reconciles per Service: the
// occurrences of one Service are never handled concurrently.
type Reconciler struct {
	client.Client
	// APIReader reads the occurrence being run, and the occurrences before one starts,
	// fresher than the cache.
	APIReader client.Reader
	Recorder  EventRecorder
	// Notify asks for an immediate reconcile of a Service (controller.Triggers).
	Notify func(namespace, name string) bool
	Log    logr.Logger
	// Poll is how often an occurrence waiting on the cluster looks again (default 1 s).
	Poll time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ServiceElsewhere, when set, tells whether a Service this operator does not hold
	// belongs to another shard (whose operator runs its occurrences).
	ServiceElsewhere func(ctx context.Context, key client.ObjectKey) bool
	// Granter, when set, asks an NFVO for a grant before an occurrence acts (SOL003
	// direct mode); VNFMRoot is the NFV API's URL, for the links of the requests.
	Granter  Granter
	VNFMRoot string
	// Pods returns the client of the cluster a Service with spec.kubeConfig runs its pods
	// in (its target cluster, as its kubeconfig's identity); without it, the occurrences
	// that touch pods fail for such a Service.
	Pods servicePods
}

// SetupWithManager registers the reconciler: a Service's reconcile is asked for by every
// change of the Service (its status included) and of its Operations.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	if r.Poll <= 0 {
		r.Poll = time.Second
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("lifecycle").
		For(&v1alpha1.Service{}).
		Watches(&v1alpha1.Operation{}, handler.EnqueueRequestsFromMapFunc(serviceOfOperation)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// serviceOfOperation maps an Operation to its Service.
func serviceOfOperation(_ context.Context, obj client.Object) []reconcile.Request {
	op, ok := obj.(*v1alpha1.Operation)
	if !ok || op.Spec.ServiceName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: op.Namespace, Name: op.Spec.ServiceName}}}
}

// Reconcile moves the active occurrence of a Service on by one step and tells the others
// that they wait for it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	occurrences, active, err := r.activeOccurrence(ctx, req.Namespace, req.Name)
	if err != nil || len(occurrences) == 0 {
		return ctrl.Result{}, err
	}
	svc := &v1alpha1.Service{}
	if err := r.Get(ctx, req.NamespacedName, svc); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		if r.ServiceElsewhere != nil && r.ServiceElsewhere(ctx, req.NamespacedName) {
			return ctrl.Result{}, nil
		}
		svc = nil
	}
	for _, op := range occurrences {
		if op != active && !op.Status.OperationState.Final() {
			if err := r.queue(ctx, svc, op, active); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if active == nil {
		return ctrl.Result{}, nil
	}
	current := &v1alpha1.Operation{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(active), current); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return r.advance(ctx, svc, current)
}

// activeOccurrence lists a Service's occurrences and returns the one that holds it
// (activeOf). The list comes from the cache, unless the cache names an occurrence that has
// not started: starting one is decided on the API server's list, since the cache may not
// show yet that another one started (occurrences created within the same second are
// ordered by their generated names, so the newer one may come first).
func (r *Reconciler) activeOccurrence(ctx context.Context, namespace, service string) ([]*v1alpha1.Operation, *v1alpha1.Operation, error) {
	occurrences, err := listOccurrences(ctx, r.Client, namespace, service)
	if err != nil {
		return nil, nil, err
	}
	active := activeOf(occurrences)
	if active == nil || started(active.Status.OperationState) {
		return occurrences, active, nil
	}
	if occurrences, err = listOccurrences(ctx, r.APIReader, namespace, service); err != nil {
		return nil, nil, err
	}
	return occurrences, activeOf(occurrences), nil
}

// listOccurrences lists a Service's occurrences (not the hook runs of occurrences) with
// reader, oldest first.
func listOccurrences(ctx context.Context, reader client.Reader, namespace, service string) ([]*v1alpha1.Operation, error) {
	list := &v1alpha1.OperationList{}
	if err := reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var out []*v1alpha1.Operation
	for i := range list.Items {
		op := &list.Items[i]
		if op.Spec.ServiceName == service && op.Labels[v1alpha1.LabelOccurrence] == "" && op.DeletionTimestamp == nil {
			out = append(out, op)
		}
	}
	sort.Slice(out, func(i, j int) bool { return before(out[i], out[j]) })
	return out, nil
}

// before orders occurrences by creation, then name.
func before(a, b *v1alpha1.Operation) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// activeOf returns the occurrence that holds the Service: one that started (PROCESSING,
// FAILED_TEMP, ROLLING_BACK), else the oldest one not final; nil when all are final.
func activeOf(occurrences []*v1alpha1.Operation) *v1alpha1.Operation {
	var first *v1alpha1.Operation
	for _, op := range occurrences {
		if started(op.Status.OperationState) {
			return op
		}
		if first == nil && !op.Status.OperationState.Final() {
			first = op
		}
	}
	return first
}

// started tells whether an occurrence in state holds its Service: it started and has not
// ended (PROCESSING, FAILED_TEMP, ROLLING_BACK).
func started(state v1alpha1.OperationState) bool {
	switch state {
	case v1alpha1.StateProcessing, v1alpha1.StateFailedTemp, v1alpha1.StateRollingBack:
		return true
	}
	return false
}

// queue accepts a new occurrence (STARTING), ends one asked to cancel (ROLLED_BACK: it
// need not wait for its turn to do nothing), and says which occurrence it waits for.
// The cache may be behind: what is decided out of turn is decided again on the
// occurrence as the API server has it, which another reconcile may have accepted already.
func (r *Reconciler) queue(ctx context.Context, svc *v1alpha1.Service, op, active *v1alpha1.Operation) error {
	if movesOutOfTurn(op) {
		current := &v1alpha1.Operation{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(op), current); err != nil {
			return client.IgnoreNotFound(err)
		}
		if !movesOutOfTurn(current) {
			return nil // the cache will show it soon, and ask again
		}
		_, err := r.advance(ctx, svc, current)
		return err
	}
	if op.Status.Message != "" && op.Status.Message == queuedMessage(op, active) {
		return nil
	}
	patch := client.MergeFromWithOptions(op.DeepCopy(), client.MergeFromWithOptimisticLock{})
	setQueued(op, active)
	return client.IgnoreNotFound(r.Status().Patch(ctx, op, patch))
}

// movesOutOfTurn tells whether an occurrence moves on while another holds its Service:
// a new one is accepted (STARTING), a STARTING one asked to cancel ends.
func movesOutOfTurn(op *v1alpha1.Operation) bool {
	state := op.Status.OperationState
	return state == "" || state == v1alpha1.StateStarting && op.Spec.Cancel != ""
}

func queuedMessage(op, active *v1alpha1.Operation) string {
	probe := op.DeepCopy()
	setQueued(probe, active)
	return probe.Status.Message
}

// now is the reconciler's clock as a Kubernetes time.
func (r *Reconciler) now() metav1.Time {
	return metav1.NewTime(r.Now())
}

// record records an Event about an occurrence.
func (r *Reconciler) record(op *v1alpha1.Operation, e event) {
	if r.Recorder == nil || e.reason == "" {
		return
	}
	r.Recorder.Eventf(op, nil, e.eventType, e.reason, text.Truncate(e.action, 128), "%s", text.Truncate(e.note, 1024))
}
