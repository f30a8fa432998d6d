package lifecycle_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

func scaleOp(aspect string, direction v1alpha1.ScaleDirection, steps int32) v1alpha1.OperationSpec {
	return v1alpha1.OperationSpec{Type: v1alpha1.OperationScale, Scale: &v1alpha1.ScaleRequest{AspectID: aspect, Type: direction, NumberOfSteps: steps}}
}

func aspectLevel(g Gomega, key client.ObjectKey, aspect string) int32 {
	svc := getService(g, key)
	g.Expect(svc.Status.Lifecycle).NotTo(BeNil())
	for _, a := range svc.Status.Lifecycle.Aspects {
		if a.AspectID == aspect {
			return a.ScaleLevel
		}
	}
	g.Expect(aspect).To(BeEmpty(), "no aspect %s", aspect)
	return -1
}

// SCALE moves an aspect by steps: the replicas follow (2 + 2 per level), the Service's
// spec.scale and status.lifecycle say the level; a drift edit of the replicas is reverted
// to the scaled value and a redeploy keeps it; past the maximum, below zero or an aspect
// the package does not have, the request is refused (FAILED, Refused) and nothing moves.
func TestScale(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	readyWorkloads(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: "core"}
	svc := deploy(t, ns, "core", scaledTemplate(), nil)
	g.Expect(svc.Status.Lifecycle.Aspects).To(Equal([]v1alpha1.AspectStatus{{AspectID: "smf", ScaleLevel: 0, MaxScaleLevel: 2,
		Bound: "max_instances 7 of node smf (2 replicas at level 0, 2 per level)", Nodes: []string{"smf"}}}))
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(2))

	op := occurrence(t, ns, "core", scaleOp("smf", v1alpha1.ScaleOut, 2))
	op = waitState(t, op, v1alpha1.StateCompleted, time.Minute)
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(6))
	g.Expect(aspectLevel(g, key, "smf")).To(BeEquivalentTo(2))
	g.Expect(getService(g, key).Spec.Scale).To(Equal([]v1alpha1.ScaleInfo{{AspectID: "smf", ScaleLevel: 2}}))
	g.Expect(op.Status.Previous.Levels).To(Equal([]v1alpha1.ScaleInfo{{AspectID: "smf", ScaleLevel: 0}}))

	// Past the maximum: refused, nothing moves.
	refused := occurrence(t, ns, "core", scaleOp("smf", v1alpha1.ScaleOut, 1))
	refused = waitState(t, refused, v1alpha1.StateFailed, time.Minute)
	g.Expect(refused.Status.Message).To(ContainSubstring("refused: aspect smf is at scale level 2: 1 steps out would reach level 3, past its maximum 2 (max_instances 7 of node smf"))
	g.Expect(findCondition(refused, v1alpha1.ConditionReady).Reason).To(Equal(v1alpha1.OccurrenceRefused))
	g.Expect(states(refused)).To(Equal([]v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateFailed}))
	unknown := waitState(t, occurrence(t, ns, "core", scaleOp("amf", v1alpha1.ScaleOut, 1)), v1alpha1.StateFailed, time.Minute)
	g.Expect(unknown.Status.Message).To(ContainSubstring("Service core has no scaling aspect amf (its aspects: smf)"))
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(6))

	op = waitState(t, occurrence(t, ns, "core", scaleOp("smf", v1alpha1.ScaleIn, 1)), v1alpha1.StateCompleted, time.Minute)
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(4))
	g.Expect(aspectLevel(g, key, "smf")).To(BeEquivalentTo(1))
	below := waitState(t, occurrence(t, ns, "core", scaleOp("smf", v1alpha1.ScaleIn, 2)), v1alpha1.StateFailed, time.Minute)
	g.Expect(below.Status.Message).To(ContainSubstring("aspect smf is at scale level 1: it cannot scale in by 2 steps"))

	// Drift: someone scales the Deployment by hand; the scaled value comes back.
	d := &appsv1.Deployment{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "core-smf"}, d)).To(Succeed())
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To[int32](9)
	g.Expect(env.client.Patch(context.Background(), d, patch, client.FieldOwner("kubectl"))).To(Succeed())
	g.Eventually(func(g Gomega) int32 { return replicas(g, ns, "core-smf") }, 30*time.Second, 100*time.Millisecond).Should(BeEquivalentTo(4))

	// Redeploying (a new generation of the Service, the same package) keeps the level.
	svc = getService(g, key)
	patch = client.MergeFrom(svc.DeepCopy())
	svc.Spec.Interval = &metav1.Duration{Duration: 11 * time.Minute}
	g.Expect(env.client.Patch(context.Background(), svc, patch)).To(Succeed())
	waitReady(t, key)
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(4))
	g.Expect(aspectLevel(g, key, "smf")).To(BeEquivalentTo(1))
}

// Occurrences of a Service run one at a time, in creation order (ties by name): the next
// one waits in STARTING, saying for which, and starts once the first is done.
func TestOccurrencesQueue(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	w := readyWorkloads(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: "core"}
	deploy(t, ns, "core", scaledTemplate(), nil)
	w.hold("core-smf", true)
	first := occurrence(t, ns, "core", scaleOp("smf", v1alpha1.ScaleOut, 1))
	waitState(t, first, v1alpha1.StateProcessing, time.Minute)
	second := occurrence(t, ns, "core", scaleOp("smf", v1alpha1.ScaleOut, 1))
	g.Eventually(func(g Gomega) {
		queued := &v1alpha1.Operation{}
		g.Expect(env.client.Get(context.Background(), client.ObjectKeyFromObject(second), queued)).To(Succeed())
		g.Expect(queued.Status.OperationState).To(Equal(v1alpha1.StateStarting))
		ready := findCondition(queued, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1alpha1.OccurrenceQueued))
		g.Expect(ready.Message).To(ContainSubstring("queued: waiting for " + first.Name + " (SCALE, PROCESSING)"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	// PROCESSING is recorded before the first one's apply lands: wait for its replicas,
	// then check that the queued one adds nothing.
	g.Eventually(func(g Gomega) int32 { return replicas(g, ns, "core-smf") }, 30*time.Second, 100*time.Millisecond).Should(BeEquivalentTo(4), "the first one acted")
	// From there on, the replicas change once the first one is done, not before: the
	// Deployment is watched from the version that says 4, and when a version says
	// other replicas the first occurrence must be COMPLETED.
	changed := watchReplicaChange(t, ns, "core-smf")

	w.hold("core-smf", false)
	select {
	case <-changed:
		done := &v1alpha1.Operation{}
		g.Expect(env.client.Get(context.Background(), client.ObjectKeyFromObject(first), done)).To(Succeed())
		g.Expect(done.Status.OperationState).To(Equal(v1alpha1.StateCompleted), "the replicas changed while the first one was %s: the queued one acted", done.Status.OperationState)
	case <-time.After(time.Minute):
		t.Fatal("the replicas did not change after the first one was released")
	}
	first = waitState(t, first, v1alpha1.StateCompleted, time.Minute)
	second = waitState(t, second, v1alpha1.StateCompleted, time.Minute)
	g.Expect(second.Status.StartTime.Time).NotTo(BeTemporally("<", first.Status.CompletionTime.Time))
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(6))
	g.Expect(aspectLevel(g, key, "smf")).To(BeEquivalentTo(2))
}

// A SCALE that does not become healthy is rolled back to the level it started from.
func TestScaleRollsBack(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	w := readyWorkloads(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: "core"}
	deploy(t, ns, "core", scaledTemplate(), nil)
	w.hold("core-smf", true)
	spec := scaleOp("smf", v1alpha1.ScaleOut, 2)
	spec.Timeout, spec.Rollback = &metav1.Duration{Duration: 2 * time.Second}, v1alpha1.RollbackAuto
	op := occurrence(t, ns, "core", spec)
	waitState(t, op, v1alpha1.StateRollingBack, time.Minute)
	w.hold("core-smf", false)
	waitState(t, op, v1alpha1.StateRolledBack, time.Minute)
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(2))
	g.Expect(aspectLevel(g, key, "smf")).To(BeEquivalentTo(0))
	g.Expect(getService(g, key).Spec.Scale).To(BeEmpty())
}

// OPERATE STOPPED scales the workloads to zero, keeping them; STARTED brings them back at
// their scale level.
func TestOperate(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	readyWorkloads(t, ns)
	deploy(t, ns, "core", scaledTemplate(), func(svc *v1alpha1.Service) { svc.Spec.Scale = []v1alpha1.ScaleInfo{{AspectID: "smf", ScaleLevel: 1}} })
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(4))
	stop := v1alpha1.OperationSpec{Type: v1alpha1.OperationOperate, Operate: &v1alpha1.OperateRequest{ChangeStateTo: v1alpha1.ChangeStateStopped}}
	waitState(t, occurrence(t, ns, "core", stop), v1alpha1.StateCompleted, time.Minute)
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(0))
	start := v1alpha1.OperationSpec{Type: v1alpha1.OperationOperate, Operate: &v1alpha1.OperateRequest{ChangeStateTo: v1alpha1.ChangeStateStarted}}
	waitState(t, occurrence(t, ns, "core", start), v1alpha1.StateCompleted, time.Minute)
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(4))
}

// watchReplicaChange watches a Deployment from its current version and closes the channel
// it returns at the first version whose replicas differ from the current ones.
func watchReplicaChange(t *testing.T, ns, name string) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := &appsv1.Deployment{}
	if err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	w, err := env.client.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: d.ResourceVersion, FieldSelector: "metadata.name=" + name}})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{})
	go func() {
		defer w.Stop()
		for event := range w.ResultChan() {
			if next, ok := event.Object.(*appsv1.Deployment); ok && replicasOf(next.Spec.Replicas) != replicasOf(d.Spec.Replicas) {
				close(changed)
				return
			}
		}
	}()
	return changed
}
