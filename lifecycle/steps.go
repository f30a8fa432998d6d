package lifecycle

import (
	"context"
	"fmt"
	"time"

	"calaf.io/calaf/api/v1alpha1"
)

// An occurrence is a list of steps recorded in its status. A step's record is written
// (Running) before the step acts, and the step is run again on every reconcile until it
// ends, so every step resumes where it was: after an operator restart, a step recorded
// Succeeded is never run again, and one recorded Running picks up its own trail (the
// Operation it started, the pods it chose, the generation it produced).

// step is one unit of work of an occurrence.
type step struct {
	name string
	run  func(ctx context.Context, rn *run, rec *v1alpha1.OperationStep) result
}

// result is where a step stands after a run.
type result struct {
	done, skipped bool
	// message says what the step did or waits for.
	message string
	// err is why the step failed.
	err error
}

func doneWith(format string, args ...any) result {
	return result{done: true, message: fmt.Sprintf(format, args...)}
}

func skipped(format string, args ...any) result {
	return result{done: true, skipped: true, message: fmt.Sprintf(format, args...)}
}

func waiting(format string, args ...any) result {
	return result{message: fmt.Sprintf(format, args...)}
}

func failed(format string, args ...any) result {
	return result{err: fmt.Errorf(format, args...)}
}

// stage expands into the steps of one part of an occurrence (the hooks of every node
// that has one, say) when it is reached.
type stage func(rn *run) []step

// one is a stage of a single step.
func one(s step) stage {
	return func(*run) []step { return []step{s} }
}

// stepFailure is a step that failed.
type stepFailure struct {
	step string
	err  error
}

func (f *stepFailure) Error() string { return failureMessage(f.step, f.err) }

// runSteps runs the first step of the stages that did not end: its record is written
// first, then it runs (and runs again on the following reconciles) until it ends. It
// reports finished once every step succeeded or was skipped, and the failure of one; a
// cancel lets the running step end, then stops (rn.stopped).
func (rn *run) runSteps(ctx context.Context, stages []stage, rollback bool) (bool, *stepFailure) {
	for _, st := range stages {
		for _, s := range st(rn) {
			rec := rn.record(s.name, rollback)
			switch {
			case rec != nil && (rec.Phase == v1alpha1.StepSucceeded || rec.Phase == v1alpha1.StepSkipped):
				continue
			case cancelPending(rn.op) && (rec == nil || rec.Phase == v1alpha1.StepFailed):
				rn.stopped = true // a GRACEFUL cancel: no step begins any more
				return false, nil
			case rec == nil:
				rn.begin(s.name, rollback)
				return false, nil
			case rec.Phase == v1alpha1.StepFailed:
				rn.restart(rec)
				return false, nil
			}
			if finished, failure := rn.runStep(ctx, s, rec); !finished || failure != nil {
				return false, failure
			}
		}
	}
	return true, nil
}

// runStep runs a step whose record says Running and records how it ended.
func (rn *run) runStep(ctx context.Context, s step, rec *v1alpha1.OperationStep) (bool, *stepFailure) {
	res := s.run(ctx, rn, rec)
	now := rn.r.now()
	switch {
	case res.err != nil:
		rec.Phase, rec.Message, rec.CompletionTime = v1alpha1.StepFailed, res.err.Error(), &now
		return false, &stepFailure{step: s.name, err: res.err}
	case !res.done:
		rec.Message = res.message
		setProgress(rn.op, fmt.Sprintf("%s: %s", s.name, res.message))
		return false, nil
	}
	rec.Phase, rec.Message, rec.CompletionTime = v1alpha1.StepSucceeded, res.message, &now
	if res.skipped {
		rec.Phase = v1alpha1.StepSkipped
	}
	rn.after = 0
	return true, nil
}

// record returns the record of a step, or nil.
func (rn *run) record(name string, rollback bool) *v1alpha1.OperationStep {
	for i := range rn.op.Status.Steps {
		if rec := &rn.op.Status.Steps[i]; rec.Name == name && rec.Rollback == rollback {
			return rec
		}
	}
	return nil
}

// begin records that a step starts.
func (rn *run) begin(name string, rollback bool) {
	now := rn.r.now()
	rn.op.Status.Steps = append(rn.op.Status.Steps, v1alpha1.OperationStep{
		Name: name, Phase: v1alpha1.StepRunning, Rollback: rollback, Attempt: rn.op.Status.Retries, StartTime: &now,
	})
	setProgress(rn.op, name+": starting")
	rn.after = 0
}

// restart records that a failed step runs again, in a retry: its trail starts over.
func (rn *run) restart(rec *v1alpha1.OperationStep) {
	now := rn.r.now()
	*rec = v1alpha1.OperationStep{Name: rec.Name, Phase: v1alpha1.StepRunning, Rollback: rec.Rollback, Attempt: rn.op.Status.Retries, StartTime: &now}
	setProgress(rn.op, rec.Name+": starting again")
	rn.after = 0
}

// elapsed is how long a step has run.
func (rn *run) elapsed(rec *v1alpha1.OperationStep) time.Duration {
	if rec.StartTime == nil {
		return 0
	}
	return rn.r.Now().Sub(rec.StartTime.Time)
}

// pastDeadline tells whether a step ran for longer than the occurrence's timeout.
func (rn *run) pastDeadline(rec *v1alpha1.OperationStep) bool {
	return rn.elapsed(rec) > rn.timeout()
}
