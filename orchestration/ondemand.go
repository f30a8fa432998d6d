package orchestration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/artifacts/protocol"
	"calaf.io/calaf/internal/jsonvalue"
	"calaf.io/calaf/internal/text"
)

// On-demand (Day-2) operations: an Operation resource asks for one run of a named
// operation of a node. The Operation reconciler accepts it (owner reference to the
// Service, phase Pending) and asks for a reconcile of the Service; the Service's reconcile
// runs it through Run once the node is ready, so that it sees the same package, inputs
// and attributes as the lifecycle operations and its attributes flow into the same
// status. It runs at most once: if the operator restarts while it runs, it is marked
// Failed rather than run again.

// requestSet is the Operations of one node of a Service.
type requestSet struct {
	pending   []*v1alpha1.Operation // oldest first
	running   []*v1alpha1.Operation
	completed []*v1alpha1.Operation
}

// requests lists the Operations of a node (from the cache).
func (o *Orchestrator) requests(ctx context.Context, svc *v1alpha1.Service, node string) (*requestSet, error) {
	list := &v1alpha1.OperationList{}
	if err := o.client.List(ctx, list, client.InNamespace(svc.Namespace)); err != nil {
		return nil, fmt.Errorf("listing Operations: %w", err)
	}
	set := &requestSet{}
	for i := range list.Items {
		op := &list.Items[i]
		if op.Spec.ServiceName != svc.Name || op.Spec.Node != node || !ownedByService(op, svc) {
			continue
		}
		switch op.Status.Phase {
		case v1alpha1.OperationPending:
			set.pending = append(set.pending, op)
		case v1alpha1.OperationRunning:
			set.running = append(set.running, op)
		case v1alpha1.OperationSucceeded, v1alpha1.OperationFailed:
			set.completed = append(set.completed, op)
		}
	}
	sort.Slice(set.pending, func(i, j int) bool {
		a, b := set.pending[i], set.pending[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return set, nil
}

func ownedByService(op *v1alpha1.Operation, svc *v1alpha1.Service) bool {
	for _, ref := range op.OwnerReferences {
		if ref.UID == svc.UID {
			return true
		}
	}
	return false
}

// recordOnDemand records the latest completed Operation of each of the node's operations
// in the node's status (once: the entry remembers the Operation's name), so the
// attributes it set become the node's attributes.
func (o *Orchestrator) recordOnDemand(r *nodeRun, requests *requestSet) {
	latest := map[string]*v1alpha1.Operation{}
	for _, op := range requests.completed {
		if op.Status.CompletionTime == nil {
			continue
		}
		if prev, ok := latest[op.Spec.Operation]; !ok || prev.Status.CompletionTime.Before(op.Status.CompletionTime) {
			latest[op.Spec.Operation] = op
		}
	}
	changed := false
	for _, name := range slices.Sorted(maps.Keys(latest)) {
		request := latest[name]
		op, ok := findOperation(r.Node, name)
		if !ok {
			continue
		}
		marker := "operation:" + request.Name
		if request.Spec.Retries > 0 {
			marker += fmt.Sprintf("#%d", request.Spec.Retries)
		}
		status := statusOf(r.st, onDemandName(op))
		if status.Fingerprint == marker {
			continue
		}
		entry := v1alpha1.NodeOperationStatus{
			Name: status.Name, Phase: request.Status.Phase, Fingerprint: marker,
			Message: request.Status.Message, LastRunTime: request.Status.CompletionTime.DeepCopy(),
		}
		for _, result := range request.Status.Results {
			if !result.Succeeded {
				continue
			}
			entry.Pods = append(entry.Pods, result.Pod)
			for key, value := range result.Attributes {
				if entry.Attributes == nil {
					entry.Attributes = map[string]apiextensionsv1.JSON{}
				}
				entry.Attributes[key] = value
			}
		}
		*status = entry
		changed = true
	}
	if changed {
		r.mergeAttributes()
	}
}

// startOnDemand starts the oldest pending Operation of the node that can run.
func (o *Orchestrator) startOnDemand(ctx context.Context, r *nodeRun, requests *requestSet, pods *podSet) {
	for _, request := range requests.pending {
		if o.known(request) {
			continue // it ran: the cache does not show it yet
		}
		op, ok := findOperation(r.Node, request.Spec.Operation)
		if !ok {
			continue // failRequests says why
		}
		p, err := plan(r.planContext(), r.Node, op)
		if err != nil {
			o.completeRequest(ctx, request, v1alpha1.OperationFailed, r.Redact.String(err.Error()), nil)
			continue
		}
		if p.Waiting != "" {
			o.updateRequest(ctx, request, v1alpha1.OperationPending, text.Truncate(r.Redact.String("waiting for the operation's inputs: "+p.Waiting), 1024))
			r.requeue(5 * time.Second)
			return
		}
		if err := withRequestInputs(p, request); err != nil {
			o.completeRequest(ctx, request, v1alpha1.OperationFailed, err.Error(), nil)
			return
		}
		work := onDemandWork(p, pods)
		if len(work) == 0 {
			o.completeRequest(ctx, request, v1alpha1.OperationFailed, fmt.Sprintf("node %s has no ready pod to run %s in", r.Node.Name, p.Name), nil)
			continue
		}
		if !o.updateRequest(ctx, request, v1alpha1.OperationRunning, fmt.Sprintf("running %s in %d pods", p.Name, len(work))) {
			return
		}
		o.startRequest(r, request, p, work)
		return
	}
}

// withRequestInputs sets the inputs an Operation gives over those the template declares.
// An input whose template value is text stays text: 208 or true given for it (typed by a
// shell: `calaf run … -i mcc=208`) becomes "208" or "true".
func withRequestInputs(p *planned, request *v1alpha1.Operation) error {
	inputs := maps.Clone(p.Request.Inputs)
	if inputs == nil {
		inputs = map[string]any{}
	}
	for name, raw := range request.Spec.Inputs {
		var value any
		decoder := json.NewDecoder(bytes.NewReader(raw.Raw))
		decoder.UseNumber()
		if err := decoder.Decode(&value); err != nil {
			return fmt.Errorf("input %q is not valid JSON: %v", name, err)
		}
		if _, text := inputs[name].(string); text {
			switch v := value.(type) {
			case json.Number:
				value = v.String()
			case bool:
				value = strconv.FormatBool(v)
			}
		}
		inputs[name] = value
	}
	p.Request.Inputs = inputs
	return nil
}

// onDemandWork is one run in each ready pod, or in the first one when the artifact says.
func onDemandWork(p *planned, pods *podSet) []podWork {
	var work []podWork
	if pods == nil {
		return nil
	}
	for _, pod := range pods.ready {
		work = append(work, podWork{pod: pod.Name, ops: []int{0}, target: pod.DeepCopy()})
		if p.Targets == TargetsOne {
			break
		}
	}
	return work
}

// startRequest runs an Operation in the background as the node's job.
func (o *Orchestrator) startRequest(r *nodeRun, request *v1alpha1.Operation, p *planned, work []podWork) {
	j := &job{plans: []*planned{p}, work: work, message: "on-demand " + p.Name, operation: request.DeepCopy()}
	o.mu.Lock()
	o.jobs[r.key()] = j
	o.mu.Unlock()
	rc := r.runContext()
	o.log.Info("running an on-demand operation", "operation", request.Namespace+"/"+request.Name, "node", r.Node.Name, "name", p.Name, "pods", len(work))
	go func() {
		o.execute(j, rc)
		o.completeOnDemand(j, rc)
		o.finish(j, rc)
	}()
}

// completeOnDemand records the results of an on-demand job in its Operation.
func (o *Orchestrator) completeOnDemand(j *job, rc runContext) {
	results := make([]v1alpha1.PodResult, 0, len(j.results))
	failures := o.tally(j.results)
	for _, r := range j.results {
		pr := v1alpha1.PodResult{Pod: r.pod, Succeeded: !r.failed(), DurationMillis: r.duration.Milliseconds()}
		if r.failed() {
			pr.Message = text.Truncate(rc.redact.String(r.message()), 1024)
		}
		if r.result != nil {
			pr.Attributes = jsonvalue.Map(rc.redact.Value, r.result.Attributes)
			pr.Outputs = jsonvalue.Map(rc.redact.Value, r.result.Outputs)
			if n := len(r.result.Logs); n > 0 {
				pr.Log = protocol.Tail(rc.redact.String(strings.Join(r.result.Logs, "\n")), 2048)
				if !r.failed() {
					pr.Message = text.Truncate(rc.redact.String(r.result.Logs[n-1]), 256)
				}
			}
			pr.Stderr = protocol.Tail(rc.redact.String(r.result.Stderr), 1024)
		}
		results = append(results, pr)
	}
	phase, message := v1alpha1.OperationSucceeded, successMessage(j.results)
	if len(failures) > 0 {
		phase, message = v1alpha1.OperationFailed, failureMessage(j.plans[0].Name, failures, len(j.results))
	}
	o.completeRequest(context.Background(), j.operation, phase, rc.redact.String(message), results)
}

// failRequests fails the node's Operations that cannot run: those naming an operation the
// node does not have, and those that were running when the operator stopped (they are not
// run again).
func (o *Orchestrator) failRequests(ctx context.Context, r *nodeRun, requests *requestSet) {
	for _, request := range requests.pending {
		if _, ok := findOperation(r.Node, request.Spec.Operation); ok || o.known(request) {
			continue
		}
		var names []string
		for _, op := range r.Node.Operations {
			names = append(names, op.QualifiedName())
		}
		msg := fmt.Sprintf("node %s has no operation %s", r.Node.Name, request.Spec.Operation)
		if len(names) > 0 {
			msg += " (it has " + strings.Join(names, ", ") + ")"
		}
		o.completeRequest(ctx, request, v1alpha1.OperationFailed, msg, nil)
	}
	for _, request := range requests.running {
		if o.known(request) {
			continue
		}
		o.completeRequest(ctx, request, v1alpha1.OperationFailed,
			"interrupted: the operator stopped while it ran; an on-demand operation is not run again (it may have run in part): create a new Operation", nil)
	}
}

// runKey identifies one run of an Operation: a retry of its occurrence (spec.retries)
// runs it again.
func runKey(request *v1alpha1.Operation) string {
	if request.Spec.Retries == 0 {
		return string(request.UID)
	}
	return fmt.Sprintf("%s#%d", request.UID, request.Spec.Retries)
}

// known tells whether this process runs or ran this run of an Operation.
func (o *Orchestrator) known(request *v1alpha1.Operation) bool {
	if _, ok := o.done.Get(runKey(request)); ok {
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, j := range o.jobs {
		if j.operation != nil && runKey(j.operation) == runKey(request) {
			return true
		}
	}
	return false
}

// updateRequest moves an Operation to a non-final phase; it reports whether it did (a
// conflict means someone else changed it: the next reconcile looks again).
func (o *Orchestrator) updateRequest(ctx context.Context, request *v1alpha1.Operation, phase v1alpha1.OperationPhase, message string) bool {
	if request.Status.Phase == phase && request.Status.Message == message {
		return true
	}
	patch := client.MergeFromWithOptions(request.DeepCopy(), client.MergeFromWithOptimisticLock{})
	request.Status.Phase, request.Status.Message = phase, message
	if phase == v1alpha1.OperationRunning && request.Status.StartTime == nil {
		now := metav1.NewTime(o.now())
		request.Status.StartTime = &now
	}
	setOperationCondition(request)
	if err := o.client.Status().Patch(ctx, request, patch); err != nil {
		o.log.V(1).Info("updating an Operation", "operation", request.Namespace+"/"+request.Name, "error", err.Error())
		return false
	}
	return true
}

// completeRequest moves an Operation to its final phase, retrying on conflicts, and
// records an Event.
func (o *Orchestrator) completeRequest(ctx context.Context, request *v1alpha1.Operation, phase v1alpha1.OperationPhase, message string, results []v1alpha1.PodResult) {
	o.done.Put(runKey(request), true)
	now := metav1.NewTime(o.now())
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		current := &v1alpha1.Operation{}
		if err := o.client.Get(ctx, client.ObjectKeyFromObject(request), current); err != nil {
			return err
		}
		if runKey(current) != runKey(request) || current.Status.Phase == v1alpha1.OperationSucceeded || current.Status.Phase == v1alpha1.OperationFailed {
			return nil
		}
		patch := client.MergeFromWithOptions(current.DeepCopy(), client.MergeFromWithOptimisticLock{})
		current.Status.Phase, current.Status.Message, current.Status.Results = phase, message, results
		current.Status.CompletionTime = &now
		if current.Status.StartTime == nil {
			current.Status.StartTime = &now
		}
		setOperationCondition(current)
		return o.client.Status().Patch(ctx, current, patch)
	})
	if err != nil {
		o.log.Error(err, "recording the result of an Operation", "operation", request.Namespace+"/"+request.Name)
		return
	}
	eventType, reason := "Normal", "OperationSucceeded"
	if phase == v1alpha1.OperationFailed {
		eventType, reason = "Warning", "OperationFailed"
	}
	o.event(request, eventType, reason, "RunOperation", message)
}

// setOperationCondition sets the Ready condition of an Operation from its phase.
func setOperationCondition(op *v1alpha1.Operation) {
	status := metav1.ConditionFalse
	if op.Status.Phase == v1alpha1.OperationSucceeded {
		status = metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(&op.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionReady, Status: status, Reason: string(op.Status.Phase),
		Message: op.Status.Message, ObservedGeneration: op.Generation,
	})
}
