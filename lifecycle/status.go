package lifecycle

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
)

// Every state an occurrence enters, every condition it carries and every Event of a
// transition is worded here.

// maxTransitions bounds the transitions an occurrence records (retries add two each).
const maxTransitions = 64

// allowed lists the SOL003 transitions: from a state, the states it may go to.
var allowed = map[v1alpha1.OperationState][]v1alpha1.OperationState{
	"":                        {v1alpha1.StateStarting, v1alpha1.StateFailed},
	v1alpha1.StateStarting:    {v1alpha1.StateProcessing, v1alpha1.StateFailed, v1alpha1.StateRolledBack},
	v1alpha1.StateProcessing:  {v1alpha1.StateCompleted, v1alpha1.StateFailedTemp},
	v1alpha1.StateFailedTemp:  {v1alpha1.StateProcessing, v1alpha1.StateRollingBack, v1alpha1.StateFailed},
	v1alpha1.StateRollingBack: {v1alpha1.StateRolledBack, v1alpha1.StateFailedTemp},
}

// reasons are the condition reasons and Event reasons of the states.
var reasons = map[v1alpha1.OperationState]string{
	v1alpha1.StateStarting:    v1alpha1.OccurrenceQueued,
	v1alpha1.StateProcessing:  v1alpha1.OccurrenceProcessing,
	v1alpha1.StateCompleted:   v1alpha1.OccurrenceCompleted,
	v1alpha1.StateFailedTemp:  v1alpha1.OccurrenceFailedTemp,
	v1alpha1.StateFailed:      v1alpha1.OccurrenceFailed,
	v1alpha1.StateRollingBack: v1alpha1.OccurrenceRollingBack,
	v1alpha1.StateRolledBack:  v1alpha1.OccurrenceRolledBack,
}

// transitionError is a transition SOL003 does not allow (a bug, never a request).
type transitionError struct {
	from, to v1alpha1.OperationState
}

func (e *transitionError) Error() string {
	return fmt.Sprintf("no transition from %q to %s", e.from, e.to)
}

// event is an Event to record once the status that causes it is written.
type event struct {
	eventType, reason, action, note string
}

// enter moves an occurrence to a state: it records the transition, the conditions and
// the times, and returns the Event that tells of it. reason, when set, overrides the
// state's condition reason (Refused).
func enter(op *v1alpha1.Operation, to v1alpha1.OperationState, reason, message string, now metav1.Time) (event, error) {
	from := op.Status.OperationState
	if !allowedTransition(from, to) {
		return event{}, &transitionError{from: from, to: to}
	}
	message = text.Truncate(message, 1024)
	op.Status.OperationState, op.Status.Message = to, message
	sequence := nextSequence(op)
	op.Status.Transitions = append(op.Status.Transitions, v1alpha1.StateTransition{State: to, Time: metav1.NewMicroTime(now.Time), Message: message, Sequence: sequence})
	if n := len(op.Status.Transitions); n > maxTransitions {
		op.Status.Transitions = op.Status.Transitions[n-maxTransitions:]
	}
	if to == v1alpha1.StateProcessing && op.Status.StartTime == nil {
		op.Status.StartTime = now.DeepCopy()
	}
	if to.Final() {
		op.Status.CompletionTime = now.DeepCopy()
		settlePhase(op)
	}
	if reason == "" {
		reason = reasons[to]
	}
	setConditions(op, reason, message)
	eventType := "Normal"
	if to == v1alpha1.StateFailedTemp || to == v1alpha1.StateFailed || to == v1alpha1.StateRolledBack {
		eventType = "Warning"
	}
	action := fmt.Sprintf("%s#%d", to, sequence)
	return event{eventType: eventType, reason: reasons[to], action: action, note: fmt.Sprintf("%s %s: %s", op.Spec.Type, to, message)}, nil
}

// Sequence is the sequence number of an occurrence's i-th recorded transition: its own,
// or, recorded before transitions had one, its position from 1.
func Sequence(op *v1alpha1.Operation, i int) int64 {
	if seq := op.Status.Transitions[i].Sequence; seq > 0 {
		return seq
	}
	return int64(i + 1)
}

// nextSequence is the sequence number of the occurrence's next transition.
func nextSequence(op *v1alpha1.Operation) int64 {
	if n := len(op.Status.Transitions); n > 0 {
		return Sequence(op, n-1) + 1
	}
	return 1
}

// settlePhase gives a CUSTOM occurrence that ends without having run (refused, failed
// for good) the run phase Failed, which `calaf run --wait` and the orchestrator read.
func settlePhase(op *v1alpha1.Operation) {
	if op.Spec.Type != v1alpha1.OperationCustom && op.Spec.Type != "" {
		return
	}
	switch {
	case op.Status.OperationState == v1alpha1.StateCompleted:
		op.Status.Phase = v1alpha1.OperationSucceeded
	case op.Status.Phase != v1alpha1.OperationSucceeded:
		op.Status.Phase = v1alpha1.OperationFailed
	}
}

func allowedTransition(from, to v1alpha1.OperationState) bool {
	for _, next := range allowed[from] {
		if next == to {
			return true
		}
	}
	return false
}

// setConditions sets the conditions of an occurrence from its state: Ready (True once
// COMPLETED), Reconciling (while it runs or waits for its turn), Stalled (FAILED_TEMP:
// it waits for a retry, a rollback or a fail).
func setConditions(op *v1alpha1.Operation, reason, message string) {
	state := op.Status.OperationState
	ready := metav1.ConditionFalse
	if state == v1alpha1.StateCompleted {
		ready = metav1.ConditionTrue
	}
	setCondition(op, v1alpha1.ConditionReady, ready, reason, message)
	switch state {
	case v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateRollingBack:
		setCondition(op, v1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, message)
	default:
		apimeta.RemoveStatusCondition(&op.Status.Conditions, v1alpha1.ConditionReconciling)
	}
	if state == v1alpha1.StateFailedTemp {
		setCondition(op, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason, message+" (waiting for a retry, a rollback or a fail)")
	} else {
		apimeta.RemoveStatusCondition(&op.Status.Conditions, v1alpha1.ConditionStalled)
	}
}

// setQueued says that an occurrence waits for another one of its Service.
func setQueued(op *v1alpha1.Operation, active *v1alpha1.Operation) {
	message := fmt.Sprintf("queued: waiting for %s (%s, %s) of Service %s", active.Name, active.Spec.Type, active.Status.OperationState, op.Spec.ServiceName)
	op.Status.Message = message
	setConditions(op, v1alpha1.OccurrenceQueued, message)
}

// setProgress words where a running occurrence stands (its current step), keeping its
// state.
func setProgress(op *v1alpha1.Operation, message string) {
	message = text.Truncate(message, 1024)
	op.Status.Message = message
	setConditions(op, reasons[op.Status.OperationState], message)
}

func setCondition(op *v1alpha1.Operation, conditionType string, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&op.Status.Conditions, metav1.Condition{
		Type: conditionType, Status: status, Reason: reason, Message: text.Truncate(message, 1024), ObservedGeneration: op.Generation,
	})
}

// failureMessage words a failed step for FAILED_TEMP.
func failureMessage(step string, err error) string {
	return fmt.Sprintf("step %q failed: %v", step, err)
}
