package lifecycle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// hookedTemplate is scaledTemplate with a scale_end hook on smf: a step after the change.
func hookedTemplate() map[string]string {
	files := scaledTemplate()
	files["service.yaml"] = strings.Replace(files["service.yaml"], `        replicas: 2
`, `        replicas: 2
      artifacts:
        hook:
          type: calaf.artifacts.Shell
          file: Artifacts/hook.sh
      interfaces:
        Lifecycle:
          operations:
            scale_end: hook
`, 1)
	files["Artifacts/hook.sh"] = "echo hook\n"
	return files
}

// cancelWith asks an occurrence to cancel.
func cancelWith(t *testing.T, op *v1alpha1.Operation, mode v1alpha1.CancelMode) {
	t.Helper()
	NewWithT(t).Expect(update(op, func(op *v1alpha1.Operation) { op.Spec.Cancel = mode })).To(Succeed())
}

// cancelled checks that an occurrence says its cancel was carried out.
func cancelled(g Gomega, op *v1alpha1.Operation) {
	g.Expect(findCondition(op, v1alpha1.ConditionReady).Reason).To(Equal(v1alpha1.OccurrenceCancelled))
	c := findCondition(op, v1alpha1.ConditionCancelled)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Message).To(HavePrefix("cancel " + string(op.Spec.Cancel) + " carried out"))
}

// A cancel of an occurrence still STARTING (queued) ends it ROLLED_BACK having done
// nothing, without waiting for its turn; FORCEFUL stops a running one at once
// (FAILED_TEMP, its running step recorded Failed), from where a rollback restores the
// Service; a cancel cannot be withdrawn, and one of an ended occurrence is refused.
func TestCancelQueuedAndForceful(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	c := standIn(t, ns)
	deploy(t, ns, "core", scaledTemplate(), nil)
	c.hold("core-smf", true)
	first := occurrence(t, ns, "core", scaleOp("smf", v1alpha1.ScaleOut, 1))
	waitState(t, first, v1alpha1.StateProcessing, time.Minute)
	second := occurrence(t, ns, "core", scaleOp("smf", v1alpha1.ScaleOut, 1))
	waitState(t, second, v1alpha1.StateStarting, time.Minute)

	cancelWith(t, second, v1alpha1.CancelGraceful)
	second = waitState(t, second, v1alpha1.StateRolledBack, time.Minute)
	g.Expect(states(second)).To(Equal([]v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateRolledBack}))
	g.Expect(second.Status.Message).To(Equal("cancelled (GRACEFUL) before it started: nothing was done"))
	g.Expect(second.Status.Steps).To(BeEmpty())
	cancelled(g, second)
	g.Expect(update(second, func(op *v1alpha1.Operation) { op.Spec.Cancel = v1alpha1.CancelForceful })).To(MatchError(ContainSubstring("a cancel cannot be changed or withdrawn")))

	cancelWith(t, first, v1alpha1.CancelForceful)
	first = waitState(t, first, v1alpha1.StateFailedTemp, time.Minute)
	cancelled(g, first)
	g.Expect(first.Status.Message).To(Equal(`cancelled (FORCEFUL) at once, leaving step "change the Service" where it was, while PROCESSING`))
	change := stepNamed(g, first, "change the Service")
	g.Expect(change.Phase).To(Equal(v1alpha1.StepFailed))
	g.Expect(change.Message).To(HavePrefix("cancelled (FORCEFUL) while it ran: "))
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(4), "what the step did stays until a decision")

	c.hold("core-smf", false)
	g.Expect(update(first, func(op *v1alpha1.Operation) { op.Spec.Resolution = v1alpha1.ResolutionRollback })).To(Succeed())
	waitState(t, first, v1alpha1.StateRolledBack, time.Minute)
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(2))

	done := waitState(t, occurrence(t, ns, "core", scaleOp("smf", v1alpha1.ScaleOut, 1)), v1alpha1.StateCompleted, time.Minute)
	g.Expect(update(done, func(op *v1alpha1.Operation) { op.Spec.Cancel = v1alpha1.CancelGraceful })).To(MatchError(ContainSubstring("cancel is allowed only while the occurrence is STARTING, PROCESSING or ROLLING_BACK")))
}

// A GRACEFUL cancel lets the running step end, then stops before the next one
// (FAILED_TEMP); it is carried out once: a retry runs the steps left, to their end.
func TestCancelGraceful(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	c := standIn(t, ns)
	deploy(t, ns, "core", hookedTemplate(), nil)
	c.hold("core-smf", true)
	spec := scaleOp("smf", v1alpha1.ScaleOut, 1)
	spec.Timeout = &metav1.Duration{Duration: 8 * time.Second}
	op := occurrence(t, ns, "core", spec)
	g.Eventually(func(g Gomega) {
		current := &v1alpha1.Operation{}
		g.Expect(env.client.Get(context.Background(), client.ObjectKeyFromObject(op), current)).To(Succeed())
		g.Expect(stepNamed(g, current, "change the Service").Generation).NotTo(BeZero())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	cancelWith(t, op, v1alpha1.CancelGraceful)
	c.hold("core-smf", false)
	op = waitState(t, op, v1alpha1.StateFailedTemp, time.Minute)
	cancelled(g, op)
	g.Expect(op.Status.Message).To(Equal("cancelled (GRACEFUL) after its running step, while PROCESSING"))
	g.Expect(stepNames(op)).To(Equal([]string{"record the pods: Succeeded", "record what the Service runs: Succeeded", "change the Service: Succeeded"}),
		"the scale_end hook did not begin")
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(4))

	// A retry runs the hook; no pod of this test ground runs it, so it fails in the end —
	// by itself, not cancelled again.
	g.Expect(update(op, func(op *v1alpha1.Operation) { op.Spec.Retries = 1 })).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.client.Get(context.Background(), client.ObjectKeyFromObject(op), op)).To(Succeed())
		g.Expect(states(op)).To(Equal([]v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateProcessing,
			v1alpha1.StateFailedTemp, v1alpha1.StateProcessing, v1alpha1.StateFailedTemp}), "message: %s", op.Status.Message)
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(findCondition(op, v1alpha1.ConditionReady).Reason).To(Equal(v1alpha1.OccurrenceFailedTemp))
	g.Expect(stepNamed(g, op, "hook Lifecycle.scale_end on smf").Phase).To(Equal(v1alpha1.StepFailed))
	g.Expect(update(op, func(op *v1alpha1.Operation) { op.Spec.Resolution = v1alpha1.ResolutionFail })).To(Succeed())
	waitState(t, op, v1alpha1.StateFailed, time.Minute)
}
