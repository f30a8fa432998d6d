// Package artifacts runs the operations of a Service's node templates — TOSCA Standard
// lifecycle operations on deploy, any declared operation on demand (the Operation
// resource) — inside the pods the Service owns, with calaf-runner (see package runner and
// docs/orchestration.md). It implements controller.Orchestrator.
package artifacts

import (
	"context"
	"fmt"
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
	"calaf.io/calaf/controller"
	"calaf.io/calaf/internal/lru"
	"calaf.io/calaf/render"
)

// Phases of NodeOperationStatus.
const (
	PhasePending   = "Pending"
	PhaseRunning   = "Running"
	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"
)

// EventRecorder records Events (k8s.io/client-go/tools/events).
type EventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{})
}

// redactor hides secret values in what goes to status and events (controller.Scope.Redact).
type redactor interface {
	String(string) string
	Value(any) any
}

// Orchestrator runs operations in pods. Runs are asynchronous: Run starts a job and
// reports the node as not configured yet; when the job ends, Notify asks for a reconcile
// of the Service, and the next Run records the results in the node's status. What ran
// where (per operation: fingerprint, pods, attempts) lives in the Service's status, so it
// survives operator restarts.
type Orchestrator struct {
	// Client reads pods, ReplicaSets and Operations (from the cache) and writes the
	// status of Operations.
	Client   client.Client
	Executor Executor
	Recorder EventRecorder
	Metrics  *controller.Metrics
	// Notify asks for an immediate reconcile of a Service (ServiceReconciler.Trigger).
	Notify func(namespace, name string) bool
	Log    logr.Logger
	// PodParallelism bounds the pods of one node that run at once (default 4).
	PodParallelism int
	// BaseBackoff and MaxBackoff bound the wait before a failed operation is retried.
	BaseBackoff, MaxBackoff time.Duration

	mu   sync.Mutex
	jobs map[string]*job
	// done remembers the Operations whose run ended in this process (by UID), until the
	// cache shows their final phase.
	done *lru.Cache[bool]
	// records keeps the operation statuses this process recorded, by node (see restore).
	records *lru.Cache[[]v1alpha1.NodeOperationStatus]
	now     func() time.Time
}

// NewOrchestrator returns an orchestrator running requests with executor.
func NewOrchestrator(c client.Client, executor Executor, recorder EventRecorder, metrics *controller.Metrics, log logr.Logger) *Orchestrator {
	registerMetrics()
	return &Orchestrator{
		Client: c, Executor: executor, Recorder: recorder, Metrics: metrics, Log: log,
		PodParallelism: 4, BaseBackoff: 5 * time.Second, MaxBackoff: 5 * time.Minute,
	}
}

func (o *Orchestrator) init() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.jobs == nil {
		o.jobs = map[string]*job{}
		o.done = lru.New[bool](4096)
		o.records = lru.New[[]v1alpha1.NodeOperationStatus](16384)
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.PodParallelism <= 0 {
		o.PodParallelism = 4
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 5 * time.Second
	}
	if o.MaxBackoff < o.BaseBackoff {
		o.MaxBackoff = o.BaseBackoff
	}
}

// Run runs the operations a node is due: its lifecycle operations (create, configure,
// start) in every ready pod that has not run them with the current fingerprint, then the
// Operations requested for it. It reports configured once every lifecycle operation ran
// everywhere it should; an error says the node failed (a failed operation whose retries
// are used up, or a broken artifact).
func (o *Orchestrator) Run(ctx context.Context, s *controller.Scope, node *render.Node, st *v1alpha1.NodeStatus) (bool, error) {
	o.init()
	key := nodeKey(s.Service, node.Name)
	o.restore(s, node, st, key)
	defer o.remember(st, key)
	current := o.takeFinished(key)
	if current != nil && current.finished {
		if current.lifecycle {
			o.recordLifecycle(s, node, st, current)
		}
		current = nil
	}

	requests, err := o.requests(ctx, s.Service, node.Name)
	if err != nil {
		return false, err
	}
	o.recordOnDemand(s, node, st, requests)
	if current != nil && current.lifecycle {
		// Its operations stay Running until it ends and its results are recorded.
		st.Message = current.message
		return false, nil
	}

	plans, failedOp, planErr := o.planLifecycle(s, node)
	if planErr != nil {
		// The package must change: record it as the operation's failure.
		message := s.Redact.String(planErr.Error())
		status := statusOf(st, failedOp)
		status.Phase, status.Message, status.Fingerprint, status.Pods, status.Failures = PhaseFailed, message, "", nil, 0
		pruneStatuses(node, st, plansNamed(lifecycleOperations(node)))
		o.failRequests(ctx, s, node, requests, nil)
		return false, fmt.Errorf("%s", message)
	}
	pruneStatuses(node, st, plans)

	var pods *podSet
	hasWorkload := false
	if len(plans) > 0 || len(requests.pending) > 0 {
		if pods, hasWorkload, err = selectPods(ctx, o.Client, s.Service.Namespace, s.Service.Name, node, s.Live[node.Name]); err != nil {
			return false, err
		}
	}
	if len(plans) > 0 && !hasWorkload {
		return false, fmt.Errorf("node %s has lifecycle operations but no workload (Deployment, StatefulSet, DaemonSet or Job) whose pods could run them", node.Name)
	}
	a := o.assess(s, st, plans, pods)

	switch {
	case current == nil && len(a.work) > 0:
		o.startLifecycle(s, node, st, plans, a.work, pods)
		return false, nil
	case len(a.work) > 0:
		st.Message = "waiting for " + current.message + " to end"
		return false, nil
	}
	if current == nil && !a.blocked() {
		o.startOnDemand(ctx, s, node, requests, pods)
	}
	o.failRequests(ctx, s, node, requests, pods)
	switch {
	case a.failed != "":
		return false, fmt.Errorf("%s", a.failed)
	case a.waiting != "":
		st.Message = a.waiting
		return false, nil
	}
	return true, nil
}

// restore puts back the operation statuses this process recorded last for the node when
// the Service it reconciles is older: read from the cache, it may not show the status
// written a moment ago yet, and deciding on it would run an operation twice.
func (o *Orchestrator) restore(s *controller.Scope, node *render.Node, st *v1alpha1.NodeStatus, key string) {
	recorded, ok := o.records.Get(key)
	if !ok || apiequality.Semantic.DeepEqual(recorded, st.Operations) {
		return
	}
	st.Operations = copyOperations(recorded)
	s.MergeOperationAttributes(node.Name, st)
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
func (o *Orchestrator) planLifecycle(s *controller.Scope, node *render.Node) ([]*planned, string, error) {
	var plans []*planned
	pc := planContextOf(s, node)
	for _, op := range lifecycleOperations(node) {
		p, err := plan(pc, node, op)
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

func planContextOf(s *controller.Scope, node *render.Node) planContext {
	return planContext{
		pkg:        s.Artifact.Package,
		revision:   s.Artifact.Revision,
		service:    protocol.ServiceInfo{Name: s.Service.Name, Namespace: s.Service.Namespace, Revision: s.Artifact.Revision},
		attributes: s.Attributes[node.Name],
	}
}

// statusOf returns the status entry of an operation, adding it when missing.
func statusOf(st *v1alpha1.NodeStatus, name string) *v1alpha1.NodeOperationStatus {
	for i := range st.Operations {
		if st.Operations[i].Name == name {
			return &st.Operations[i]
		}
	}
	st.Operations = append(st.Operations, v1alpha1.NodeOperationStatus{Name: name, Phase: PhasePending})
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
func (o *Orchestrator) assess(s *controller.Scope, st *v1alpha1.NodeStatus, plans []*planned, pods *podSet) *assessment {
	a := &assessment{}
	if len(plans) == 0 {
		return a
	}
	now := o.now()
	statuses := make([]*v1alpha1.NodeOperationStatus, len(plans))
	blocked := make([]string, len(plans)) // why op k cannot run now ("" if it can)
	for k, p := range plans {
		status := statusOf(st, p.Name)
		if status.Fingerprint != p.Fingerprint {
			attributes := status.Attributes
			*status = v1alpha1.NodeOperationStatus{Name: p.Name, Phase: PhasePending, Fingerprint: p.Fingerprint, Attributes: attributes}
		}
		if p.Targets == TargetsAll && pods != nil {
			status.Pods = keepExisting(status.Pods, pods.existing)
		}
		statuses[k] = status
		switch {
		case status.Phase == PhaseFailed:
			blocked[k] = "failed"
			if a.failed == "" {
				a.failed = status.Message
			}
		case p.Waiting != "":
			blocked[k] = fmt.Sprintf("%s waits for its inputs: %s", p.Name, p.Waiting)
			// The attributes observed this reconcile feed the next render: come back soon.
			requeue(s, 2*time.Second)
		case status.Failures > 0:
			next := status.LastRunTime.Add(o.backoff(status.Failures))
			if now.Before(next) {
				blocked[k] = fmt.Sprintf("%s failed (attempt %d of %d), retrying in %v: %s", p.Name, status.Failures, p.Retries+1, next.Sub(now).Round(time.Second), status.Message)
				requeue(s, next.Sub(now))
			}
		}
	}
	chosen := make([]bool, len(plans)) // a pod was chosen for a "one" operation
	var ready []*corev1.Pod
	if pods != nil {
		ready = pods.ready
	}
	for _, pod := range ready {
		var due []int
		for k, p := range plans {
			done := contains(statuses[k].Pods, podKey(pod, p.Container))
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
			a.work = append(a.work, podWork{pod: pod.Name, ops: due})
		}
	}
	for k, p := range plans {
		status := statuses[k]
		complete := true
		if p.Targets == TargetsOne {
			complete = len(status.Pods) > 0 || len(ready) == 0
		} else {
			for _, pod := range ready {
				complete = complete && contains(status.Pods, podKey(pod, p.Container))
			}
		}
		switch {
		case status.Phase == PhaseFailed:
		case complete:
			status.Phase = PhaseSucceeded
		default:
			status.Phase = PhasePending
		}
	}
	if a.failed != "" {
		a.work = nil
	}
	return a
}

// requeue asks for a reconcile after d at the latest.
func requeue(s *controller.Scope, d time.Duration) {
	if d < time.Second {
		d = time.Second
	}
	if s.RequeueAfter == 0 || d < s.RequeueAfter {
		s.RequeueAfter = d
	}
}

// backoff is the wait after the n-th consecutive failure.
func (o *Orchestrator) backoff(failures int32) time.Duration {
	d := o.BaseBackoff
	for i := int32(1); i < failures && d < o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, o.MaxBackoff)
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

func contains(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}
	return false
}

// recordLifecycle writes the results of a finished lifecycle job into the node's status:
// pods that succeeded, attributes set, failures counted against the retries; and records
// an Event per operation.
func (o *Orchestrator) recordLifecycle(s *controller.Scope, node *render.Node, st *v1alpha1.NodeStatus, j *job) {
	byOp := map[string][]runResult{}
	for _, r := range j.results {
		byOp[r.op] = append(byOp[r.op], r)
	}
	for _, p := range j.plans {
		results := byOp[p.Name]
		status := statusOf(st, p.Name)
		if status.Fingerprint != p.Fingerprint || len(results) == 0 {
			continue // the package changed while it ran: the new plan decides
		}
		sort.Slice(results, func(i, k int) bool { return results[i].pod < results[k].pod })
		var failures []runResult
		var succeeded []string
		for _, r := range results {
			o.countRun(r)
			if r.failed() {
				failures = append(failures, r)
				continue
			}
			status.Pods = withPod(status.Pods, r.key)
			succeeded = append(succeeded, r.pod)
			if len(r.result.Attributes) > 0 && status.Attributes == nil {
				status.Attributes = map[string]apiextensionsv1.JSON{}
			}
			for name, value := range r.result.Attributes {
				status.Attributes[name] = toJSON(s.Redact.Value(value))
			}
		}
		finished := metav1.NewTime(j.finishedAt)
		status.LastRunTime = &finished
		if len(failures) == 0 {
			status.Failures = 0
			status.Phase = PhaseSucceeded
			status.Message = s.Redact.String(successMessage(results))
			o.event(s.Service, "Normal", "OperationSucceeded", node.Name+" "+p.Name, status.Message+logTail(results))
			continue
		}
		status.Failures++
		status.Message = s.Redact.String(failureMessage(p.Name, failures, len(results)))
		if int(status.Failures) > p.Retries {
			status.Phase = PhaseFailed
		} else {
			status.Phase = PhasePending
		}
		o.event(s.Service, "Warning", "OperationFailed", node.Name+" "+p.Name, status.Message)
	}
	s.MergeOperationAttributes(node.Name, st)
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
// tail), and how many pods failed.
func failureMessage(op string, failures []runResult, total int) string {
	first := failures[0]
	msg := fmt.Sprintf("%s failed in pod %s: %s", op, first.pod, first.message())
	if len(failures) > 1 {
		msg += fmt.Sprintf(" (and in %d more of %d pods)", len(failures)-1, total)
	}
	return truncate(msg, 1024)
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
	if o.Recorder == nil {
		return
	}
	o.Recorder.Eventf(obj, nil, eventType, reason, truncate(action, 128), "%s", truncate(message, 1024))
}

func (o *Orchestrator) countRun(r runResult) {
	observeRun(r)
	if o.Metrics == nil {
		return
	}
	if r.failed() {
		o.Metrics.CountOperation(fmt.Errorf("%s", r.message()))
	} else {
		o.Metrics.CountOperation(nil)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
