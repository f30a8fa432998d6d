//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/lifecycle"
	"calaf.io/calaf/test/e2e/framework"
)

// fireAlert posts one firing alert to the operator's Alertmanager webhook and returns
// what it did.
func fireAlert(t *testing.T, labels map[string]string) lifecycle.AlertOutcome {
	t.Helper()
	payload := lifecycle.AlertPayload{Version: "4", Status: "firing", Alerts: []lifecycle.Alert{{Status: "firing", Labels: labels, StartsAt: time.Now(), Fingerprint: "e2e"}}}
	data, _ := json.Marshal(payload)
	req, _ := http.NewRequest(http.MethodPost, suite.webhook+lifecycle.AlertPath, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+suite.token)
	resp, err := suite.webhookClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Outcomes []lifecycle.AlertOutcome `json:"outcomes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK || len(body.Outcomes) != 1 {
		t.Fatalf("alert webhook: %s, %v, %+v", resp.Status, err, body)
	}
	return body.Outcomes[0]
}

// An alert posted to the Alertmanager webhook heals the VDU its rule names — every pod of
// smf recreated and configured — once within the rule's cooldown; past the cooldown it
// heals again, and past the rule's rate (2 an hour) it is refused. The occurrence records
// the alert.
func TestLifecycleAlertHeals(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-lcm-alert")
	calaf(t, "deploy", "core", lcmPackage(t, "", 0), "-n", ns, "-i=image="+framework.BusyboxImage, "--wait", "--wait-timeout=4m")
	before := servicePods(t, c, ns, "core", "smf")
	labels := map[string]string{"alertname": "SMFDown", "severity": "critical", "namespace": ns, "calaf_service": "core"}

	outcome := fireAlert(t, labels)
	g.Expect(outcome.Outcome).To(Equal(lifecycle.OutcomeCreated), outcome.Message)
	g.Expect(fireAlert(t, labels).Outcome).To(Equal(lifecycle.OutcomeCooldown), "a second alert within the cooldown does nothing")
	heal := waitOccurrence(t, ns, outcome.Occurrence, v1alpha1.StateCompleted)
	g.Expect(heal.Spec.Type).To(Equal(v1alpha1.OperationHeal))
	g.Expect(heal.Spec.Heal.Nodes).To(Equal([]string{"smf"}))
	g.Expect(heal.Spec.TriggeredBy.AlertName).To(Equal("SMFDown"))
	g.Expect(heal.Spec.TriggeredBy.Rule).To(Equal("smf_down"))
	after := waitPods(t, c, ns, "core", "smf", 1)
	for name := range before {
		g.Expect(after).NotTo(ContainElement(name), "the pod was recreated")
	}
	g.Expect(lcmConfigureRuns(t, c, ns, after)).To(Equal(map[string]int{after[0]: 1}))
	out := calaf(t, "ops", "core", "-n", ns)
	g.Expect(out).To(ContainSubstring("alert SMFDown"))

	g.Eventually(func() string { return fireAlert(t, labels).Outcome }, time.Minute, 2*time.Second).Should(Equal(lifecycle.OutcomeCreated), "past the cooldown")
	second := lastOccurrence(t, ns)
	waitOccurrence(t, ns, second.Name, v1alpha1.StateCompleted)
	g.Eventually(func() string { return fireAlert(t, labels).Message }, time.Minute, 2*time.Second).
		Should(ContainSubstring("made 2 occurrences in the last hour, its maximum: refused"))
	g.Expect(occurrences(t, ns)).To(HaveLen(2))
}

// waitOccurrence waits until an occurrence is in a state.
func waitOccurrence(t *testing.T, ns, name string, state v1alpha1.OperationState) *v1alpha1.Operation {
	t.Helper()
	var op *v1alpha1.Operation
	NewWithT(t).Eventually(func(g Gomega) {
		op = getOccurrence(t, ns, name)
		g.Expect(op.Status.OperationState).To(Equal(state), "%s: %s", name, op.Status.Message)
	}, 4*time.Minute, time.Second).Should(Succeed(), "operator log:\n%s", suite.operator.Tail(30))
	return op
}

// TERMINATE runs the terminate_start hooks (its output recorded) and the nodes' teardown,
// then removes the Service and everything it ran; the occurrence outlives the Service.
func TestLifecycleTerminate(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-lcm-term")
	ctx := context.Background()
	dir := lcmPackage(t, "", 0)
	addTerminateHook(t, dir)
	calaf(t, "deploy", "core", dir, "-n", ns, "-i=image="+framework.BusyboxImage, "--wait", "--wait-timeout=4m")
	op := &v1alpha1.Operation{}
	op.Namespace, op.GenerateName = ns, "core-terminate-"
	op.Spec = v1alpha1.OperationSpec{ServiceName: "core", Type: v1alpha1.OperationTerminate, Terminate: &v1alpha1.TerminateRequest{TerminationType: v1alpha1.TerminationGraceful, GracefulTerminationTimeout: 120}}
	g.Expect(suite.client.Create(ctx, op)).To(Succeed())
	op = waitOccurrence(t, ns, op.Name, v1alpha1.StateCompleted)
	hook := stepOf(t, op, "hook Lifecycle.terminate_start on smf", false)
	g.Expect(hook.Phase).To(Equal(v1alpha1.StepSucceeded))
	g.Expect(string(hook.Outputs["hook"].Raw)).To(Equal(`"Lifecycle.terminate_start"`))
	g.Expect(op.Status.Message).To(Equal("Service core terminated"))
	err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "core"}, &v1alpha1.Service{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Service is gone: %v", err)
	expectGone(t, c, ns)
}

// addTerminateHook adds a terminate_start hook to the smf node of an lcmPackage.
func addTerminateHook(t *testing.T, dir string) {
	t.Helper()
	path := dir + "/service.yaml"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("            heal_end: hook\n"), []byte("            heal_end: hook\n            terminate_start: hook\n"), 1)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The operator killed (SIGKILL) while an occurrence is PROCESSING loses nothing: killed
// while its scale_start hook runs, the occurrence ends FAILED_TEMP (the interrupted hook is
// not run again by itself) and a retry completes it without running again the steps it
// recorded done; killed while it waits for the new pods, it resumes and completes, each
// hook having run once.
func TestLifecycleOperatorKilled(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-lcm-kill")
	slowStart := "sleep 6\necho \"$CALAF_OPERATION $occurrence\" >> /tmp/hooks.log\necho \"hook=$CALAF_OPERATION\" >> \"$CALAF_OUTPUTS\"\n"
	calaf(t, "deploy", "core", lcmPackage(t, slowStart, 8), "-n", ns, "-i=image="+framework.BusyboxImage, "--wait", "--wait-timeout=4m")

	// Killed while the hook runs.
	op := createdOccurrence(t, ns, calaf(t, "scale", "core", "--aspect", "smf", "-n", ns))
	g.Eventually(func(g Gomega) {
		current := getOccurrence(t, ns, op.Name)
		hook, _ := findStep(current, "hook Lifecycle.scale_start on smf", false)
		g.Expect(hook.Operation).NotTo(BeEmpty())
		g.Expect(getOccurrence(t, ns, hook.Operation).Status.Phase).To(Equal(v1alpha1.OperationRunning))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	snapshot := stepOf(t, getOccurrence(t, ns, op.Name), "record what the Service runs", false)
	suite.operator.Kill()
	g.Expect(suite.operator.Start()).To(Succeed())
	failed := waitOccurrence(t, ns, op.Name, v1alpha1.StateFailedTemp)
	g.Expect(failed.Status.Message).To(ContainSubstring("interrupted"))
	out := calaf(t, "retry", op.Name, "-n", ns, "--wait")
	g.Expect(out).To(ContainSubstring("COMPLETED"))
	done := getOccurrence(t, ns, op.Name)
	g.Expect(stepOf(t, done, "record what the Service runs", false)).To(Equal(snapshot), "a step recorded done did not run again")
	g.Expect(stepOf(t, done, "hook Lifecycle.scale_start on smf", false).Attempt).To(BeEquivalentTo(1))
	pods := waitPods(t, c, ns, "core", "smf", 2)
	g.Expect(hookRuns(t, c, ns, pods, "Lifecycle.scale_end", op.Name)).To(Equal(1))

	// Killed while it waits for the new pod (ready only after 8 s): it resumes.
	op = createdOccurrence(t, ns, calaf(t, "scale", "core", "--aspect", "smf", "-n", ns))
	g.Eventually(func(g Gomega) {
		change, _ := findStep(getOccurrence(t, ns, op.Name), "change the Service", false)
		g.Expect(change.Generation).NotTo(BeZero())
		g.Expect(change.Phase).To(Equal(v1alpha1.StepRunning))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	suite.operator.Kill()
	g.Expect(suite.operator.Start()).To(Succeed())
	done = waitOccurrence(t, ns, op.Name, v1alpha1.StateCompleted)
	g.Expect(stateNames(done)).To(Equal([]string{"STARTING", "PROCESSING", "COMPLETED"}))
	pods = waitPods(t, c, ns, "core", "smf", 3)
	g.Expect(hookRuns(t, c, ns, pods, "Lifecycle.scale_start", op.Name)).To(Equal(1))
	g.Expect(hookRuns(t, c, ns, pods, "Lifecycle.scale_end", op.Name)).To(Equal(1))
	g.Expect(lcmConfigureRuns(t, c, ns, pods)).To(HaveEach(1))
}
