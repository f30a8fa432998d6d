package controller

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/redact"
	"calaf.io/calaf/orchestration"
	"calaf.io/calaf/source"
)

// want is a condition as a test expects it: status, reason, and a message prefix.
type want struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func nodes(phases ...string) []v1alpha1.NodeStatus {
	var out []v1alpha1.NodeStatus
	for _, p := range phases {
		name, phase, _ := strings.Cut(p, "=")
		phase, reason, _ := strings.Cut(phase, ":")
		st := v1alpha1.NodeStatus{Name: name, Phase: v1alpha1.NodePhase(phase), Reason: reason, Message: name + " says why"}
		if phase == "FailedOp" {
			st.Phase = v1alpha1.NodeFailed
			st.Operations = []v1alpha1.NodeOperationStatus{{Name: "Standard.configure", Phase: v1alpha1.OperationFailed}}
		}
		out = append(out, st)
	}
	return out
}

// Every failure class and every state of progress, as the conditions word it and as the
// reconciler requeues: Ready, Reconciling and Stalled follow kstatus.
func TestConditions(t *testing.T) {
	passedAll := passed{revision: "main@sha1:abc", entry: "service.yaml", applied: true}
	reconcilingSince := func(d time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonProgressing, LastTransitionTime: metav1.NewTime(now.Add(-d))}}
	}
	cases := []struct {
		name       string
		passed     passed
		failure    error
		nodes      []v1alpha1.NodeStatus
		conditions []metav1.Condition // before the reconcile
		want       map[string]*want   // nil: the condition is absent
		requeue    string             // "retry", "interval", "progress", or a duration
		// instantiation is the status.instantiationState wanted (INSTANTIATED when the
		// reconcile applied, else what it was).
		instantiation v1alpha1.InstantiationState
	}{
		{
			name:    "source refused: stalled",
			failure: classifyFetch(&source.Error{Reason: v1alpha1.ReasonInvalidSource, Err: errors.New("no such path csar/")}),
			want: map[string]*want{
				v1alpha1.ConditionSourceReady: {metav1.ConditionFalse, v1alpha1.ReasonInvalidSource, "no such path csar/"},
				v1alpha1.ConditionReady:       {metav1.ConditionFalse, v1alpha1.ReasonInvalidSource, "no such path csar/"},
				v1alpha1.ConditionStalled:     {metav1.ConditionTrue, v1alpha1.ReasonInvalidSource, "no such path csar/"},
				v1alpha1.ConditionReconciling: nil,
				v1alpha1.ConditionCompiled:    {metav1.ConditionUnknown, v1alpha1.ReasonNotReached, "not reached in generation 3: SourceReady is False (InvalidSource)"},
				v1alpha1.ConditionHealthy:     {metav1.ConditionUnknown, v1alpha1.ReasonNotReached, "not reached in generation 3"},
			},
			requeue: "interval",
		},
		{
			name:    "source unreachable: retried; what an earlier generation compiled is not claimed",
			failure: classifyFetch(&source.Error{Reason: v1alpha1.ReasonFetchFailed, Transient: true, Err: errors.New("connection refused")}),
			conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionCompiled, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, ObservedGeneration: 2},
				{Type: v1alpha1.ConditionApplied, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, ObservedGeneration: 2},
			},
			want: map[string]*want{
				v1alpha1.ConditionCompiled:    {metav1.ConditionUnknown, v1alpha1.ReasonNotReached, "not reached in generation 3: SourceReady is False (FetchFailed)"},
				v1alpha1.ConditionApplied:     {metav1.ConditionUnknown, v1alpha1.ReasonNotReached, "not reached in generation 3"},
				v1alpha1.ConditionSourceReady: {metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, "connection refused"},
				v1alpha1.ConditionReady:       {metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, "connection refused"},
				v1alpha1.ConditionReconciling: {metav1.ConditionTrue, v1alpha1.ReasonFetchFailed, "connection refused"},
				v1alpha1.ConditionStalled:     nil,
			},
			requeue: "retry",
		},
		{
			name:       "invalid package: stalled, the source is fine",
			passed:     passed{revision: "r1"},
			failure:    stalled(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidPackage, "service.yaml:3: unknown type"),
			conditions: []metav1.Condition{{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonProgressing}},
			want: map[string]*want{
				v1alpha1.ConditionSourceReady: {metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "fetched revision r1"},
				v1alpha1.ConditionCompiled:    {metav1.ConditionFalse, v1alpha1.ReasonInvalidPackage, "service.yaml:3: unknown type"},
				v1alpha1.ConditionReady:       {metav1.ConditionFalse, v1alpha1.ReasonInvalidPackage, "service.yaml:3"},
				v1alpha1.ConditionStalled:     {metav1.ConditionTrue, v1alpha1.ReasonInvalidPackage, "service.yaml:3"},
				v1alpha1.ConditionReconciling: nil,
				v1alpha1.ConditionApplied:     {metav1.ConditionUnknown, v1alpha1.ReasonNotReached, "not reached in generation 3: Compiled is False (InvalidPackage)"},
			},
			requeue: "interval",
		},
		{
			name:    "inputs object missing: retried",
			passed:  passed{revision: "r1"},
			failure: newPhaseError(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidInputs, retry, errors.New(`inputs ConfigMap "core" not found`)),
			want: map[string]*want{
				v1alpha1.ConditionCompiled:    {metav1.ConditionFalse, v1alpha1.ReasonInvalidInputs, "inputs ConfigMap"},
				v1alpha1.ConditionReconciling: {metav1.ConditionTrue, v1alpha1.ReasonInvalidInputs, "inputs ConfigMap"},
				v1alpha1.ConditionStalled:     nil,
			},
			requeue: "retry",
		},
		{
			name:    "take-over refused: stalled",
			passed:  passed{revision: "r1", entry: "service.yaml"},
			failure: stalled(v1alpha1.ConditionApplied, v1alpha1.ReasonApplyFailed, `ConfigMap "x" already exists and belongs to no Calaf Service: refusing to take it over`),
			want: map[string]*want{
				v1alpha1.ConditionCompiled: {metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "compiled service.yaml"},
				v1alpha1.ConditionApplied:  {metav1.ConditionFalse, v1alpha1.ReasonApplyFailed, `ConfigMap "x" already exists`},
				v1alpha1.ConditionStalled:  {metav1.ConditionTrue, v1alpha1.ReasonApplyFailed, `ConfigMap "x"`},
			},
			requeue: "interval",
		},
		{
			name:    "apply forbidden: stalled",
			passed:  passed{revision: "r1", entry: "service.yaml"},
			failure: classifyAPI(v1alpha1.ConditionApplied, v1alpha1.ReasonApplyFailed, apierrors.NewForbidden(schema.GroupResource{Resource: "roles"}, "x", errors.New("no"))),
			want: map[string]*want{
				v1alpha1.ConditionApplied: {metav1.ConditionFalse, v1alpha1.ReasonApplyFailed, `roles "x" is forbidden`},
				v1alpha1.ConditionStalled: {metav1.ConditionTrue, v1alpha1.ReasonApplyFailed, `roles "x"`},
			},
			requeue: "interval",
		},
		{
			name:    "prune failed after apply: Applied false, retried",
			passed:  passedAll,
			failure: classifyAPI(v1alpha1.ConditionApplied, v1alpha1.ReasonPruneFailed, apierrors.NewServiceUnavailable("etcd")),
			want: map[string]*want{
				v1alpha1.ConditionApplied:     {metav1.ConditionFalse, v1alpha1.ReasonPruneFailed, "etcd"},
				v1alpha1.ConditionReconciling: {metav1.ConditionTrue, v1alpha1.ReasonPruneFailed, "etcd"},
				v1alpha1.ConditionStalled:     nil,
			},
			requeue: "retry",
		},
		{
			name:    "waiting: looked at again after its delay",
			passed:  passed{revision: "r1"},
			failure: waiting(v1alpha1.ConditionCompiled, v1alpha1.ReasonProgressing, 3*time.Second, "waiting for the package"),
			want: map[string]*want{
				v1alpha1.ConditionReconciling: {metav1.ConditionTrue, v1alpha1.ReasonProgressing, "waiting for the package"},
				v1alpha1.ConditionStalled:     nil,
			},
			requeue: "3s",
		},
		{
			name:    "an unexpected error: internal, retried",
			failure: fmt.Errorf("boom"),
			want: map[string]*want{
				v1alpha1.ConditionReady:       {metav1.ConditionFalse, v1alpha1.ReasonInternalError, "boom"},
				v1alpha1.ConditionReconciling: {metav1.ConditionTrue, v1alpha1.ReasonInternalError, "boom"},
			},
			requeue: "retry",
		},
		{
			name:       "every node ready",
			passed:     passedAll,
			nodes:      nodes("db=Ready", "web=Ready"),
			conditions: append(reconcilingSince(time.Minute), metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonOperationFailed}),
			want: map[string]*want{
				v1alpha1.ConditionApplied:     {metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "applied revision main@sha1:abc"},
				v1alpha1.ConditionHealthy:     {metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "all objects are healthy"},
				v1alpha1.ConditionReady:       {metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "revision main@sha1:abc: 2 nodes ready"},
				v1alpha1.ConditionReconciling: nil,
				v1alpha1.ConditionStalled:     nil,
			},
			requeue: "interval",
		},
		{
			name:   "a node progressing",
			passed: passedAll,
			nodes:  nodes("db=Ready", "web=Progressing"),
			want: map[string]*want{
				v1alpha1.ConditionHealthy:     {metav1.ConditionFalse, v1alpha1.ReasonProgressing, "1 of 2 nodes not ready; web: web says why"},
				v1alpha1.ConditionReady:       {metav1.ConditionFalse, v1alpha1.ReasonProgressing, "1 of 2 nodes not ready"},
				v1alpha1.ConditionReconciling: {metav1.ConditionTrue, v1alpha1.ReasonProgressing, "1 of 2 nodes not ready"},
				v1alpha1.ConditionStalled:     nil,
			},
			requeue: "progress",
		},
		{
			name:       "a node progressing past the timeout",
			passed:     passedAll,
			nodes:      nodes("db=Progressing"),
			conditions: reconcilingSince(10 * time.Minute),
			want: map[string]*want{
				v1alpha1.ConditionReady:       {metav1.ConditionFalse, v1alpha1.ReasonHealthCheckFailed, "timeout waiting for health: 1 of 1 nodes not ready; db: db says why"},
				v1alpha1.ConditionReconciling: {metav1.ConditionTrue, v1alpha1.ReasonProgressing, "timeout waiting for health"},
				v1alpha1.ConditionStalled:     nil,
			},
			requeue: "progress",
		},
		{
			name:   "a node failed its health check: not stalled, it may recover",
			passed: passedAll,
			nodes:  nodes("db=Failed", "web=Pending"),
			want: map[string]*want{
				v1alpha1.ConditionReady:       {metav1.ConditionFalse, v1alpha1.ReasonHealthCheckFailed, "2 of 2 nodes not ready; db: db says why"},
				v1alpha1.ConditionReconciling: {metav1.ConditionTrue, v1alpha1.ReasonProgressing, "2 of 2"},
				v1alpha1.ConditionStalled:     nil,
			},
			requeue: "progress",
		},
		{
			name:   "pods refused by admission: stalled until a change",
			passed: passedAll,
			nodes:  nodes("db=Ready", "web=Failed:FailedCreate"),
			want: map[string]*want{
				v1alpha1.ConditionReady:   {metav1.ConditionFalse, v1alpha1.ReasonHealthCheckFailed, "1 of 2 nodes not ready; web: web says why"},
				v1alpha1.ConditionStalled: {metav1.ConditionTrue, v1alpha1.ReasonHealthCheckFailed, "1 of 2 nodes not ready; web"},
			},
			requeue: "progress",
		},
		{
			name:   "an operation failed for good: stalled until a change",
			passed: passedAll,
			nodes:  nodes("db=Ready", "web=FailedOp"),
			want: map[string]*want{
				v1alpha1.ConditionReady:   {metav1.ConditionFalse, v1alpha1.ReasonOperationFailed, "1 of 2 nodes not ready; web"},
				v1alpha1.ConditionStalled: {metav1.ConditionTrue, v1alpha1.ReasonOperationFailed, "1 of 2 nodes not ready; web"},
			},
			requeue: "progress",
		},
		{
			name:   "not instantiated, nothing left: Ready for what it wishes, nothing deployed said",
			passed: passed{notInstantiated: true},
			nodes:  nodes("db=Ready"),
			conditions: append(reconcilingSince(time.Minute),
				metav1.Condition{Type: v1alpha1.ConditionSourceReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded},
				metav1.Condition{Type: v1alpha1.ConditionCompiled, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded},
				metav1.Condition{Type: v1alpha1.ConditionApplied, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded},
				metav1.Condition{Type: v1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonHealthCheckFailed},
				metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHealthCheckFailed}),
			want: map[string]*want{
				v1alpha1.ConditionReady:       {metav1.ConditionTrue, v1alpha1.ReasonNotInstantiated, "not instantiated: nothing is deployed (spec.instantiationState NOT_INSTANTIATED)"},
				v1alpha1.ConditionReconciling: nil,
				v1alpha1.ConditionStalled:     nil,
				v1alpha1.ConditionSourceReady: nil,
				v1alpha1.ConditionCompiled:    nil,
				v1alpha1.ConditionApplied:     nil,
				v1alpha1.ConditionHealthy:     nil,
			},
			requeue:       "interval",
			instantiation: v1alpha1.NotInstantiated,
		},
		{
			name:    "not instantiated, tearing down failed: retried, still what it was",
			passed:  passed{notInstantiated: true},
			failure: newPhaseError(v1alpha1.ConditionReady, v1alpha1.ReasonNotInstantiated, retry, errors.New("deleting Deployment web: etcdserver: request timed out")),
			nodes:   nodes("db=Ready"),
			want: map[string]*want{
				v1alpha1.ConditionReady:       {metav1.ConditionFalse, v1alpha1.ReasonNotInstantiated, "not instantiated: tearing down what ran: deleting Deployment web: etcdserver"},
				v1alpha1.ConditionReconciling: {metav1.ConditionTrue, v1alpha1.ReasonNotInstantiated, "not instantiated: tearing down what ran"},
				v1alpha1.ConditionStalled:     nil,
			},
			requeue: "retry",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
			svc.Spec.Interval = &metav1.Duration{Duration: 10 * time.Minute}
			svc.Status.Nodes = tc.nodes
			svc.Status.Conditions = tc.conditions
			failure := asPhaseError(tc.failure)
			message := ""
			if failure != nil {
				message = failure.err.Error()
			}
			setConditions(svc, tc.passed, failure, message, now)
			for conditionType, w := range tc.want {
				c := apimeta.FindStatusCondition(svc.Status.Conditions, conditionType)
				switch {
				case w == nil && c != nil:
					t.Errorf("%s = %s %s %q, want it absent", conditionType, c.Status, c.Reason, c.Message)
				case w != nil && c == nil:
					t.Errorf("%s absent, want %s %s", conditionType, w.status, w.reason)
				case w != nil && (c.Status != w.status || c.Reason != w.reason || !strings.HasPrefix(c.Message, w.message) || c.ObservedGeneration != 3):
					t.Errorf("%s = %s %s %q (generation %d), want %s %s %q…", conditionType, c.Status, c.Reason, c.Message, c.ObservedGeneration, w.status, w.reason, w.message)
				}
			}
			// observedGeneration and the last applied revision move only with Ready.
			ready := apimeta.IsStatusConditionTrue(svc.Status.Conditions, v1alpha1.ConditionReady)
			if ready && (svc.Status.ObservedGeneration != 3 || svc.Status.LastAppliedRevision != tc.passed.revision) ||
				!ready && (svc.Status.ObservedGeneration != 0 || svc.Status.LastAppliedRevision != "") {
				t.Errorf("Ready %v, observed generation %d, last applied %q", ready, svc.Status.ObservedGeneration, svc.Status.LastAppliedRevision)
			}
			wantState := tc.instantiation
			if tc.passed.applied {
				wantState = v1alpha1.Instantiated
			}
			if svc.Status.InstantiationState != wantState {
				t.Errorf("status.instantiationState %q, want %q", svc.Status.InstantiationState, wantState)
			}
			if wantState == v1alpha1.NotInstantiated && (svc.Status.Nodes != nil || svc.Status.Inventory != nil) {
				t.Errorf("a Service not instantiated still says nodes %v, objects %v", svc.Status.Nodes, svc.Status.Inventory)
			}
			checkRequeue(t, svc, failure, message, tc.requeue)
		})
	}
}

// The deletion of a Service and the teardown of a NOT_INSTANTIATED one say where they
// stand, each in its own words.
func TestTearingDownWording(t *testing.T) {
	deleted := metav1.NewTime(now)
	for _, c := range []struct {
		name        string
		state       v1alpha1.InstantiationState
		deleted     bool
		reason      string
		message     string
		reconciling bool
	}{
		{"deleted", "", true, v1alpha1.ReasonDeleting, "deleting node web: [Deployment/web]", false},
		{"not instantiated", v1alpha1.NotInstantiated, false, v1alpha1.ReasonNotInstantiated, "not instantiated: tearing down what ran: deleting node web: [Deployment/web]", true},
		{"not instantiated, then deleted", v1alpha1.NotInstantiated, true, v1alpha1.ReasonDeleting, "deleting node web: [Deployment/web]", false},
	} {
		svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: v1alpha1.ServiceSpec{InstantiationState: c.state}}
		if c.deleted {
			svc.DeletionTimestamp = &deleted
		}
		setDeleting(svc, "deleting node web: [Deployment/web]")
		ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != c.reason || ready.Message != c.message {
			t.Errorf("%s: Ready %+v, want False %s %q", c.name, ready, c.reason, c.message)
		}
		if got := apimeta.IsStatusConditionTrue(svc.Status.Conditions, v1alpha1.ConditionReconciling); got != c.reconciling {
			t.Errorf("%s: Reconciling %v, want %v", c.name, got, c.reconciling)
		}
	}
}

func checkRequeue(t *testing.T, svc *v1alpha1.Service, failure *phaseError, message, want string) {
	t.Helper()
	result, err := requeueFor(svc, failure, message, 5*time.Second, 0)
	var retried *retryError
	switch want {
	case "retry":
		if !errors.As(err, &retried) || !strings.HasPrefix(err.Error(), failure.reason+": ") {
			t.Errorf("requeue %v, %v; want a retry with backoff", result, err)
		}
	case "interval": // 10 min with up to 10% jitter
		if err != nil || result.RequeueAfter < 10*time.Minute || result.RequeueAfter > 11*time.Minute {
			t.Errorf("requeue %v, %v; want the interval", result, err)
		}
	case "progress":
		if err != nil || result.RequeueAfter != 5*time.Second {
			t.Errorf("requeue %v, %v; want the progress interval", result, err)
		}
	default:
		d, _ := time.ParseDuration(want)
		if err != nil || result.RequeueAfter != d {
			t.Errorf("requeue %v, %v; want %v", result, err, d)
		}
	}
}

// A node's phase, message and what it waits for, from what a reconcile learned of it.
func TestNodePhase(t *testing.T) {
	cases := []struct {
		name                string
		outcome             nodeOutcome
		phase               v1alpha1.NodePhase
		message, waitingFor string
	}{
		{"dependency not ready", nodeOutcome{blockedBy: "db", health: &health{}}, v1alpha1.NodePending, "waiting for node db to be ready", "node db"},
		{"take-over refused", nodeOutcome{failure: errors.New(`ConfigMap "x" already exists`)}, v1alpha1.NodeFailed, `ConfigMap "x" already exists`, ""},
		{"an object failed", nodeOutcome{health: &health{failed: "Job/migrate: Job Failed"}}, v1alpha1.NodeFailed, "Job/migrate: Job Failed", ""},
		{"objects not current", nodeOutcome{health: &health{waiting: []string{"Deployment/web: Replicas: 0/1", "Service/web does not exist yet"}}}, v1alpha1.NodeProgressing, "Deployment/web: Replicas: 0/1; Service/web does not exist yet", "Deployment/web"},
		{"an object missing", nodeOutcome{health: &health{waiting: []string{"Service/web does not exist yet"}}}, v1alpha1.NodeProgressing, "Service/web does not exist yet", "Service/web does not exist yet"},
		{"ready, no operations", nodeOutcome{objects: 2, health: &health{}}, v1alpha1.NodeReady, "2 objects ready", ""},
		{"ready, operations done", nodeOutcome{objects: 1, health: &health{}, operations: &orchestration.Result{Done: true}}, v1alpha1.NodeReady, "1 objects ready", ""},
		{"operation failed", nodeOutcome{health: &health{}, operations: &orchestration.Result{Failure: errors.New("Standard.configure failed in pod a")}}, v1alpha1.NodeFailed, "Standard.configure failed in pod a", ""},
		{"operations running", nodeOutcome{health: &health{}, operations: &orchestration.Result{Message: "running Standard.configure in 2 pods"}}, v1alpha1.NodeConfiguring, "running Standard.configure in 2 pods", ""},
		{"operations due, nothing to say", nodeOutcome{objects: 3, health: &health{}, operations: &orchestration.Result{}}, v1alpha1.NodeConfiguring, "3 objects ready", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			phase, message, waitingFor := nodePhase(tc.outcome)
			if phase != tc.phase || message != tc.message || waitingFor != tc.waitingFor {
				t.Errorf("nodePhase = %s %q %q, want %s %q %q", phase, message, waitingFor, tc.phase, tc.message, tc.waitingFor)
			}
		})
	}
}

// A node's message is redacted: a secret input value never reaches status, not even one
// the message is cut short within.
func TestNodePhaseRedacts(t *testing.T) {
	secrets := redact.New()
	secrets.Add("hunter2-very-secret")
	st := &v1alpha1.NodeStatus{}
	setNodePhase(st, nodeOutcome{failure: errors.New("login with hunter2-very-secret refused")}, secrets)
	if st.Message != "login with ***** refused" {
		t.Errorf("message %q", st.Message)
	}
	long := "Deployment/web: " + strings.Repeat("x", 490) + " hunter2-very-secret"
	setNodePhase(st, nodeOutcome{health: &health{waiting: []string{long}}}, secrets)
	if strings.Contains(st.Message, "hunter") {
		t.Errorf("a message cut within the secret shows part of it: %q", st.Message)
	}
}

// A workload's lack of progress is explained by its controller's ReplicaFailure condition
// or its pods' waiting states; causes that go away by themselves are not reported.
func TestPodTrouble(t *testing.T) {
	waiting := func(reason, message string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	}
	cases := []struct {
		name            string
		status          corev1.PodStatus
		reason, message string
	}{
		{"pulling an image that is not there", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: waiting("ImagePullBackOff", `Back-off pulling image "x:1"`)}}},
			"ImagePullBackOff", `pod p, container main: Back-off pulling image "x:1"`},
		{"crashing", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "main", RestartCount: 4, State: waiting("CrashLoopBackOff", "back-off 40s"),
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}}}}},
			"CrashLoopBackOff", "pod p, container main: exited with code 3 (Error) 4 times"},
		{"an init container without its config", corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: waiting("CreateContainerConfigError", `configmap "c" not found`)}}},
			"CreateContainerConfigError", `pod p, container init: configmap "c" not found`},
		{"creating: not a trouble", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: waiting("ContainerCreating", "")}}}, "", ""},
		{"running", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: tc.status}
			reason, message := podTrouble(pod)
			if reason != tc.reason || message != tc.message {
				t.Errorf("podTrouble = %q %q, want %q %q", reason, message, tc.reason, tc.message)
			}
		})
	}
	deployment := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Progressing", "status": "True"},
		map[string]any{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": `pods "web-1" is forbidden: exceeded quota: no-pods`},
	}}}}
	if got := replicaFailure(deployment); got != `pods "web-1" is forbidden: exceeded quota: no-pods` {
		t.Errorf("replicaFailure = %q", got)
	}
}

func TestShortRevision(t *testing.T) {
	cases := map[string]string{
		"main@sha1:2f6c0a1b3c4d5e6f708192a3b4c5d6e7f8091a2b":                             "main@sha1:2f6c0a1b3c4d",
		"sha256:e4f4100eaed85b662c6521e666f58abe24e5a12de8c6aa04b2a369f1a49f4dc6":        "sha256:e4f4100eaed8",
		"v1.2.0@sha256:e4f4100eaed85b662c6521e666f58abe24e5a12de8c6aa04b2a369f1a49f4dc6": "v1.2.0@sha256:e4f4100eaed8",
		"sha1:abc": "sha1:abc",
		"":         "",
	}
	for in, want := range cases {
		if got := shortRevision(in); got != want {
			t.Errorf("shortRevision(%q) = %q, want %q", in, got, want)
		}
	}
}

// Ready's transitions become events, except into Progressing from anything but True; what
// was applied is an Applied event, or part of Ready's event when Ready turns True.
func TestRecordEvents(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason, message string) *v1alpha1.Service {
		svc := &v1alpha1.Service{}
		if status != "" {
			svc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: message}}
		}
		return svc
	}
	progressing := ready(metav1.ConditionFalse, v1alpha1.ReasonProgressing, "waiting for Deployment/app")
	succeeded := ready(metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "3 nodes ready")
	failed := ready(metav1.ConditionFalse, v1alpha1.ReasonApplyFailed, "ConfigMap/x apply failed")
	applied := []string{"ConfigMap/app created", "Deployment/app created"}
	for _, tc := range []struct {
		name          string
		before, after *v1alpha1.Service
		applied       []string
		want          []string // the events
	}{
		{"new Service progressing", ready("", "", ""), progressing, nil, nil},
		{"new Service ready", ready("", "", ""), succeeded, nil, []string{"Normal Succeeded 3 nodes ready"}},
		{"progressing to ready", progressing, succeeded, nil, []string{"Normal Succeeded 3 nodes ready"}},
		{"progress goes on", progressing, ready(metav1.ConditionFalse, v1alpha1.ReasonProgressing, "waiting for Service/app"), nil, nil},
		{"failure fixed, progressing", failed, progressing, nil, nil},
		{"ready no longer", succeeded, progressing, nil, []string{"Normal Progressing waiting for Deployment/app"}},
		{"fails", progressing, failed, nil, []string{"Warning ApplyFailed ConfigMap/x apply failed"}},
		{"unchanged", succeeded, succeeded, nil, nil},
		{"applied, progressing", ready("", "", ""), progressing, applied, []string{"Normal Applied ConfigMap/app created\nDeployment/app created"}},
		{"applied and ready: one event", ready("", "", ""), succeeded, applied, []string{"Normal Succeeded 3 nodes ready\nConfigMap/app created\nDeployment/app created"}},
		{"applied, ready before and after", succeeded, succeeded, applied, []string{"Normal Applied ConfigMap/app created\nDeployment/app created"}},
		{"applied, then failed", progressing, failed, applied, []string{"Normal Applied ConfigMap/app created\nDeployment/app created", "Warning ApplyFailed ConfigMap/x apply failed"}},
		{"applied, ready no longer", succeeded, progressing, applied, []string{"Normal Applied ConfigMap/app created\nDeployment/app created", "Normal Progressing waiting for Deployment/app"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recorder := events.NewFakeRecorder(3)
			r := &ServiceReconciler{Recorder: recorder}
			r.recordEvents(tc.before, tc.after, tc.applied)
			close(recorder.Events)
			var got []string
			for event := range recorder.Events {
				got = append(got, event)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}
}
