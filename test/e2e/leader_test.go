//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/test/e2e/framework"
)

// Two operator replicas, as a highly available install runs them: one leads (only it
// starts its controllers), the other waits; when the leader is killed, the other takes
// the lease over and repairs drift made after the kill.
func TestLeaderElectionHandOver(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-leader")
	ctx := context.Background()
	suite.operator.Stop()
	defer func() { g.Expect(suite.operator.Start()).To(Succeed()) }()

	replica := func(name string) *framework.Operator {
		op := &framework.Operator{Binary: suite.calaf, LogPath: filepath.Join(t.TempDir(), name+".log"), Args: []string{
			"--kubeconfig=" + suite.operatorKubeconfig, "--progress-interval=2s", "--package-cache-dir=" + filepath.Join(t.TempDir(), "packages"),
			"--leader-elect", "--leader-election-namespace=" + framework.OperatorNamespace,
			"--leader-election-lease-duration=8s", "--leader-election-renew-deadline=6s", "--leader-election-retry-period=1s",
		}}
		g.Expect(op.Start()).To(Succeed())
		return op
	}
	holder := func() string {
		lease, err := c.Clientset.CoordinationV1().Leases(framework.OperatorNamespace).Get(ctx, "calaf-operator.calaf.io", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}
	started := func(op *framework.Operator) bool {
		data, _ := os.ReadFile(op.LogPath)
		return strings.Contains(string(data), "Starting workers")
	}

	first := replica("first")
	defer first.Stop()
	g.Eventually(func() bool { return started(first) }, time.Minute, 200*time.Millisecond).Should(BeTrue())
	leader := holder()
	g.Expect(leader).NotTo(BeEmpty())
	second := replica("second")
	defer second.Stop()

	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(configPackage), 0o644)).To(Succeed())
	calaf(t, "deploy", "cfg", dir, "-n", ns, "--wait")
	g.Expect(started(second)).To(BeFalse(), "the follower started its controllers while the leader held the lease")
	g.Expect(holder()).To(Equal(leader))

	first.Kill()
	killed := time.Now()
	configMaps := c.Clientset.CoreV1().ConfigMaps(ns)
	cm, err := configMaps.Get(ctx, "cfg-settings", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	cm.Data["mode"] = "drifted"
	_, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() string {
		cm, err := configMaps.Get(ctx, "cfg-settings", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return cm.Data["mode"]
	}, time.Minute, 200*time.Millisecond).Should(Equal("production"), "the second replica never took over; its log:\n%s", second.Tail(30))
	g.Expect(holder()).NotTo(Equal(leader))
	g.Expect(started(second)).To(BeTrue())
	t.Logf("the follower took over and repaired drift %v after the leader was killed (lease duration 8 s)", time.Since(killed).Round(100*time.Millisecond))
}
