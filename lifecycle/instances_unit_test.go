package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"calaf.io/calaf/api/v1alpha1"
)

func pod(name, uid string, created time.Time) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{v1alpha1.LabelNode: "smf"}}}
}

// The pods an occurrence affected, from those it recorded at its start and those that
// run at its end: new ones ADDED, gone ones REMOVED, a name back with another UID
// MODIFIED; at most 256; a record cut short counts as ADDED only pods created since.
func TestAffectedPods(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	nodeOf := func(p *corev1.Pod) string { return p.Labels[v1alpha1.LabelNode] }
	many := func(n int) []corev1.Pod {
		var pods []corev1.Pod
		for i := range n {
			pods = append(pods, pod(fmt.Sprintf("p%03d", i), fmt.Sprintf("u%d", i), start.Add(time.Second)))
		}
		return pods
	}
	for _, c := range []struct {
		name     string
		recorded []string
		now      []corev1.Pod
		since    time.Time
		want     string
	}{
		{"nothing changed", []string{"a/1/smf"}, []corev1.Pod{pod("a", "1", start)}, time.Time{}, ""},
		{"scaled out", []string{"a/1/smf"}, []corev1.Pod{pod("a", "1", start), pod("b", "2", start)}, time.Time{}, "ADDED b 2 smf"},
		{"scaled in", []string{"a/1/smf", "b/2/smf"}, []corev1.Pod{pod("a", "1", start)}, time.Time{}, "REMOVED b 2 smf"},
		{"a StatefulSet's pod replaced", []string{"db-0/1/db node"}, []corev1.Pod{pod("db-0", "9", start)}, time.Time{}, "MODIFIED db-0 9 smf"},
		{"a Deployment's pod replaced", []string{"a-x/1/smf"}, []corev1.Pod{pod("a-y", "2", start)}, time.Time{}, "ADDED a-y 2 smf; REMOVED a-x 1 smf"},
		{"terminated", []string{"a/1/smf", "b/2/smf"}, nil, time.Time{}, "REMOVED a 1 smf; REMOVED b 2 smf"},
		{"a node name with slashes", []string{"a/1/vdu/x"}, nil, time.Time{}, "REMOVED a 1 vdu/x"},
		{"a malformed record is ignored", []string{"a/1"}, nil, time.Time{}, ""},
		{"a record cut short", []string{"a/1/smf"}, []corev1.Pod{pod("old", "0", start.Add(-time.Hour)), pod("new", "2", start.Add(time.Second))}, start, "ADDED new 2 smf; REMOVED a 1 smf"},
	} {
		var got []string
		for _, a := range affectedPods(c.recorded, c.now, nodeOf, c.since) {
			got = append(got, fmt.Sprintf("%s %s %s %s", a.ChangeType, a.Pod, a.UID, a.Node))
		}
		if strings.Join(got, "; ") != c.want {
			t.Errorf("%s: %q, want %q", c.name, strings.Join(got, "; "), c.want)
		}
	}
	if n := len(affectedPods(nil, many(300), nodeOf, time.Time{})); n != maxAffectedPods {
		t.Errorf("300 pods added: %d reported, want %d", n, maxAffectedPods)
	}
}

// The occurrences SOL003 reports resource changes of record the pods first; the others
// do not.
func TestPlansRecordThePods(t *testing.T) {
	for typ, records := range map[v1alpha1.OperationType]bool{
		v1alpha1.OperationInstantiate: true, v1alpha1.OperationScale: true, v1alpha1.OperationScaleToLevel: true,
		v1alpha1.OperationChangeFlavour: true, v1alpha1.OperationHeal: true, v1alpha1.OperationChangePackage: true,
		v1alpha1.OperationOperate: true, v1alpha1.OperationTerminate: true, v1alpha1.OperationModify: false, v1alpha1.OperationCustom: false,
	} {
		for _, keep := range []bool{false, true} {
			op := &v1alpha1.Operation{Spec: v1alpha1.OperationSpec{Type: typ, Terminate: &v1alpha1.TerminateRequest{KeepInstance: keep}}}
			steps := plan(op, false)[0](&run{op: op})
			first := ""
			if len(steps) > 0 {
				first = steps[0].name
			}
			if (first == recordPodsStep.name) != records {
				t.Errorf("%s (keepInstance %v): first step %q", typ, keep, first)
			}
		}
	}
}

// What may be asked of a Service depends on its instantiation state: NOT_INSTANTIATED,
// INSTANTIATE and MODIFY; INSTANTIATED, anything but INSTANTIATE.
func TestValidateInstantiation(t *testing.T) {
	rendered := &v1alpha1.PackageStatus{Revision: "r1"}
	instantiated := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Name: "core"}, Status: v1alpha1.ServiceStatus{Package: rendered}}
	notInstantiated := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Name: "core"}, Spec: v1alpha1.ServiceSpec{InstantiationState: v1alpha1.NotInstantiated}}
	vnf := instantiated.DeepCopy()
	vnf.Status.VNF = &v1alpha1.VNFStatus{FlavourID: "simple", Flavours: []string{"complex", "simple"}}
	name := "n"
	for _, c := range []struct {
		name string
		svc  *v1alpha1.Service
		spec v1alpha1.OperationSpec
		want string // "": accepted; "wait": waits for the render
	}{
		{"INSTANTIATE of a NOT_INSTANTIATED Service", notInstantiated, v1alpha1.OperationSpec{Type: v1alpha1.OperationInstantiate}, ""},
		{"MODIFY of a NOT_INSTANTIATED Service, never rendered", notInstantiated, v1alpha1.OperationSpec{Type: v1alpha1.OperationModify,
			Modify: &v1alpha1.ModifyRequest{VnfInstanceName: &name, Inputs: map[string]apiextensionsv1.JSON{"a": {Raw: []byte("1")}}}}, ""},
		{"SCALE of a NOT_INSTANTIATED Service", notInstantiated, v1alpha1.OperationSpec{Type: v1alpha1.OperationScale, Scale: &v1alpha1.ScaleRequest{AspectID: "a"}},
			"Service core is NOT_INSTANTIATED: SCALE needs an instantiated Service (INSTANTIATE it first)"},
		{"HEAL of a NOT_INSTANTIATED Service", notInstantiated, v1alpha1.OperationSpec{Type: v1alpha1.OperationHeal},
			"Service core is NOT_INSTANTIATED: HEAL needs an instantiated Service (INSTANTIATE it first)"},
		{"CHANGE_PACKAGE of a NOT_INSTANTIATED Service", notInstantiated, v1alpha1.OperationSpec{Type: v1alpha1.OperationChangePackage, ChangePackage: &v1alpha1.ChangePackageRequest{}},
			"Service core is NOT_INSTANTIATED: CHANGE_PACKAGE needs an instantiated Service (INSTANTIATE it first)"},
		{"TERMINATE of a NOT_INSTANTIATED Service", notInstantiated, v1alpha1.OperationSpec{Type: v1alpha1.OperationTerminate},
			"Service core is NOT_INSTANTIATED: there is nothing to terminate (delete the Service to remove the instance)"},
		{"INSTANTIATE of an INSTANTIATED Service", instantiated, v1alpha1.OperationSpec{Type: v1alpha1.OperationInstantiate},
			"Service core is INSTANTIATED: only a NOT_INSTANTIATED Service can be instantiated (a TERMINATE with keepInstance makes it so)"},
		{"a name alone does not wait for the render", &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Name: "core"}},
			v1alpha1.OperationSpec{Type: v1alpha1.OperationModify, Modify: &v1alpha1.ModifyRequest{VnfInstanceName: &name}}, ""},
		{"inputs wait for the render", &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Name: "core"}},
			v1alpha1.OperationSpec{Type: v1alpha1.OperationModify, Modify: &v1alpha1.ModifyRequest{Inputs: map[string]apiextensionsv1.JSON{}}}, "wait"},
		{"CHANGE_FLAVOUR to a flavour of the package", vnf, v1alpha1.OperationSpec{Type: v1alpha1.OperationChangeFlavour,
			ChangeFlavour: &v1alpha1.ChangeFlavourRequest{NewFlavourID: "complex"}}, ""},
		{"CHANGE_FLAVOUR of a Service that is no VNF", instantiated, v1alpha1.OperationSpec{Type: v1alpha1.OperationChangeFlavour,
			ChangeFlavour: &v1alpha1.ChangeFlavourRequest{NewFlavourID: "complex"}}, "Service core deploys no ETSI SOL001 VNF: only a VNF package has deployment flavours"},
	} {
		err := validate(context.Background(), nil, &v1alpha1.Operation{Spec: c.spec}, c.svc)
		var refused *refusal
		var wait *waitFor
		got := ""
		switch {
		case errors.As(err, &refused):
			got = refused.message
		case errors.As(err, &wait):
			got = "wait"
		case err != nil:
			got = "error: " + err.Error()
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// A change that failed rolls back by itself with rollback Auto; one that was cancelled
// waits for a decision.
func TestNoAutoRollbackAfterACancel(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &Reconciler{Now: func() time.Time { return now }}
	for _, c := range []struct {
		reason string
		want   v1alpha1.OperationState
	}{
		{v1alpha1.OccurrenceFailedTemp, v1alpha1.StateRollingBack},
		{v1alpha1.OccurrenceCancelled, v1alpha1.StateFailedTemp},
	} {
		op := &v1alpha1.Operation{Spec: v1alpha1.OperationSpec{Type: v1alpha1.OperationScale, Rollback: v1alpha1.RollbackAuto}}
		for _, to := range []v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateProcessing} {
			if _, err := enter(op, to, "", "", metav1.NewTime(now)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := enter(op, v1alpha1.StateFailedTemp, c.reason, "stopped", metav1.NewTime(now)); err != nil {
			t.Fatal(err)
		}
		rn := &run{r: r, op: op}
		if err := rn.decide(context.Background()); err != nil {
			t.Fatal(err)
		}
		if op.Status.OperationState != c.want {
			t.Errorf("FAILED_TEMP (%s) with rollback Auto: %s, want %s", c.reason, op.Status.OperationState, c.want)
		}
	}
}

// A GRACEFUL cancel lets the running step run to its end and begins no other step; a
// step that has not begun never runs.
func TestGracefulCancelLetsTheRunningStepEnd(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &Reconciler{Now: func() time.Time { return now }}
	op := &v1alpha1.Operation{Spec: v1alpha1.OperationSpec{Type: v1alpha1.OperationScale}}
	first := &counted{next: func(rec *v1alpha1.OperationStep) result {
		if rec.Generation == 0 {
			rec.Generation = 1
			return waiting("changed")
		}
		return doneWith("healthy")
	}}
	second := &counted{next: func(*v1alpha1.OperationStep) result { return doneWith("ran") }}
	reconcile := func() *run {
		rn := &run{r: r, op: op.DeepCopy()}
		rn.runSteps(context.Background(), []stage{one(first.step("first")), one(second.step("second"))}, false)
		op = rn.op
		return rn
	}
	reconcile()
	reconcile() // the first step runs, and waits
	op.Spec.Cancel = v1alpha1.CancelGraceful
	rn := reconcile()
	if first.runs != 2 || op.Status.Steps[0].Phase != v1alpha1.StepSucceeded {
		t.Fatalf("the running step must run to its end: %d runs, %+v", first.runs, op.Status.Steps)
	}
	if !rn.stopped || len(op.Status.Steps) != 1 || second.runs != 0 {
		t.Fatalf("after the running step, none begins: stopped %v, %+v, second ran %d times", rn.stopped, op.Status.Steps, second.runs)
	}
}

// A TERMINATE that keeps the instance makes the Service NOT_INSTANTIATED (graceful: its
// teardown operations run); past the graceful timeout it marks the Service to go without
// them, past that and the occurrence's timeout it fails, and once the Service says nothing
// is left it removes the mark and is done.
func TestTearDownTimesOut(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "core", Generation: 1}}
	fc := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).Build()
	r := &Reconciler{Client: fc, APIReader: fc, Now: func() time.Time { return now }}
	op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "term", UID: "u1"}, Spec: v1alpha1.OperationSpec{
		ServiceName: "core", Type: v1alpha1.OperationTerminate, Timeout: &metav1.Duration{Duration: 20 * time.Second},
		Terminate: &v1alpha1.TerminateRequest{KeepInstance: true, GracefulTerminationTimeout: 10}}}
	start := metav1.NewTime(now)
	op.Status.Steps = []v1alpha1.OperationStep{{Name: tearDownStep.name, Phase: v1alpha1.StepRunning, StartTime: &start}}
	service := func() *v1alpha1.Service {
		svc := &v1alpha1.Service{}
		if err := fc.Get(ctx, client.ObjectKeyFromObject(stored), svc); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	step := func(after time.Duration) result {
		now = start.Add(after)
		return tearDownStep.run(ctx, &run{r: r, op: op, svc: service()}, &op.Status.Steps[0])
	}

	if res := step(0); res.done || res.err != nil || op.Status.Steps[0].Generation == 0 {
		t.Fatalf("first run: %+v, %+v", res, op.Status.Steps[0])
	}
	if svc := service(); svc.Spec.InstantiationState != v1alpha1.NotInstantiated || svc.Annotations[v1alpha1.AnnotationTeardown] != "" {
		t.Fatalf("graceful: NOT_INSTANTIATED, teardown operations kept: %+v %v", svc.Spec, svc.Annotations)
	}
	if res := step(5 * time.Second); res.done || res.err != nil || service().Annotations[v1alpha1.AnnotationTeardown] != "" {
		t.Fatalf("within the graceful timeout: %+v", res)
	}
	if res := step(11 * time.Second); res.done || res.err != nil || service().Annotations[v1alpha1.AnnotationTeardown] != v1alpha1.TeardownSkip {
		t.Fatalf("past the graceful timeout the teardown operations are skipped: %+v, %v", res, service().Annotations)
	}
	if res := step(31 * time.Second); res.err == nil || !strings.Contains(res.err.Error(), "still being torn down after 30s") {
		t.Fatalf("past the graceful timeout and the occurrence's: %+v", res)
	}
	svc := service()
	svc.Status.InstantiationState, svc.Status.ObservedGeneration = v1alpha1.NotInstantiated, svc.Generation
	svc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonNotInstantiated,
		ObservedGeneration: svc.Generation, LastTransitionTime: start}}
	if err := fc.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	op.Status.Steps[0].Generation = svc.Generation
	if res := step(32 * time.Second); !res.done || service().Annotations[v1alpha1.AnnotationTeardown] != "" {
		t.Fatalf("nothing left: done, the mark removed: %+v, %v", res, service().Annotations)
	}
}

// A FORCEFUL cancel of a rollback stops it at once: its running step is recorded Failed,
// the occurrence FAILED_TEMP (a retry then retries the rollback).
func TestForcefulCancelOfARollback(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &Reconciler{Now: func() time.Time { return now }}
	op := &v1alpha1.Operation{Spec: v1alpha1.OperationSpec{Type: v1alpha1.OperationScale, Cancel: v1alpha1.CancelForceful}}
	for _, to := range []v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateFailedTemp, v1alpha1.StateRollingBack} {
		if _, err := enter(op, to, "", "", metav1.NewTime(now)); err != nil {
			t.Fatal(err)
		}
	}
	op.Status.Steps = []v1alpha1.OperationStep{
		{Name: "change the Service", Phase: v1alpha1.StepFailed},
		{Name: "restore what the Service ran", Phase: v1alpha1.StepRunning, Rollback: true, Message: "waiting for health"},
	}
	rn := &run{r: r, op: op}
	if err := rn.proceed(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if op.Status.OperationState != v1alpha1.StateFailedTemp || previousState(op) != v1alpha1.StateRollingBack {
		t.Fatalf("%s after %s, want FAILED_TEMP after ROLLING_BACK", op.Status.OperationState, previousState(op))
	}
	if s := op.Status.Steps[1]; s.Phase != v1alpha1.StepFailed || s.Message != "cancelled (FORCEFUL) while it ran: waiting for health" {
		t.Fatalf("the rollback's running step: %+v", s)
	}
	if op.Status.Message != `cancelled (FORCEFUL) at once, leaving step "restore what the Service ran" where it was, while ROLLING_BACK` {
		t.Fatalf("message %q", op.Status.Message)
	}
}
