package orchestration

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// teardownFingerprint marks the status entries of teardown runs, so that an earlier
// on-demand run of the same operation is not taken for one.
const teardownFingerprint = "teardown"

// Teardown runs a node's Standard stop and delete operations, in that order, once in each
// ready pod of the node (or one pod, as the artifact says) before the operator deletes the
// node's objects. The Result is Done once they ran, or when there are none or no pod to
// run them in. A failure is recorded in the node's status and an Event and reported as
// the Failure; it does not run again: a broken teardown must not keep a Service from
// going.
func (o *Orchestrator) Teardown(ctx context.Context, in Input) Result {
	r := newNodeRun(in)
	ops := standardOperations(r.Node, Teardown)
	if len(ops) == 0 {
		return r.result(true, nil)
	}
	key := r.key() + "#teardown"
	// The Service may come from a cache that does not show the last status yet: what this
	// process recorded wins, so nothing runs twice.
	o.restore(r, key)
	done, err := o.teardown(ctx, r, key, ops)
	o.remember(r.st, key)
	return r.result(done, err)
}

func (o *Orchestrator) teardown(ctx context.Context, r *nodeRun, key string, ops []render.Operation) (bool, error) {
	if j := o.takeFinished(key); j != nil {
		if !j.isFinished() {
			r.st.Message = j.message
			return false, nil
		}
		return true, o.recordTeardown(r, j)
	}
	if done, failed := tornDown(r.st, ops); done {
		return true, failed
	}
	pc := r.planContext()
	var plans []*planned
	for _, op := range ops {
		p, err := plan(pc, r.Node, op)
		if err == nil && p.Waiting != "" {
			err = fmt.Errorf("its inputs are not available: %s", p.Waiting)
		}
		if err != nil {
			return true, o.failTeardown(r, op.QualifiedName(), r.Redact.String(err.Error()))
		}
		plans = append(plans, p)
	}
	pods, _, err := selectPods(ctx, r.readerOr(o.client), r.Service.Namespace, r.Service.Name, r.Node, r.Live)
	if err != nil {
		return false, err
	}
	return o.startTeardown(r, key, plans, pods), nil
}

// startTeardown starts a job running the teardown plans in the ready pods; with no ready
// pod there is nothing to run, and the node is done.
func (o *Orchestrator) startTeardown(r *nodeRun, key string, plans []*planned, pods *podSet) bool {
	var work []podWork
	for i, pod := range pods.ready {
		var due []int
		for k, p := range plans {
			if p.Targets != TargetsOne || i == 0 {
				due = append(due, k)
			}
		}
		work = append(work, podWork{pod: pod.Name, ops: due, target: pod})
	}
	if len(work) == 0 {
		for _, p := range plans {
			o.markTeardown(r.st, p.Name, v1alpha1.OperationSucceeded, "not run: no ready pod")
		}
		return true
	}
	var names []string
	for _, p := range plans {
		names = append(names, p.Name)
		o.markTeardown(r.st, p.Name, v1alpha1.OperationRunning, "")
	}
	j := &job{plans: plans, work: work, message: fmt.Sprintf("tearing down: running %s in %d pods", strings.Join(names, ", "), len(work))}
	r.st.Message = j.message
	o.log.Info("running teardown operations", "service", r.Service.Namespace+"/"+r.Service.Name, "node", r.Node.Name, "operations", names, "pods", len(work))
	o.start(key, j, r.runContext())
	return false
}

// tornDown tells whether the teardown operations already ran (recorded in the status, so
// a restarted operator does not run them again), and the failure if one failed.
func tornDown(st *v1alpha1.NodeStatus, ops []render.Operation) (bool, error) {
	var failed error
	for _, op := range ops {
		status := findStatus(st, op.QualifiedName())
		if status == nil || status.Fingerprint != teardownFingerprint || (status.Phase != v1alpha1.OperationSucceeded && status.Phase != v1alpha1.OperationFailed) {
			return false, nil
		}
		if status.Phase == v1alpha1.OperationFailed && failed == nil {
			failed = fmt.Errorf("%s", status.Message)
		}
	}
	return true, failed
}

// recordTeardown writes the results of a finished teardown job into the node's status and
// records an Event per operation; it returns the first failure.
func (o *Orchestrator) recordTeardown(r *nodeRun, j *job) error {
	byOp := map[string][]runResult{}
	for _, res := range j.results {
		byOp[res.op] = append(byOp[res.op], res)
	}
	var first error
	for _, p := range j.plans {
		results := byOp[p.Name]
		failures := o.tally(results)
		switch {
		case len(results) == 0:
			o.markTeardown(r.st, p.Name, v1alpha1.OperationFailed, r.Redact.String(p.Name+" did not run: an earlier operation failed"))
		case len(failures) == 0:
			message := r.Redact.String(successMessage(results))
			o.markTeardown(r.st, p.Name, v1alpha1.OperationSucceeded, message)
			o.event(r.Service, "Normal", "OperationSucceeded", r.Node.Name+" "+p.Name, "teardown: "+message+r.Redact.String(logTail(results)))
			continue
		default:
			o.markTeardown(r.st, p.Name, v1alpha1.OperationFailed, r.Redact.String(failureMessage(p.Name, failures, len(results))))
		}
		message := findStatus(r.st, p.Name).Message
		o.event(r.Service, "Warning", "OperationFailed", r.Node.Name+" "+p.Name, "teardown: "+message)
		if first == nil {
			first = fmt.Errorf("%s", message)
		}
	}
	return first
}

// failTeardown records an operation that could not be planned as failed.
func (o *Orchestrator) failTeardown(r *nodeRun, name, message string) error {
	o.markTeardown(r.st, name, v1alpha1.OperationFailed, message)
	o.event(r.Service, "Warning", "OperationFailed", r.Node.Name+" "+name, "teardown: "+name+": "+message)
	return fmt.Errorf("%s: %s", name, message)
}

func (o *Orchestrator) markTeardown(st *v1alpha1.NodeStatus, name string, phase v1alpha1.OperationPhase, message string) {
	status := statusOf(st, name)
	now := metav1.NewTime(o.now())
	status.Fingerprint, status.Phase, status.Message, status.Pods = teardownFingerprint, phase, message, nil
	if phase == v1alpha1.OperationRunning {
		status.Attempts++
	} else {
		status.LastRunTime = &now
	}
}

// findStatus returns the status entry of an operation, or nil.
func findStatus(st *v1alpha1.NodeStatus, name string) *v1alpha1.NodeOperationStatus {
	for i := range st.Operations {
		if st.Operations[i].Name == name {
			return &st.Operations[i]
		}
	}
	return nil
}
