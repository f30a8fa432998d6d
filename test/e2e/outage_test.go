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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/test/e2e/framework"
)

// The API server goes away for 20 s (a restart) and for 60 s while an operator with
// leader election — as deployed in a cluster — runs: its process never exits (no
// container restart, no crash-loop back-off), and once the API answers again it repairs a
// drifted object and applies a changed Service promptly. The figures go to
// docs/operator.md.
func TestAPIServerOutages(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-outage")
	ctx := context.Background()

	// This test's operator elects a leader, as the deployed one does; the suite's pauses.
	suite.operator.Stop()
	defer func() { g.Expect(suite.operator.Start()).To(Succeed()) }()
	logPath := filepath.Join(t.TempDir(), "operator.log")
	op := &framework.Operator{Binary: suite.calaf, LogPath: logPath, Args: []string{
		"--kubeconfig=" + suite.operatorKubeconfig, "--progress-interval=2s", "--package-cache-dir=" + filepath.Join(t.TempDir(), "packages"),
		"--leader-elect", "--leader-election-namespace=" + framework.OperatorNamespace,
	}}
	g.Expect(op.Start()).To(Succeed())
	defer op.Stop()

	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(configPackage), 0o644)).To(Succeed())
	calaf(t, "deploy", "cfg", dir, "-n", ns, "--wait")
	configMaps := c.Clientset.CoreV1().ConfigMaps(ns)

	for i, outage := range []time.Duration{20 * time.Second, 60 * time.Second} {
		apiserver(t, "stop")
		time.Sleep(outage)
		apiserver(t, "start")
		back := time.Now()
		g.Expect(op.Running()).To(BeTrue(), "the operator exited during a %v outage; log:\n%s", outage, op.Tail(40))

		// Drift made right after the outage is repaired, and a changed Service applied.
		cm, err := configMaps.Get(ctx, "cfg-settings", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		cm.Data["mode"] = "drifted"
		_, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		svc := getService(t, ns, "cfg")
		patch := client.MergeFrom(svc.DeepCopy())
		svc.Spec.Interval = &metav1.Duration{Duration: time.Duration(11+i) * time.Minute}
		g.Expect(suite.client.Patch(ctx, svc, patch)).To(Succeed())

		g.Eventually(func() string {
			cm, err := configMaps.Get(ctx, "cfg-settings", metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			return cm.Data["mode"]
		}, 2*time.Minute, 100*time.Millisecond).Should(Equal("production"), "drift not repaired after a %v outage; log:\n%s", outage, op.Tail(40))
		repaired := time.Since(back)
		waitReady(t, ns, "cfg", 2*time.Minute)
		t.Logf("API server away %v: drift repaired %v and the changed Service Ready %v after it answered again; operator process still running",
			outage, repaired.Round(100*time.Millisecond), time.Since(back).Round(100*time.Millisecond))
		g.Expect(op.Running()).To(BeTrue())
	}
	data, err := os.ReadFile(logPath)
	g.Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "starting the manager again") || strings.Contains(line, "the API server") {
			t.Log(line)
		}
	}
}

// apiserver stops or starts the test ground's kube-apiserver.
func apiserver(t *testing.T, verb string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(framework.RepoRoot(), "test/ground/apiserver.sh"), verb)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apiserver.sh %s: %v\n%s", verb, err, out)
	}
}
