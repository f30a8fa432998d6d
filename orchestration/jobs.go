package orchestration

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/artifacts/protocol"
)

// execGrace is how long the operator waits for a result past an operation's timeout
// (the runner stops the operation at the timeout itself).
const execGrace = 30 * time.Second

// job is a run of operations on one node, in the background.
type job struct {
	lifecycle bool
	plans     []*planned
	work      []podWork
	message   string
	// operation is the Operation an on-demand job runs.
	operation *v1alpha1.Operation

	mu         sync.Mutex
	finished   bool
	finishedAt time.Time
	results    []runResult
}

func (j *job) isFinished() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.finished
}

// podWork is the operations due in one pod, in order: each runs after the previous one
// succeeded there.
type podWork struct {
	pod    string
	ops    []int
	target *corev1.Pod
}

// runResult is the outcome of one operation in one pod.
type runResult struct {
	op, pod  string
	key      string // the pod's key (podKey) when the run started
	result   *protocol.Result
	err      error
	timing   Timing
	duration time.Duration
}

func (r runResult) failed() bool {
	return r.err != nil || r.result == nil || r.result.Failed()
}

// message is the error of a failed run, with the tail of stderr.
func (r runResult) message() string {
	if r.err != nil {
		return r.err.Error()
	}
	if r.result == nil {
		return "no result"
	}
	msg := r.result.Error
	if stderr := strings.TrimSpace(r.result.Stderr); stderr != "" && !strings.Contains(msg, stderr) {
		msg += "; stderr: " + protocol.Tail(stderr, 512)
	}
	return msg
}

// runContext is what a job needs from the reconcile that started it.
type runContext struct {
	namespace, service string
	impersonate        string
	// cluster is where the pods run; nil for the operator's cluster.
	cluster    *Cluster
	attributes map[string]any
	redact     Redactor
}

func (r *nodeRun) runContext() runContext {
	rc := runContext{namespace: r.Service.Namespace, service: r.Service.Name, redact: r.Redact, attributes: maps.Clone(r.attributes),
		impersonate: r.Impersonate, cluster: r.Cluster}
	// In a target cluster, operations run as its kubeconfig's identity.
	if sa := r.Service.Spec.ServiceAccountName; sa != "" && rc.impersonate == "" && rc.cluster == nil {
		rc.impersonate = fmt.Sprintf("system:serviceaccount:%s:%s", r.Service.Namespace, sa)
	}
	return rc
}

// startLifecycle starts a job running the due lifecycle operations, and marks them
// Running in the node's status.
func (o *Orchestrator) startLifecycle(r *nodeRun, plans []*planned, work []podWork, pods *podSet) {
	now := metav1.NewTime(o.now())
	names := map[string]bool{}
	var ops []string
	for i := range work {
		work[i].target = pods.pod(work[i].pod)
		for _, k := range work[i].ops {
			if !names[plans[k].Name] {
				names[plans[k].Name] = true
				ops = append(ops, plans[k].Name)
				status := statusOf(r.st, plans[k].Name)
				status.Phase, status.LastRunTime = v1alpha1.OperationRunning, &now
				status.Attempts++
			}
		}
	}
	j := &job{lifecycle: true, plans: plans, work: work}
	j.message = fmt.Sprintf("running %s in %d pods", strings.Join(ops, ", "), len(work))
	if len(work) == 1 {
		j.message = fmt.Sprintf("running %s in pod %s", strings.Join(ops, ", "), work[0].pod)
	}
	r.st.Message = j.message
	o.log.Info("running lifecycle operations", "service", r.Service.Namespace+"/"+r.Service.Name, "node", r.Node.Name, "operations", ops, "pods", len(work))
	o.start(r.key(), j, r.runContext())
}

// start runs a job in the background as the node's (key) job.
func (o *Orchestrator) start(key string, j *job, rc runContext) {
	o.mu.Lock()
	o.jobs[key] = j
	o.mu.Unlock()
	go func() {
		o.execute(j, rc)
		o.finish(j, rc)
	}()
}

// Wait waits until no job of this orchestrator runs, or at most max, or ctx ends: a new
// orchestrator (a new manager, see operator.Run) must not start an operation this one
// still runs.
func (o *Orchestrator) Wait(ctx context.Context, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		o.mu.Lock()
		busy := false
		for _, j := range o.jobs {
			busy = busy || !j.isFinished()
		}
		o.mu.Unlock()
		if !busy {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// execute runs a job's work, pods in parallel (bounded), each pod's operations in order.
func (o *Orchestrator) execute(j *job, rc runContext) {
	sem := make(chan struct{}, o.podParallelism)
	var wg sync.WaitGroup
	for _, w := range j.work {
		wg.Add(1)
		sem <- struct{}{}
		go func(w podWork) {
			defer func() { <-sem; wg.Done() }()
			for _, k := range w.ops {
				r := o.runOne(rc, w, j.plans[k])
				j.mu.Lock()
				j.results = append(j.results, r)
				j.mu.Unlock()
				if r.failed() {
					return
				}
			}
		}(w)
	}
	wg.Wait()
}

// finish marks a job finished and asks for a reconcile of its Service.
func (o *Orchestrator) finish(j *job, rc runContext) {
	j.mu.Lock()
	j.finished, j.finishedAt = true, o.now()
	j.mu.Unlock()
	if o.notify != nil {
		o.notify(rc.namespace, rc.service)
	}
}

// runOne runs one operation in one pod.
func (o *Orchestrator) runOne(rc runContext, w podWork, p *planned) runResult {
	start := time.Now()
	r := runResult{op: p.Name, pod: w.pod}
	defer func() { r.duration = time.Since(start) }()
	if w.target == nil {
		r.err = fmt.Errorf("pod %s is gone", w.pod)
		return r
	}
	r.key = podKey(w.target, p.Container)
	container, err := containerOf(w.target, p.Container)
	if err != nil {
		r.err = err
		return r
	}
	req := p.Request
	req.Pod = protocol.PodInfo{
		Name: w.target.Name, Namespace: w.target.Namespace, Container: container,
		UID: string(w.target.UID), IP: w.target.Status.PodIP, Node: w.target.Spec.NodeName,
	}
	req.Node.Attributes = rc.attributes
	ctx, cancel := context.WithTimeout(context.Background(), p.Timeout+execGrace)
	defer cancel()
	target := Target{Namespace: w.target.Namespace, Pod: w.target.Name, Container: container, PodUID: string(w.target.UID), Impersonate: rc.impersonate, Cluster: rc.cluster}
	r.result, r.timing, r.err = o.executor.Run(ctx, target, &req)
	if r.err != nil && ctx.Err() != nil {
		r.err = fmt.Errorf("no result within the operation's timeout (%v) and %v: %w", p.Timeout, execGrace, r.err)
	}
	r.result, r.err = redactRun(rc.redact, r.result, r.err)
	r.duration = time.Since(start)
	return r
}
