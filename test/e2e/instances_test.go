//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// affectedOf lists the pods an occurrence affected, by change type.
func affectedOf(op *v1alpha1.Operation) map[v1alpha1.ChangeType][]string {
	out := map[v1alpha1.ChangeType][]string{}
	for _, p := range op.Status.AffectedPods {
		out[p.ChangeType] = append(out[p.ChangeType], p.Pod)
	}
	return out
}

// kubectlGet runs kubectl get against the test cluster.
func kubectlGet(t *testing.T, args ...string) string {
	t.Helper()
	kubectl := "kubectl"
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		kubectl = filepath.Join(assets, "kubectl")
	}
	out, err := exec.Command(kubectl, append([]string{"--kubeconfig", suite.kubeconfig, "get"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// A VNF instance's life on real pods, as an NFVO leads it: created NOT_INSTANTIATED
// (nothing runs); INSTANTIATE runs its pods (configured once, its instantiate_end hook
// once, the pod reported ADDED); SCALE; TERMINATE keeping the instance runs the Standard
// stop operation, removes every pod (reported REMOVED) and leaves the Service
// NOT_INSTANTIATED, as calaf and kubectl say;
// INSTANTIATE again starts it at the level its package declares; then it is deleted.
func TestInstanceLife(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-instance")
	dir := lcmPackage(t, "", 0)
	// A Standard stop operation shows that the teardown of a kept instance runs it.
	template, err := os.ReadFile(filepath.Join(dir, "service.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	withStop := strings.Replace(string(template), "            configure: configure\n", "            configure: configure\n            stop: hook\n", 1)
	g.Expect(withStop).NotTo(Equal(string(template)))
	g.Expect(os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(withStop), 0o644)).To(Succeed())
	calaf(t, "deploy", "core", dir, "-n", ns, "-i=image="+framework.BusyboxImage, "--not-instantiated", "--wait", "--wait-timeout=2m")
	svc := getService(t, ns, "core")
	g.Expect(svc.Status.InstantiationState).To(Equal(v1alpha1.NotInstantiated))
	g.Expect(servicePods(t, c, ns, "core", "smf")).To(BeEmpty())
	g.Expect(calaf(t, "status", "core", "-n", ns)).To(ContainSubstring("Instantiation: NOT_INSTANTIATED (nothing deployed)"))

	out := calaf(t, "instantiate", "core", "-n", ns, "--wait")
	t.Logf("calaf instantiate:\n%s", out)
	g.Expect(out).To(ContainSubstring("COMPLETED: INSTANTIATE of Service core completed"))
	first := waitPods(t, c, ns, "core", "smf", 1)
	inst := createdOccurrence(t, ns, out)
	g.Expect(affectedOf(&inst)).To(Equal(map[v1alpha1.ChangeType][]string{v1alpha1.ChangeAdded: first}))
	g.Expect(stepOf(t, &inst, "hooks instantiate_start", false).Phase).To(Equal(v1alpha1.StepSkipped))
	g.Expect(stepOf(t, &inst, "hook Lifecycle.instantiate_end on smf", false).Phase).To(Equal(v1alpha1.StepSucceeded))
	g.Expect(hookRuns(t, c, ns, first, "Lifecycle.instantiate_end", inst.Name)).To(Equal(1))
	g.Expect(lcmConfigureRuns(t, c, ns, first)).To(Equal(map[string]int{first[0]: 1}))
	g.Expect(kubectlGet(t, "csvc", "core", "-n", ns, "-o", "wide")).To(MatchRegexp(`core\s+True\s+\S+\s+INSTANTIATED`))

	out = calaf(t, "scale", "core", "--aspect", "smf", "-n", ns, "--wait")
	two := waitPods(t, c, ns, "core", "smf", 2)
	scale := createdOccurrence(t, ns, out)
	g.Expect(affectedOf(&scale)).To(Equal(map[v1alpha1.ChangeType][]string{v1alpha1.ChangeAdded: without(two, first)}))

	out = calaf(t, "terminate", "core", "--keep", "-n", ns, "--wait")
	t.Logf("calaf terminate --keep:\n%s", out)
	g.Expect(out).To(ContainSubstring("COMPLETED: Service core terminated: it is NOT_INSTANTIATED"))
	g.Expect(servicePods(t, c, ns, "core", "smf")).To(BeEmpty())
	stops := teardownEvents(t, ns)
	g.Expect(stops).To(HaveLen(1))
	g.Expect(stops[0]).To(ContainSubstring("Standard.stop succeeded in core-smf-"), "the teardown operation ran before the pods went")
	term := createdOccurrence(t, ns, out)
	g.Expect(affectedOf(&term)).To(Equal(map[v1alpha1.ChangeType][]string{v1alpha1.ChangeRemoved: two}))
	svc = getService(t, ns, "core")
	g.Expect(svc.Status.InstantiationState).To(Equal(v1alpha1.NotInstantiated))
	g.Expect(svc.Status.Inventory).To(BeEmpty())
	g.Expect(kubectlGet(t, "csvc", "core", "-n", ns, "-o", "wide")).To(MatchRegexp(`core\s+True\s+\S+\s+NOT_INSTANTIATED`))
	ops := calaf(t, "ops", "core", "-n", ns)
	t.Logf("calaf ops:\n%s", ops)
	for _, kind := range []string{"INSTANTIATE", "SCALE", "TERMINATE"} {
		g.Expect(ops).To(MatchRegexp(`(?m)^\S+\s+core\s+` + kind + `\s+COMPLETED\s`))
	}
	g.Expect(ops).To(ContainSubstring("pods +0 -2 ~0"))

	calaf(t, "instantiate", "core", "-n", ns, "--wait")
	g.Expect(waitPods(t, c, ns, "core", "smf", 1)).NotTo(ContainElement(BeElementOf(two)))
	g.Expect(getService(t, ns, "core").Status.InstantiationState).To(Equal(v1alpha1.Instantiated))

	calaf(t, "delete", "core", "-n", ns, "--wait")
	err = suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "core"}, &v1alpha1.Service{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	g.Eventually(func() map[string]corev1.Pod { return servicePods(t, c, ns, "core", "smf") }, time.Minute, time.Second).Should(BeEmpty())
}

// without returns the names of all not in some.
func without(all, some []string) []string {
	var out []string
	for _, name := range all {
		if !strings.Contains(" "+strings.Join(some, " ")+" ", " "+name+" ") {
			out = append(out, name)
		}
	}
	return out
}
