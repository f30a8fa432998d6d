package lifecycle

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
)

// counted is a step that counts its runs and ends as told.
type counted struct {
	runs int
	next func(rec *v1alpha1.OperationStep) result
}

func (c *counted) step(name string) step {
	return step{name: name, run: func(_ context.Context, _ *run, rec *v1alpha1.OperationStep) result {
		c.runs++
		return c.next(rec)
	}}
}

// The step engine writes a step's record before the step acts, resumes a step recorded
// Running (each reconcile, and after a restart, with its own trail), never runs a step
// recorded Succeeded again, and runs a failed step again only in a retry, as a new
// attempt.
func TestStepsResumeAndNeverRepeat(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &Reconciler{Now: func() time.Time { return now }}
	op := &v1alpha1.Operation{Spec: v1alpha1.OperationSpec{Type: v1alpha1.OperationScale}}
	first := &counted{next: func(rec *v1alpha1.OperationStep) result {
		if rec.Generation == 0 {
			rec.Generation = 7 // its trail: what it did, kept for the next runs
			return waiting("changed")
		}
		return doneWith("healthy at %d", rec.Generation)
	}}
	second := &counted{next: func(*v1alpha1.OperationStep) result { return failed("broken") }}
	stages := func() []stage { return []stage{one(first.step("first")), one(second.step("second"))} }
	// reconcile runs the engine once on a copy of the stored occurrence (as a restarted
	// operator reads it) and stores the result.
	reconcile := func() (bool, *stepFailure) {
		rn := &run{r: r, op: op.DeepCopy()}
		finished, failure := rn.runSteps(context.Background(), stages(), false)
		op = rn.op
		return finished, failure
	}

	if finished, failure := reconcile(); finished || failure != nil || first.runs != 0 || len(op.Status.Steps) != 1 || op.Status.Steps[0].Phase != v1alpha1.StepRunning {
		t.Fatalf("begin: the record must be written before the step runs: %v %v runs %d, %+v", finished, failure, first.runs, op.Status.Steps)
	}
	reconcile()
	if first.runs != 1 || op.Status.Steps[0].Generation != 7 || op.Status.Steps[0].Phase != v1alpha1.StepRunning {
		t.Fatalf("first run: %d runs, %+v", first.runs, op.Status.Steps)
	}
	reconcile() // resumes with its trail and ends; the second step begins
	if first.runs != 2 || op.Status.Steps[0].Phase != v1alpha1.StepSucceeded || op.Status.Steps[0].Message != "healthy at 7" || len(op.Status.Steps) != 2 {
		t.Fatalf("resume: %d runs, %+v", first.runs, op.Status.Steps)
	}
	_, failure := reconcile()
	if failure == nil || failure.Error() != `step "second" failed: broken` || op.Status.Steps[1].Phase != v1alpha1.StepFailed {
		t.Fatalf("failure: %v, %+v", failure, op.Status.Steps)
	}
	if first.runs != 2 {
		t.Errorf("a step recorded Succeeded ran again: %d runs", first.runs)
	}

	// A retry: the failed step starts over as attempt 1; the first does not run again.
	op.Status.Retries = 1
	second.next = func(*v1alpha1.OperationStep) result { return doneWith("fixed") }
	reconcile()
	if rec := op.Status.Steps[1]; rec.Phase != v1alpha1.StepRunning || rec.Attempt != 1 || rec.Message != "" {
		t.Fatalf("restart: %+v", rec)
	}
	finished, failure := reconcile()
	if !finished || failure != nil || first.runs != 2 || second.runs != 2 || op.Status.Steps[1].Phase != v1alpha1.StepSucceeded {
		t.Fatalf("retry: %v %v, runs %d/%d, %+v", finished, failure, first.runs, second.runs, op.Status.Steps)
	}
	if finished, _ := reconcile(); !finished || first.runs != 2 || second.runs != 2 {
		t.Errorf("a finished occurrence ran a step again: runs %d/%d", first.runs, second.runs)
	}
}

// Only the transitions of SOL003 are taken; any other is an error, never a state.
func TestTransitions(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	op := &v1alpha1.Operation{Spec: v1alpha1.OperationSpec{Type: v1alpha1.OperationScale}}
	for _, to := range []v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateFailedTemp,
		v1alpha1.StateRollingBack, v1alpha1.StateFailedTemp, v1alpha1.StateProcessing, v1alpha1.StateCompleted} {
		if _, err := enter(op, to, "", "m", now); err != nil {
			t.Fatalf("to %s: %v", to, err)
		}
	}
	var transition *transitionError
	for _, to := range []v1alpha1.OperationState{v1alpha1.StateRollingBack, v1alpha1.StateProcessing, v1alpha1.StateFailed} {
		if _, err := enter(op, to, "", "m", now); !errors.As(err, &transition) {
			t.Errorf("COMPLETED → %s: %v", to, err)
		}
	}
	for _, c := range []struct{ from, to v1alpha1.OperationState }{
		{v1alpha1.StateProcessing, v1alpha1.StateFailed}, {v1alpha1.StateProcessing, v1alpha1.StateRolledBack},
		{v1alpha1.StateStarting, v1alpha1.StateCompleted}, {v1alpha1.StateRollingBack, v1alpha1.StateCompleted},
	} {
		op := &v1alpha1.Operation{Status: v1alpha1.OperationStatus{OperationState: c.from}}
		if _, err := enter(op, c.to, "", "m", now); err == nil {
			t.Errorf("%s → %s was allowed", c.from, c.to)
		}
	}
	if len(op.Status.Transitions) != 7 || op.Status.CompletionTime == nil || op.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("after COMPLETED: %+v", op.Status)
	}
}
