package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
)

// run is one reconcile of the active occurrence of a Service.
type run struct {
	r  *Reconciler
	op *v1alpha1.Operation
	// svc is the Service; nil once it is gone (a TERMINATE).
	svc *v1alpha1.Service
	// events are told once the status that causes them is written.
	events []event
	// after asks for a look again after it (0: soon).
	after time.Duration
	// stopped: runSteps stopped before the next step for a GRACEFUL cancel.
	stopped bool
}

// refusal is a request that cannot be carried out: the occurrence ends FAILED (Refused).
type refusal struct{ message string }

func (e *refusal) Error() string { return e.message }

func refusef(format string, args ...any) error {
	return &refusal{message: fmt.Sprintf(format, args...)}
}

// waitFor says that a request cannot be judged yet (the Service was not rendered): the
// occurrence stays STARTING.
type waitFor struct{ message string }

func (e *waitFor) Error() string { return e.message }

// advance moves an occurrence on by one step: accepted (STARTING), started (PROCESSING)
// or refused, one step run, settled (COMPLETED, FAILED_TEMP), or a decision taken in
// FAILED_TEMP carried out. It writes what changed, then records the Events.
func (r *Reconciler) advance(ctx context.Context, svc *v1alpha1.Service, op *v1alpha1.Operation) (ctrl.Result, error) {
	rn := &run{r: r, op: op, svc: svc, after: r.Poll}
	if op.Status.OperationState == "" {
		if err := rn.adopt(ctx); err != nil {
			return ctrl.Result{}, err
		}
	}
	before := op.DeepCopy()
	var err error
	switch op.Status.OperationState {
	case "":
		err = rn.accept()
	case v1alpha1.StateStarting:
		err = rn.start(ctx)
	case v1alpha1.StateProcessing:
		err = rn.proceed(ctx, false)
	case v1alpha1.StateRollingBack:
		err = rn.proceed(ctx, true)
	case v1alpha1.StateFailedTemp:
		err = rn.decide(ctx)
	default:
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.save(ctx, before, rn)
}

// save writes the occurrence's status when it changed (a conflict: someone wrote it
// meanwhile, look again soon), then records the Events of its transitions.
func (r *Reconciler) save(ctx context.Context, before *v1alpha1.Operation, rn *run) (ctrl.Result, error) {
	if apiequality.Semantic.DeepEqual(before.Status, rn.op.Status) {
		return ctrl.Result{RequeueAfter: rn.after}, nil
	}
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := r.Status().Patch(ctx, rn.op, patch); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		return ctrl.Result{}, err
	}
	for _, e := range rn.events {
		r.record(rn.op, e)
	}
	return ctrl.Result{RequeueAfter: min(rn.after, 100*time.Millisecond)}, nil
}

// enter moves the occurrence to a state and keeps the Event for after the write; a cancel
// not carried out yet is, or is moot, once the occurrence stops.
func (rn *run) enter(to v1alpha1.OperationState, reason, message string) error {
	if cancelPending(rn.op) && (to == v1alpha1.StateFailedTemp || to.Final()) {
		markCancelled(rn.op, to, reason)
	}
	e, err := enter(rn.op, to, reason, message, rn.r.now())
	if err != nil {
		return err
	}
	rn.events = append(rn.events, e)
	rn.after = 0
	return nil
}

// adopt ties a new occurrence to its Service: an owner reference (it goes with the
// Service; a TERMINATE that deletes it outlives it) and the Service's label.
func (rn *run) adopt(ctx context.Context) error {
	op, svc := rn.op, rn.svc
	outlives := op.Spec.Type == v1alpha1.OperationTerminate && !keepsInstance(op)
	if svc == nil || op.Labels[v1alpha1.LabelService] == svc.Name && (outlives || ownedBy(op, svc)) {
		return nil
	}
	patch := client.MergeFrom(op.DeepCopy())
	if op.Labels == nil {
		op.Labels = map[string]string{}
	}
	op.Labels[v1alpha1.LabelService] = svc.Name
	if !outlives {
		if err := controllerutil.SetOwnerReference(svc, op, rn.r.Scheme()); err != nil {
			return err
		}
	}
	return client.IgnoreNotFound(rn.r.Patch(ctx, op, patch))
}

func ownedBy(op *v1alpha1.Operation, svc *v1alpha1.Service) bool {
	for _, ref := range op.OwnerReferences {
		if ref.UID == svc.UID {
			return true
		}
	}
	return false
}

// accept makes a new occurrence STARTING, or refuses it when its Service is missing or
// going.
func (rn *run) accept() error {
	svc := rn.svc
	switch {
	case svc == nil:
		return rn.enter(v1alpha1.StateFailed, v1alpha1.OccurrenceRefused, fmt.Sprintf("refused: Service %s not found in namespace %s", rn.op.Spec.ServiceName, rn.op.Namespace))
	case !svc.DeletionTimestamp.IsZero():
		return rn.enter(v1alpha1.StateFailed, v1alpha1.OccurrenceRefused, fmt.Sprintf("refused: Service %s is being deleted", svc.Name))
	}
	return rn.enter(v1alpha1.StateStarting, "", fmt.Sprintf("%s of Service %s accepted", rn.op.Spec.Type, svc.Name))
}

// start checks the request against the Service and starts it (PROCESSING), or refuses it
// (FAILED); a Service not rendered yet is waited for. One asked to cancel ends
// ROLLED_BACK.
func (rn *run) start(ctx context.Context) error {
	if rn.op.Spec.Cancel != "" {
		return rn.cancelBeforeStart()
	}
	if rn.svc == nil || !rn.svc.DeletionTimestamp.IsZero() && rn.op.Spec.Type != v1alpha1.OperationTerminate {
		return rn.enter(v1alpha1.StateFailed, v1alpha1.OccurrenceRefused, fmt.Sprintf("refused: Service %s is gone or being deleted", rn.op.Spec.ServiceName))
	}
	pods, err := rn.pods(ctx)
	if err == nil {
		err = validate(ctx, pods, rn.op, rn.svc)
	}
	var refused *refusal
	var wait *waitFor
	switch {
	case errors.As(err, &refused):
		return rn.enter(v1alpha1.StateFailed, v1alpha1.OccurrenceRefused, "refused: "+refused.message)
	case errors.As(err, &wait):
		setProgress(rn.op, wait.message)
		return nil
	case err != nil:
		return err
	}
	if rn.r.Granter != nil && needsGrant(rn.op, rn.svc) {
		if granted, err := rn.grant(ctx); !granted || err != nil {
			return err
		}
	}
	rn.op.Status.Retries = rn.op.Spec.Retries
	return rn.enter(v1alpha1.StateProcessing, "", fmt.Sprintf("%s of Service %s started", rn.op.Spec.Type, rn.svc.Name))
}

// proceed runs the next step of the occurrence (rollback: of its rollback); once all ran
// it is COMPLETED (ROLLED_BACK), when one fails FAILED_TEMP, and cancelled FAILED_TEMP
// too. When it stops, the pods it affected are reported.
func (rn *run) proceed(ctx context.Context, rollback bool) error {
	if cancelPending(rn.op) && rn.op.Spec.Cancel == v1alpha1.CancelForceful {
		return rn.cancelRunning(ctx, rollback)
	}
	finished, failure := rn.runSteps(ctx, plan(rn.op, rollback), rollback)
	if rn.stopped {
		return rn.cancelRunning(ctx, rollback)
	}
	if !finished && failure == nil {
		return nil
	}
	if err := rn.reportAffected(ctx); err != nil {
		return err
	}
	switch {
	case failure != nil:
		return rn.enter(v1alpha1.StateFailedTemp, "", failure.Error())
	case rollback:
		return rn.enter(v1alpha1.StateRolledBack, "", fmt.Sprintf("rolled back: Service %s runs what it ran before %s", rn.op.Spec.ServiceName, rn.op.Name))
	}
	return rn.enter(v1alpha1.StateCompleted, "", completedMessage(rn))
}

// completedMessage says what a completed occurrence did.
func completedMessage(rn *run) string {
	switch {
	case keepsInstance(rn.op):
		return fmt.Sprintf("Service %s terminated: it is NOT_INSTANTIATED", rn.op.Spec.ServiceName)
	case rn.op.Spec.Type == v1alpha1.OperationTerminate:
		return fmt.Sprintf("Service %s terminated", rn.op.Spec.ServiceName)
	}
	return fmt.Sprintf("%s of Service %s completed", rn.op.Spec.Type, rn.op.Spec.ServiceName)
}

// decide carries out the decision on an occurrence in FAILED_TEMP: a retry (spec.retries
// raised) runs the failed part again, Rollback restores, Fail gives up; with rollback
// Auto a change that failed (not one cancelled) rolls back at once.
func (rn *run) decide(ctx context.Context) error {
	op := rn.op
	failedIn := previousState(op)
	switch {
	case op.Spec.Retries > op.Status.Retries:
		op.Status.Retries = op.Spec.Retries
		to := v1alpha1.StateProcessing
		if failedIn == v1alpha1.StateRollingBack {
			to = v1alpha1.StateRollingBack
		}
		return rn.enter(to, "", fmt.Sprintf("retry %d: running the steps that did not succeed again", op.Spec.Retries))
	case op.Spec.Resolution == v1alpha1.ResolutionRollback && failedIn != v1alpha1.StateRollingBack:
		// A rollback that failed waits in FAILED_TEMP too: a retry runs it again.
		return rn.enter(v1alpha1.StateRollingBack, "", "rolling back, as asked")
	case op.Spec.Resolution == v1alpha1.ResolutionFail:
		if err := rn.reportAffected(ctx); err != nil {
			return err
		}
		return rn.enter(v1alpha1.StateFailed, "", "failed, as asked: "+lastFailure(op))
	case failedIn == v1alpha1.StateProcessing && rollsBack(op) && autoRollback(op, rn.svc) && !cancelledNow(op):
		return rn.enter(v1alpha1.StateRollingBack, "", "rolling back by itself (rollback: Auto): "+lastFailure(op))
	}
	rn.after = time.Minute
	return nil
}

// previousState is the state an occurrence was in before its current one.
func previousState(op *v1alpha1.Operation) v1alpha1.OperationState {
	if n := len(op.Status.Transitions); n >= 2 {
		return op.Status.Transitions[n-2].State
	}
	return ""
}

// lastFailure is the message the occurrence entered FAILED_TEMP with.
func lastFailure(op *v1alpha1.Operation) string {
	for i := len(op.Status.Transitions) - 1; i >= 0; i-- {
		if op.Status.Transitions[i].State == v1alpha1.StateFailedTemp {
			return op.Status.Transitions[i].Message
		}
	}
	return op.Status.Message
}

// rollsBack tells whether an occurrence's type can be rolled back.
func rollsBack(op *v1alpha1.Operation) bool {
	switch op.Spec.Type {
	case v1alpha1.OperationInstantiate, v1alpha1.OperationScale, v1alpha1.OperationScaleToLevel, v1alpha1.OperationChangeFlavour,
		v1alpha1.OperationChangePackage, v1alpha1.OperationModify, v1alpha1.OperationOperate:
		return true
	}
	return false
}

// autoRollback tells whether a failed occurrence rolls back by itself: its own rollback
// policy, else its Service's.
func autoRollback(op *v1alpha1.Operation, svc *v1alpha1.Service) bool {
	if op.Spec.Rollback != "" {
		return op.Spec.Rollback == v1alpha1.RollbackAuto
	}
	return svc != nil && svc.Spec.Rollback == v1alpha1.RollbackAuto
}

// timeout is how long an occurrence waits for the Service or a hook: its own timeout,
// else its Service's.
func (rn *run) timeout() time.Duration {
	if t := rn.op.Spec.Timeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	if rn.svc != nil && rn.svc.Spec.Timeout != nil && rn.svc.Spec.Timeout.Duration > 0 {
		return rn.svc.Spec.Timeout.Duration
	}
	return v1alpha1.DefaultTimeout
}
