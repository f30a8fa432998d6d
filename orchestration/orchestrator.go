// Package orchestration runs the operations of a Service's node templates — TOSCA
// Standard lifecycle operations on deploy, the teardown operations before deletion, and
// any declared operation on demand (the Operation resource) — inside the pods the Service
// owns, with calaf-runner (package artifacts/runner; docs/orchestration.md). The Service
// reconciler (package controller) calls it with an Input per node and records the Result;
// this package never reaches back into the reconciler.
package orchestration

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/artifacts/protocol"
	"calaf.io/calaf/internal/jsonvalue"
	"calaf.io/calaf/internal/lru"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/render"
)

// EventRecorder records Events (k8s.io/client-go/tools/events).
type EventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{})
}

// Orchestrator runs operations in pods. Runs are asynchronous: Run starts a job and
// reports the node as not configured yet; when the job ends, notify asks for a reconcile
// of the Service, and the next Run records the results in the node's status. What ran
// where (per operation: fingerprint, pods, attempts) lives in the Service's status, so it
// survives operator restarts.
type Orchestrator struct {
	// client reads pods, ReplicaSets and Operations (from the cache) and writes the
	// status of Operations.
	client   client.Client
	executor Executor
	recorder EventRecorder
	metrics  *Metrics
	// notify asks for an immediate reconcile of a Service.
	notify func(namespace, name string) bool
	log    logr.Logger
	// podParallelism bounds the pods of one node that run at once.
	podParallelism int
	// baseBackoff and maxBackoff bound the wait before a failed operation is retried.
	baseBackoff, maxBackoff time.Duration

	mu   sync.Mutex
	jobs map[string]*job
	// done remembers the Operations whose run ended in this process (by UID), until the
	// cache shows their final phase.
	done *lru.Cache[bool]
	// records keeps the operation statuses this process recorded, by node (see restore).
	records *lru.Cache[[]v1alpha1.NodeOperationStatus]
	now     func() time.Time
}

// Options configure an Orchestrator; zero values take the defaults.
type Options struct {
	Recorder EventRecorder
	Metrics  *Metrics
	// Notify asks for an immediate reconcile of a Service (the reconciler's triggers).
	Notify func(namespace, name string) bool
	Log    logr.Logger
	// PodParallelism bounds the pods of one node that run at once (default 4).
	PodParallelism int
	// BaseBackoff and MaxBackoff bound the wait before a failed operation is retried
	// (default 5 s and 5 min).
	BaseBackoff, MaxBackoff time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// NewOrchestrator returns an orchestrator reading the cluster with c and running
// operations with executor.
func NewOrchestrator(c client.Client, executor Executor, opts Options) *Orchestrator {
	o := &Orchestrator{
		client: c, executor: executor, recorder: opts.Recorder, metrics: opts.Metrics, notify: opts.Notify, log: opts.Log,
		podParallelism: opts.PodParallelism, baseBackoff: opts.BaseBackoff, maxBackoff: opts.MaxBackoff, now: opts.Now,
		jobs: map[string]*job{}, done: lru.New[bool](4096), records: lru.New[[]v1alpha1.NodeOperationStatus](16384),
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.podParallelism <= 0 {
		o.podParallelism = 4
	}
	if o.baseBackoff <= 0 {
		o.baseBackoff = 5 * time.Second
	}
	if o.maxBackoff <= 0 {
		o.maxBackoff = 5 * time.Minute
	}
	o.maxBackoff = max(o.maxBackoff, o.baseBackoff)
	return o
}

// Run runs the operations a node is due: its lifecycle operations (create, configure,
// start) in every ready pod that has not run them with the current fingerprint, then the
// Operations requested for it. The Result is Done once every lifecycle operation ran
// everywhere it should; a Failure says the node failed (a failed operation whose retries
// are used up, or a broken artifact).
func (o *Orchestrator) Run(ctx context.Context, in Input) Result {
	r := newNodeRun(in)
	o.restore(r, r.key())
	configured, err := o.run(ctx, r)
	o.remember(r.st, r.key())
	return r.result(configured, err)
}

func (o *Orchestrator) run(ctx context.Context, r *nodeRun) (bool, error) {
	current := o.takeFinished(r.key())
	if current != nil && current.finished {
		if current.lifecycle {
			o.recordLifecycle(r, current)
		}
		current = nil
	}
	requests, err := o.requests(ctx, r.Service, r.Node.Name)
	if err != nil {
		return false, err
	}
	o.recordOnDemand(r, requests)
	if current != nil && current.lifecycle {
		// Its operations stay Running until it ends and its results are recorded.
		r.st.Message = current.message
		return false, nil
	}
	plans, failedOp, planErr := o.planLifecycle(r)
	if planErr != nil {
		// The package must change: record it as the operation's failure.
		message := r.Redact.String(planErr.Error())
		status := statusOf(r.st, failedOp)
		status.Phase, status.Message, status.Fingerprint, status.Pods, status.Failures = v1alpha1.OperationFailed, message, "", nil, 0
		pruneStatuses(r.Node, r.st, plansNamed(lifecycleOperations(r.Node)))
		o.failRequests(ctx, r, requests)
		return false, fmt.Errorf("%s", message)
	}
	pruneStatuses(r.Node, r.st, plans)
	return o.runPlans(ctx, r, current, plans, requests)
}

// runPlans starts what is due of the planned lifecycle operations, else the oldest
// on-demand request, and says whether the node is configured.
func (o *Orchestrator) runPlans(ctx context.Context, r *nodeRun, current *job, plans []*planned, requests *requestSet) (bool, error) {
	var pods *podSet
	hasWorkload := false
	if len(plans) > 0 || len(requests.pending) > 0 {
		var err error
		if pods, hasWorkload, err = selectPods(ctx, r.readerOr(o.client), r.Service.Namespace, r.Service.Name, r.Node, r.Live); err != nil {
			return false, err
		}
	}
	if len(plans) > 0 && !hasWorkload {
		return false, fmt.Errorf("node %s has lifecycle operations but no workload (Deployment, StatefulSet, DaemonSet or Job) whose pods could run them", r.Node.Name)
	}
	a := o.assess(r, plans, pods)
	switch {
	case current == nil && len(a.work) > 0:
		o.startLifecycle(r, plans, a.work, pods)
		return false, nil
	case len(a.work) > 0:
		r.st.Message = "waiting for " + current.message + " to end"
		return false, nil
	}
	if current == nil && !a.blocked() {
		o.startOnDemand(ctx, r, requests, pods)
	}
	o.failRequests(ctx, r, requests)
	switch {
	case a.failed != "":
		return false, fmt.Errorf("%s", a.failed)
	case a.waiting != "":
		r.st.Message = a.waiting
		return false, nil
	}
	return true, nil
}

// restore puts back the operation statuses this process recorded last for the node when
// the Service it reconciles is older: read from the cache, it may not show the status
// written a moment ago yet, and deciding on it would run an operation twice.
func (o *Orchestrator) restore(r *nodeRun, key string) {
	recorded, ok := o.records.Get(key)
	if !ok || apiequality.Semantic.DeepEqual(recorded, r.st.Operations) {
		return
	}
	r.st.Operations = copyOperations(recorded)
	r.mergeAttributes()
}

// remember records the node's operation statuses as this reconcile leaves them.
func (o *Orchestrator) remember(st *v1alpha1.NodeStatus, key string) {
	if len(st.Operations) == 0 {
		if _, ok := o.records.Get(key); !ok {
			return // nodes without operations cost nothing
		}
	}
	o.records.Put(key, copyOperations(st.Operations))
}

func copyOperations(ops []v1alpha1.NodeOperationStatus) []v1alpha1.NodeOperationStatus {
	if ops == nil {
		return nil
	}
	out := make([]v1alpha1.NodeOperationStatus, len(ops))
	for i := range ops {
		ops[i].DeepCopyInto(&out[i])
	}
	return out
}

// nodeKey identifies a node of a Service across reconciles.
func nodeKey(svc *v1alpha1.Service, node string) string {
	return string(svc.UID) + "/" + node
}

// takeFinished returns the node's job; a finished job is removed.
func (o *Orchestrator) takeFinished(key string) *job {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := o.jobs[key]
	if j != nil && j.isFinished() {
		delete(o.jobs, key)
	}
	return j
}

// planLifecycle plans the node's lifecycle operations; on error it names the operation.
func (o *Orchestrator) planLifecycle(r *nodeRun) ([]*planned, string, error) {
	var plans []*planned
	pc := r.planContext()
	for _, op := range lifecycleOperations(r.Node) {
		p, err := plan(pc, r.Node, op)
		if err != nil {
			return nil, op.QualifiedName(), err
		}
		plans = append(plans, p)
	}
	return plans, "", nil
}

// plansNamed stands in for the plans of operations that could not be planned (only their
// names matter to pruneStatuses).
func plansNamed(ops []render.Operation) []*planned {
	plans := make([]*planned, len(ops))
	for i, op := range ops {
		plans[i] = &planned{Name: op.QualifiedName()}
	}
	return plans
}

func (r *nodeRun) planContext() planContext {
	return planContext{
		files:      r.Files,
		revision:   r.Revision,
		service:    protocol.ServiceInfo{Name: r.Service.Name, Namespace: r.Service.Namespace, Revision: r.Revision},
		attributes: r.attributes,
	}
}

// statusOf returns the status entry of an operation, adding it when missing.
func statusOf(st *v1alpha1.NodeStatus, name string) *v1alpha1.NodeOperationStatus {
	for i := range st.Operations {
		if st.Operations[i].Name == name {
			return &st.Operations[i]
		}
	}
	st.Operations = append(st.Operations, v1alpha1.NodeOperationStatus{Name: name, Phase: v1alpha1.OperationPending})
	return &st.Operations[len(st.Operations)-1]
}

// onDemandName is the status entry of on-demand runs of an operation: the operation's
// own name, except for lifecycle operations (whose entry tracks the deploy runs).
func onDemandName(op render.Operation) string {
	if isLifecycle(op) {
		return op.QualifiedName() + " (on demand)"
	}
	return op.QualifiedName()
}

// pruneStatuses drops the entries of operations the node no longer has, and orders them:
// lifecycle operations first, in their order, then on-demand entries by name.
func pruneStatuses(node *render.Node, st *v1alpha1.NodeStatus, plans []*planned) {
	if len(st.Operations) == 0 {
		return
	}
	rank := map[string]int{}
	for i, p := range plans {
		rank[p.Name] = i
	}
	for _, op := range node.Operations {
		if _, ok := rank[onDemandName(op)]; !ok {
			rank[onDemandName(op)] = len(plans) + 1
		}
	}
	kept := st.Operations[:0]
	for _, op := range st.Operations {
		if _, ok := rank[op.Name]; ok {
			kept = append(kept, op)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		ri, rj := rank[kept[i].Name], rank[kept[j].Name]
		if ri != rj {
			return ri < rj
		}
		return kept[i].Name < kept[j].Name
	})
	if len(kept) == 0 {
		kept = nil
	}
	st.Operations = kept
}

// assessment is what the lifecycle operations of a node need now.
type assessment struct {
	// work lists, per pod, the operations due there (indexes into the plans, in order).
	work []podWork
	// failed is the message of an operation that failed for good (until a change).
	failed string
	// waiting says why due operations cannot run yet (inputs, backoff).
	waiting string
}

func (a *assessment) blocked() bool { return len(a.work) > 0 || a.waiting != "" }

// assess brings the status entries of the lifecycle operations up to date with their
// plans and the pods (a new fingerprint starts over; pods that are gone are forgotten)
// and works out what is due where. It changes the status only when something changed,
// so that a resync writes nothing.
func (o *Orchestrator) assess(r *nodeRun, plans []*planned, pods *podSet) *assessment {
	a := &assessment{}
	if len(plans) == 0 {
		return a
	}
	var ready []*corev1.Pod
	if pods != nil {
		ready = pods.ready
	}
	statuses, blocked := o.refresh(r, a, plans, pods)
	a.work = dueWork(a, plans, statuses, blocked, ready)
	for k, p := range plans {
		setPlanPhase(statuses[k], p, ready)
	}
	if a.failed != "" {
		a.work = nil
	}
	return a
}

// refresh brings each plan's status entry up to date (a new fingerprint starts over; pods
// that are gone are forgotten) and says why each cannot run now ("" when it can): failed
// for good, waiting for its inputs, or backing off after a failure.
func (o *Orchestrator) refresh(r *nodeRun, a *assessment, plans []*planned, pods *podSet) ([]*v1alpha1.NodeOperationStatus, []string) {
	now := o.now()
	statuses := make([]*v1alpha1.NodeOperationStatus, len(plans))
	blocked := make([]string, len(plans))
	for k, p := range plans {
		status := statusOf(r.st, p.Name)
		if status.Fingerprint != p.Fingerprint {
			attributes := status.Attributes
			*status = v1alpha1.NodeOperationStatus{Name: p.Name, Phase: v1alpha1.OperationPending, Fingerprint: p.Fingerprint, Attributes: attributes}
		}
		if p.Targets == TargetsAll && pods != nil {
			status.Pods = keepExisting(status.Pods, pods.existing)
		}
		statuses[k] = status
		switch {
		case status.Phase == v1alpha1.OperationFailed:
			blocked[k] = "failed"
			if a.failed == "" {
				a.failed = status.Message
			}
		case p.Waiting != "":
			blocked[k] = fmt.Sprintf("%s waits for its inputs: %s", p.Name, p.Waiting)
			// The attributes observed this reconcile feed the next render: come back soon.
			r.requeue(2 * time.Second)
		case status.Failures > 0:
			next := status.LastRunTime.Add(o.backoff(status.Failures))
			if now.Before(next) {
				blocked[k] = fmt.Sprintf("%s failed (attempt %d of %d), retrying in %v: %s", p.Name, status.Failures, p.Retries+1, next.Sub(now).Round(time.Second), status.Message)
				r.requeue(next.Sub(now))
			}
		}
	}
	return statuses, blocked
}

// dueWork lists, per ready pod, the operations due there in order, stopping at the first
// that cannot run (its reason becomes the assessment's waiting message); an operation
// that targets one pod is given to the first pod that needs it.
func dueWork(a *assessment, plans []*planned, statuses []*v1alpha1.NodeOperationStatus, blocked []string, ready []*corev1.Pod) []podWork {
	var work []podWork
	chosen := make([]bool, len(plans)) // a pod was chosen for a "one" operation
	for _, pod := range ready {
		var due []int
		for k, p := range plans {
			done := slices.Contains(statuses[k].Pods, podKey(pod, p.Container))
			if p.Targets == TargetsOne {
				done = done || len(statuses[k].Pods) > 0 || chosen[k]
			}
			if done {
				continue
			}
			if blocked[k] != "" {
				if blocked[k] != "failed" && a.waiting == "" {
					a.waiting = blocked[k]
				}
				break
			}
			if p.Targets == TargetsOne {
				chosen[k] = true
			}
			due = append(due, k)
		}
		if len(due) > 0 {
			work = append(work, podWork{pod: pod.Name, ops: due})
		}
	}
	return work
}

// setPlanPhase marks an operation Succeeded once it ran everywhere it should (every ready
// pod, or one), Pending otherwise; Failed stays.
func setPlanPhase(status *v1alpha1.NodeOperationStatus, p *planned, ready []*corev1.Pod) {
	complete := true
	if p.Targets == TargetsOne {
		complete = len(status.Pods) > 0 || len(ready) == 0
	} else {
		for _, pod := range ready {
			complete = complete && slices.Contains(status.Pods, podKey(pod, p.Container))
		}
	}
	switch {
	case status.Phase == v1alpha1.OperationFailed:
	case complete:
		status.Phase = v1alpha1.OperationSucceeded
	default:
		status.Phase = v1alpha1.OperationPending
	}
}

// backoff is the wait after the n-th consecutive failure.
func (o *Orchestrator) backoff(failures int32) time.Duration {
	d := o.baseBackoff
	for i := int32(1); i < failures && d < o.maxBackoff; i++ {
		d *= 2
	}
	return min(d, o.maxBackoff)
}

func keepExisting(pods []string, existing map[string]bool) []string {
	var kept []string
	for _, key := range pods {
		if existing[podOfKey(key)] {
			kept = append(kept, key)
		}
	}
	return kept
}

// withPod records that an operation succeeded in a pod (a key of podKey), replacing the
// entry of an earlier start of its container.
func withPod(pods []string, key string) []string {
	var out []string
	for _, k := range pods {
		if podOfKey(k) != podOfKey(key) {
			out = append(out, k)
		}
	}
	out = append(out, key)
	sort.Strings(out)
	return out
}

// recordLifecycle writes the results of a finished lifecycle job into the node's status:
// pods that succeeded, attributes set, failures counted against the retries; and records
// an Event per operation.
func (o *Orchestrator) recordLifecycle(r *nodeRun, j *job) {
	byOp := map[string][]runResult{}
	for _, res := range j.results {
		byOp[res.op] = append(byOp[res.op], res)
	}
	for _, p := range j.plans {
		results := byOp[p.Name]
		status := statusOf(r.st, p.Name)
		if status.Fingerprint != p.Fingerprint || len(results) == 0 {
			continue // the package changed while it ran: the new plan decides
		}
		o.recordRuns(r, status, p, results, j.finishedAt)
	}
	r.mergeAttributes()
}

// recordRuns records the runs of one lifecycle operation (its results, sorted by pod) in
// its status entry, and an Event.
func (o *Orchestrator) recordRuns(r *nodeRun, status *v1alpha1.NodeOperationStatus, p *planned, results []runResult, finishedAt time.Time) {
	failures := o.tally(results)
	for _, res := range results {
		if res.failed() {
			continue
		}
		status.Pods = withPod(status.Pods, res.key)
		if len(res.result.Attributes) > 0 && status.Attributes == nil {
			status.Attributes = map[string]apiextensionsv1.JSON{}
		}
		for name, value := range res.result.Attributes {
			status.Attributes[name] = jsonvalue.Encode(r.Redact.Value(value))
		}
	}
	finished := metav1.NewTime(finishedAt)
	status.LastRunTime = &finished
	if len(failures) == 0 {
		status.Failures = 0
		status.Phase = v1alpha1.OperationSucceeded
		status.Message = r.Redact.String(successMessage(results))
		o.event(r.Service, "Normal", "OperationSucceeded", r.Node.Name+" "+p.Name, status.Message+r.Redact.String(logTail(results)))
		return
	}
	status.Failures++
	status.Message = r.Redact.String(failureMessage(p.Name, failures, len(results)))
	status.Phase = v1alpha1.OperationPending
	if int(status.Failures) > p.Retries {
		status.Phase = v1alpha1.OperationFailed
	}
	o.event(r.Service, "Warning", "OperationFailed", r.Node.Name+" "+p.Name, status.Message)
}

// successMessage summarizes the pods an operation succeeded in.
func successMessage(results []runResult) string {
	var pods []string
	for _, r := range results {
		pods = append(pods, fmt.Sprintf("%s (%v)", r.pod, r.duration.Round(time.Millisecond)))
	}
	return fmt.Sprintf("%s succeeded in %s", results[0].op, strings.Join(pods, ", "))
}

// failureMessage words a failed operation: the first failure in full (error and stderr
// tail, their secrets hidden when the run came back: redactRun), and how many pods
// failed.
func failureMessage(op string, failures []runResult, total int) string {
	first := failures[0]
	msg := fmt.Sprintf("%s failed in pod %s: %s", op, first.pod, first.message())
	if len(failures) > 1 {
		msg += fmt.Sprintf(" (and in %d more of %d pods)", len(failures)-1, total)
	}
	return text.Truncate(msg, 1024)
}

// logTail is the last lines the artifact logged, for an Event.
func logTail(results []runResult) string {
	for i := len(results) - 1; i >= 0; i-- {
		if r := results[i].result; r != nil && len(r.Logs) > 0 {
			lines := r.Logs
			if len(lines) > 5 {
				lines = lines[len(lines)-5:]
			}
			return "; " + results[i].pod + " logged: " + strings.Join(lines, " | ")
		}
	}
	return ""
}

// event records an Event about obj. The action tells what ran ("RunOperation", or for
// a Service "node Interface.operation"): events/v1 folds an Event into an earlier one with
// the same object, reason and action as a series and keeps the earlier note, so the runs
// of different operations need actions of their own.
func (o *Orchestrator) event(obj runtime.Object, eventType, reason, action, message string) {
	if o.recorder == nil {
		return
	}
	o.recorder.Eventf(obj, nil, eventType, reason, text.Truncate(action, 128), "%s", text.Truncate(message, 1024))
}

// tally sorts the runs of an operation by pod, counts them in the metrics, and returns
// those that failed.
func (o *Orchestrator) tally(results []runResult) []runResult {
	sort.Slice(results, func(i, k int) bool { return results[i].pod < results[k].pod })
	var failures []runResult
	for _, res := range results {
		o.metrics.observeRun(res)
		if res.failed() {
			failures = append(failures, res)
		}
	}
	return failures
}
