package artifacts

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/controller"
	"calaf.io/calaf/render"
)

// teardownFingerprint marks the status entries of teardown runs, so that an earlier
// on-demand run of the same operation is not taken for one.
const teardownFingerprint = "teardown"

// Teardown runs a node's Standard stop and delete operations, in that order, once in each
// ready pod of the node (or one pod, as the artifact says) before the operator deletes the
// node's objects. It reports done once they ran, or when there are none or no pod to run
// them in. A failure is recorded in the node's status and an Event and reported as an
// error; it does not run again: a broken teardown must not keep a Service from going.
func (o *Orchestrator) Teardown(ctx context.Context, s *controller.Scope, node *render.Node, st *v1alpha1.NodeStatus) (bool, error) {
	o.init()
	ops := standardOperations(node, Teardown)
	if len(ops) == 0 {
		return true, nil
	}
	key := nodeKey(s.Service, node.Name) + "#teardown"
	// The Service may come from a cache that does not show the last status yet: what this
	// process recorded wins, so nothing runs twice.
	o.restore(s, node, st, key)
	defer o.remember(st, key)
	if j := o.takeFinished(key); j != nil {
		if !j.isFinished() {
			st.Message = j.message
			return false, nil
		}
		return true, o.recordTeardown(s, node, st, j)
	}
	if done, failed := tornDown(st, ops); done {
		return true, failed
	}

	pc := planContextOf(s, node)
	var plans []*planned
	for _, op := range ops {
		p, err := plan(pc, node, op)
		if err == nil && p.Waiting != "" {
			err = fmt.Errorf("its inputs are not available: %s", p.Waiting)
		}
		if err != nil {
			return true, o.failTeardown(s, node, st, op.QualifiedName(), s.Redact.String(err.Error()))
		}
		plans = append(plans, p)
	}
	pods, _, err := selectPods(ctx, o.Client, s.Service.Namespace, s.Service.Name, node, s.Live[node.Name])
	if err != nil {
		return false, err
	}
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
			o.markTeardown(st, p.Name, PhaseSucceeded, "not run: no ready pod")
		}
		return true, nil
	}
	var names []string
	for _, p := range plans {
		names = append(names, p.Name)
		o.markTeardown(st, p.Name, PhaseRunning, "")
	}
	j := &job{plans: plans, work: work, message: fmt.Sprintf("tearing down: running %s in %d pods", strings.Join(names, ", "), len(work))}
	st.Message = j.message
	o.Log.Info("running teardown operations", "service", s.Service.Namespace+"/"+s.Service.Name, "node", node.Name, "operations", names, "pods", len(work))
	o.start(key, j, runContextOf(s, node))
	return false, nil
}

// tornDown tells whether the teardown operations already ran (recorded in the status, so
// a restarted operator does not run them again), and the failure if one failed.
func tornDown(st *v1alpha1.NodeStatus, ops []render.Operation) (bool, error) {
	var failed error
	for _, op := range ops {
		status := findStatus(st, op.QualifiedName())
		if status == nil || status.Fingerprint != teardownFingerprint || (status.Phase != PhaseSucceeded && status.Phase != PhaseFailed) {
			return false, nil
		}
		if status.Phase == PhaseFailed && failed == nil {
			failed = fmt.Errorf("%s", status.Message)
		}
	}
	return true, failed
}

// recordTeardown writes the results of a finished teardown job into the node's status and
// records an Event per operation; it returns the first failure.
func (o *Orchestrator) recordTeardown(s *controller.Scope, node *render.Node, st *v1alpha1.NodeStatus, j *job) error {
	byOp := map[string][]runResult{}
	for _, r := range j.results {
		byOp[r.op] = append(byOp[r.op], r)
	}
	var first error
	for _, p := range j.plans {
		results := byOp[p.Name]
		sort.Slice(results, func(i, k int) bool { return results[i].pod < results[k].pod })
		var failures []runResult
		for _, r := range results {
			o.countRun(r)
			if r.failed() {
				failures = append(failures, r)
			}
		}
		switch {
		case len(results) == 0:
			o.markTeardown(st, p.Name, PhaseFailed, s.Redact.String(p.Name+" did not run: an earlier operation failed"))
		case len(failures) == 0:
			message := s.Redact.String(successMessage(results))
			o.markTeardown(st, p.Name, PhaseSucceeded, message)
			o.event(s.Service, "Normal", "OperationSucceeded", node.Name+" "+p.Name, "teardown: "+message+logTail(results))
			continue
		default:
			o.markTeardown(st, p.Name, PhaseFailed, s.Redact.String(failureMessage(p.Name, failures, len(results))))
		}
		message := findStatus(st, p.Name).Message
		o.event(s.Service, "Warning", "OperationFailed", node.Name+" "+p.Name, "teardown: "+message)
		if first == nil {
			first = fmt.Errorf("%s", message)
		}
	}
	return first
}

// failTeardown records an operation that could not be planned as failed.
func (o *Orchestrator) failTeardown(s *controller.Scope, node *render.Node, st *v1alpha1.NodeStatus, name, message string) error {
	o.markTeardown(st, name, PhaseFailed, message)
	o.event(s.Service, "Warning", "OperationFailed", node.Name+" "+name, "teardown: "+name+": "+message)
	return fmt.Errorf("%s: %s", name, message)
}

func (o *Orchestrator) markTeardown(st *v1alpha1.NodeStatus, name, phase, message string) {
	status := statusOf(st, name)
	now := metav1.NewTime(o.now())
	status.Fingerprint, status.Phase, status.Message, status.Pods = teardownFingerprint, phase, message, nil
	if phase == PhaseRunning {
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
