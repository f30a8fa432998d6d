//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// smfReplicas returns the Deployment's spec.replicas.
func smfReplicas(t *testing.T, c *framework.Cluster, ns string) int32 {
	t.Helper()
	d, err := c.Clientset.AppsV1().Deployments(ns).Get(context.Background(), "core-smf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *d.Spec.Replicas
}

// aspectLevelOf returns the level status.lifecycle reports for an aspect.
func aspectLevelOf(t *testing.T, ns, service, aspect string) int32 {
	t.Helper()
	svc := getService(t, ns, service)
	if svc.Status.Lifecycle != nil {
		for _, a := range svc.Status.Lifecycle.Aspects {
			if a.AspectID == aspect {
				return a.ScaleLevel
			}
		}
	}
	t.Fatalf("Service %s reports no aspect %s", service, aspect)
	return -1
}

// On real pods: SCALE out by 2 steps then in by 1 — the replicas follow, the new pods
// get their Standard.configure, the scale hooks run once each (their outputs recorded on
// the occurrence), status says the level; a drift edit of the replicas (kubectl scale) is
// reverted to the scaled value, a redeploy of the same package keeps it, and a scale past
// the maximum is refused. Then a HEAL of one broken pod replaces it (configured again, its
// hooks once each) and leaves the other pod untouched.
func TestLifecycleScaleAndHeal(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-lcm")
	ctx := context.Background()
	dir := lcmPackage(t, "", 0)
	image := "-i=image=" + framework.BusyboxImage
	calaf(t, "deploy", "core", dir, "-n", ns, image, "--wait", "--wait-timeout=4m")
	first := waitPods(t, c, ns, "core", "smf", 1)

	out := calaf(t, "scale", "core", "--aspect", "smf", "--steps", "2", "-n", ns, "--wait")
	t.Logf("calaf scale:\n%s", out)
	g.Expect(out).To(ContainSubstring("PROCESSING"))
	g.Expect(out).To(ContainSubstring("COMPLETED"))
	scaled := waitPods(t, c, ns, "core", "smf", 3)
	g.Expect(scaled).To(ContainElement(first[0]))
	g.Expect(lcmConfigureRuns(t, c, ns, scaled)).To(Equal(map[string]int{scaled[0]: 1, scaled[1]: 1, scaled[2]: 1}), "each new pod configured once")
	g.Expect(smfReplicas(t, c, ns)).To(BeEquivalentTo(3))
	g.Expect(aspectLevelOf(t, ns, "core", "smf")).To(BeEquivalentTo(2))
	op := createdOccurrence(t, ns, out)
	g.Expect(op.Spec.Type).To(Equal(v1alpha1.OperationScale))
	g.Expect(stateNames(&op)).To(Equal([]string{"STARTING", "PROCESSING", "COMPLETED"}))
	g.Expect(hookRuns(t, c, ns, scaled, "Lifecycle.scale_start", op.Name)).To(Equal(1))
	g.Expect(hookRuns(t, c, ns, scaled, "Lifecycle.scale_end", op.Name)).To(Equal(1))
	end := stepOf(t, &op, "hook Lifecycle.scale_end on smf", false)
	g.Expect(end.Phase).To(Equal(v1alpha1.StepSucceeded))
	g.Expect(string(end.Outputs["hook"].Raw)).To(Equal(`"Lifecycle.scale_end"`))
	g.Expect(end.Operation).NotTo(BeEmpty())

	out = calaf(t, "scale", "core", "--aspect", "smf", "--in", "-n", ns, "--wait")
	g.Expect(out).To(ContainSubstring("COMPLETED"))
	two := waitPods(t, c, ns, "core", "smf", 2)
	g.Expect(smfReplicas(t, c, ns)).To(BeEquivalentTo(2))
	g.Expect(aspectLevelOf(t, ns, "core", "smf")).To(BeEquivalentTo(1))

	// Drift: kubectl scale of the Deployment is reverted to the scaled value.
	edited, err := c.Clientset.AppsV1().Deployments(ns).UpdateScale(ctx, "core-smf",
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "core-smf", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(edited.Spec.Replicas).To(BeEquivalentTo(4))
	g.Eventually(func() int32 { return smfReplicas(t, c, ns) }, time.Minute, 200*time.Millisecond).Should(BeEquivalentTo(2))
	// A redeploy of the same package keeps the level.
	calaf(t, "deploy", "core", dir, "-n", ns, image, "--wait", "--wait-timeout=4m")
	waitReady(t, ns, "core", time.Minute)
	g.Expect(smfReplicas(t, c, ns)).To(BeEquivalentTo(2))
	g.Expect(aspectLevelOf(t, ns, "core", "smf")).To(BeEquivalentTo(1))
	two = waitPods(t, c, ns, "core", "smf", 2)

	// Past the maximum: refused, exit code 1, nothing moves.
	out, code := calafExit(t, "scale", "core", "--aspect", "smf", "--steps", "3", "-n", ns, "--wait")
	g.Expect(code).To(Equal(1), out)
	g.Expect(out).To(ContainSubstring("refused: aspect smf is at scale level 1: 3 steps out would reach level 4, past its maximum 3"))
	g.Expect(smfReplicas(t, c, ns)).To(BeEquivalentTo(2))

	healBrokenPod(t, c, ns, two)

	// calaf ops lists them all.
	out = calaf(t, "ops", "core", "-n", ns)
	t.Logf("calaf ops:\n%s", out)
	g.Expect(strings.Count(out, "COMPLETED")).To(Equal(3))
	g.Expect(out).To(ContainSubstring("FAILED"))
	g.Expect(out).NotTo(ContainSubstring("hook"), "hook runs are not listed by default")
}

// healBrokenPod breaks one of two pods (its configuration is gone) and heals it: it is
// replaced and configured, its hooks run once each, the other pod keeps its UID and ran
// configure once.
func healBrokenPod(t *testing.T, c *framework.Cluster, ns string, two []string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	pods := servicePods(t, c, ns, "core", "smf")
	victim, other := pods[two[0]], pods[two[1]]
	_, err := c.Exec(ctx, ns, victim.Name, "main", "rm", "/tmp/smf.conf")
	g.Expect(err).NotTo(HaveOccurred())
	out := calaf(t, "heal", "core", "--pod", victim.Name, "-n", ns, "--wait")
	t.Logf("calaf heal:\n%s", out)
	g.Expect(out).To(ContainSubstring("COMPLETED"))
	healed := waitPods(t, c, ns, "core", "smf", 2)
	g.Expect(healed).NotTo(ContainElement(victim.Name))
	g.Expect(healed).To(ContainElement(other.Name))
	after := servicePods(t, c, ns, "core", "smf")
	g.Expect(after[other.Name].UID).To(Equal(other.UID), "the other pod is untouched")
	runs := lcmConfigureRuns(t, c, ns, healed)
	for _, name := range healed {
		g.Expect(runs[name]).To(Equal(1), "pod %s", name)
		conf, err := c.Exec(ctx, ns, name, "main", "cat", "/tmp/smf.conf")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(conf.Stdout).To(Equal("dnn=internet\n"))
	}
	heal := createdOccurrence(t, ns, out)
	g.Expect(heal.Spec.Type).To(Equal(v1alpha1.OperationHeal))
	g.Expect(heal.Status.OperationState).To(Equal(v1alpha1.StateCompleted))
	g.Expect(stepOf(t, &heal, "choose the pods to recreate", false).Pods).To(Equal([]string{victim.Name + "/" + string(victim.UID)}))
	g.Expect(hookRuns(t, c, ns, healed, "Lifecycle.heal_end", heal.Name)).To(Equal(1))
	g.Expect(stepOf(t, &heal, "hook Lifecycle.heal_start on smf", false).Phase).To(Equal(v1alpha1.StepSucceeded))

}

// An ETSI package scales by its ScalingAspects: the VDU's replicas follow the aspect's
// deltas, status.vnf and status.lifecycle say the level, and past max_scale_level the
// request is refused.
func TestLifecycleScaleETSI(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-lcm-etsi")
	calaf(t, "deploy", "cnf", "test/etsi/cnf-manifests", "-n", ns, "--instantiate", "test/etsi/cnf-manifests.simple.json", "--wait", "--wait-timeout=4m")
	expectVNF(t, ns, "cnf", map[string]int32{"front": 1, "store": 1}, map[string]int32{"front_aspect": 0})
	out := calaf(t, "scale", "cnf", "--aspect", "front_aspect", "-n", ns, "--wait")
	g.Expect(out).To(ContainSubstring("COMPLETED"))
	expectVNF(t, ns, "cnf", map[string]int32{"front": 2, "store": 1}, map[string]int32{"front_aspect": 1})
	g.Expect(runningPods(t, c, ns, "cnf", "front")).To(Equal(2))
	g.Expect(aspectLevelOf(t, ns, "cnf", "front_aspect")).To(BeEquivalentTo(1))
	out, code := calafExit(t, "scale", "cnf", "--aspect", "front_aspect", "--steps", "2", "-n", ns, "--wait")
	g.Expect(code).To(Equal(1), out)
	g.Expect(out).To(ContainSubstring("past its maximum 2 (its max_scale_level)"))
	out, code = calafExit(t, "scale", "cnf", "--level", "instantiation_level_2", "-n", ns, "--wait")
	g.Expect(code).To(Equal(0), out)
	expectVNF(t, ns, "cnf", map[string]int32{"front": 2, "store": 2}, map[string]int32{"front_aspect": 1})
}
