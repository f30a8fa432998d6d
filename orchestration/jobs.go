package artifacts

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/artifacts/protocol"
	"calaf.io/calaf/controller"
	"calaf.io/calaf/render"
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
	attributes         map[string]any
	redact             redactor
}

func runContextOf(s *controller.Scope, node *render.Node) runContext {
	rc := runContext{namespace: s.Service.Namespace, service: s.Service.Name, redact: s.Redact, attributes: map[string]any{}}
	for name, value := range s.Attributes[node.Name] {
		rc.attributes[name] = value
	}
	if sa := s.Service.Spec.ServiceAccountName; sa != "" {
		rc.impersonate = fmt.Sprintf("system:serviceaccount:%s:%s", s.Service.Namespace, sa)
	}
	return rc
}

// startLifecycle starts a job running the due lifecycle operations, and marks them
// Running in the node's status.
func (o *Orchestrator) startLifecycle(s *controller.Scope, node *render.Node, st *v1alpha1.NodeStatus, plans []*planned, work []podWork, pods *podSet) {
	now := metav1.NewTime(o.now())
	names := map[string]bool{}
	var ops []string
	for i := range work {
		work[i].target = pods.pod(work[i].pod)
		for _, k := range work[i].ops {
			if !names[plans[k].Name] {
				names[plans[k].Name] = true
				ops = append(ops, plans[k].Name)
				status := statusOf(st, plans[k].Name)
				status.Phase, status.LastRunTime = PhaseRunning, &now
				status.Attempts++
			}
		}
	}
	j := &job{lifecycle: true, plans: plans, work: work}
	j.message = fmt.Sprintf("running %s in %d pods", strings.Join(ops, ", "), len(work))
	if len(work) == 1 {
		j.message = fmt.Sprintf("running %s in pod %s", strings.Join(ops, ", "), work[0].pod)
	}
	st.Message = j.message
	o.Log.Info("running lifecycle operations", "service", s.Service.Namespace+"/"+s.Service.Name, "node", node.Name, "operations", ops, "pods", len(work))
	o.start(nodeKey(s.Service, node.Name), j, runContextOf(s, node))
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

// execute runs a job's work, pods in parallel (bounded), each pod's operations in order.
func (o *Orchestrator) execute(j *job, rc runContext) {
	sem := make(chan struct{}, o.PodParallelism)
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
	if o.Notify != nil {
		o.Notify(rc.namespace, rc.service)
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
	target := Target{Namespace: w.target.Namespace, Pod: w.target.Name, Container: container, PodUID: string(w.target.UID), Impersonate: rc.impersonate}
	r.result, r.timing, r.err = o.Executor.Run(ctx, target, &req)
	if r.err != nil && ctx.Err() != nil {
		r.err = fmt.Errorf("no result within the operation's timeout (%v) and %v: %w", p.Timeout, execGrace, r.err)
	}
	r.duration = time.Since(start)
	return r
}

func toJSON(value any) apiextensionsv1.JSON {
	data, err := json.Marshal(value)
	if err != nil {
		data, _ = json.Marshal(err.Error())
	}
	return apiextensionsv1.JSON{Raw: data}
}
