package lifecycle

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// A cancel (spec.cancel, SOL003 cancel) stops an occurrence: one still STARTING ends
// ROLLED_BACK having done nothing; one PROCESSING or ROLLING_BACK goes FAILED_TEMP — once
// its running step ended (GRACEFUL), or at once (FORCEFUL: the running step is recorded
// Failed; what it started in the pods, a hook that already runs, is not stopped). From
// FAILED_TEMP, retry, rollback and fail go on as after a failure, but a cancelled change
// does not roll back by itself. A cancel is carried out once — the condition Cancelled
// says when — and counts as carried out too when the occurrence stopped by itself first.

// cancelPending tells whether an occurrence was asked to cancel and was not yet.
func cancelPending(op *v1alpha1.Operation) bool {
	return op.Spec.Cancel != "" && !apimeta.IsStatusConditionTrue(op.Status.Conditions, v1alpha1.ConditionCancelled)
}

// cancelledNow tells whether an occurrence is in FAILED_TEMP because it was cancelled.
func cancelledNow(op *v1alpha1.Operation) bool {
	ready := apimeta.FindStatusCondition(op.Status.Conditions, v1alpha1.ConditionReady)
	return op.Status.OperationState == v1alpha1.StateFailedTemp && ready != nil && ready.Reason == v1alpha1.OccurrenceCancelled
}

// markCancelled records, as the occurrence enters a state, that its cancel is carried
// out (reason Cancelled), or moot: it got there by itself first.
func markCancelled(op *v1alpha1.Operation, to v1alpha1.OperationState, reason string) {
	message := fmt.Sprintf("cancel %s carried out: %s", op.Spec.Cancel, to)
	if reason != v1alpha1.OccurrenceCancelled {
		message = fmt.Sprintf("cancel %s asked, but the occurrence went %s by itself first", op.Spec.Cancel, to)
	}
	setCondition(op, v1alpha1.ConditionCancelled, metav1.ConditionTrue, v1alpha1.OccurrenceCancelled, message)
}

// cancelBeforeStart ends a STARTING occurrence asked to cancel: ROLLED_BACK, nothing done.
func (rn *run) cancelBeforeStart() error {
	return rn.enter(v1alpha1.StateRolledBack, v1alpha1.OccurrenceCancelled,
		fmt.Sprintf("cancelled (%s) before it started: nothing was done", rn.op.Spec.Cancel))
}

// cancelRunning stops a running occurrence (FAILED_TEMP). FORCEFUL records its running
// step Failed, and a run of a node operation that has not started yet does not start.
func (rn *run) cancelRunning(ctx context.Context, rollback bool) error {
	what := "after its running step"
	if rn.op.Spec.Cancel == v1alpha1.CancelForceful {
		what = "at once"
		if name := rn.abandonRunningStep(ctx, rollback); name != "" {
			what = fmt.Sprintf("at once, leaving step %q where it was", name)
		}
	}
	if err := rn.reportAffected(ctx); err != nil {
		return err
	}
	return rn.enter(v1alpha1.StateFailedTemp, v1alpha1.OccurrenceCancelled,
		fmt.Sprintf("cancelled (%s) %s, while %s", rn.op.Spec.Cancel, what, rn.op.Status.OperationState))
}

// abandonRunningStep records the running step (of the rollback, or not) Failed, and
// returns its name; a hook's or the occurrence's own run that is still Pending is marked
// Failed so that it never starts.
func (rn *run) abandonRunningStep(ctx context.Context, rollback bool) string {
	for i := len(rn.op.Status.Steps) - 1; i >= 0; i-- {
		rec := &rn.op.Status.Steps[i]
		if rec.Phase != v1alpha1.StepRunning || rec.Rollback != rollback {
			continue
		}
		now := rn.r.now()
		rec.Phase, rec.CompletionTime = v1alpha1.StepFailed, &now
		rec.Message = fmt.Sprintf("cancelled (FORCEFUL) while it ran: %s", rec.Message)
		rn.abandonRun(ctx, rec.Operation)
		return rec.Name
	}
	return ""
}

// abandonRun marks the run of a node operation Failed while it is Pending (not started
// in any pod).
func (rn *run) abandonRun(ctx context.Context, name string) {
	const message = "cancelled (FORCEFUL) before it ran"
	switch {
	case name == "":
	case name == rn.op.Name:
		if rn.op.Status.Phase == v1alpha1.OperationPending {
			rn.op.Status.Phase = v1alpha1.OperationFailed
		}
	default:
		hook := &v1alpha1.Operation{}
		if err := rn.r.Get(ctx, client.ObjectKey{Namespace: rn.op.Namespace, Name: name}, hook); err != nil || hook.Status.Phase != v1alpha1.OperationPending {
			return
		}
		patch := client.MergeFromWithOptions(hook.DeepCopy(), client.MergeFromWithOptimisticLock{})
		hook.Status.Phase, hook.Status.Message = v1alpha1.OperationFailed, message
		if err := rn.r.Status().Patch(ctx, hook, patch); err != nil {
			rn.r.Log.Info("the cancelled hook's run could not be marked Failed; it may still run", "operation", name, "error", err.Error())
		}
	}
}
