//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// The operator killed with SIGKILL in the middle of a reconcile and started again
// converges: every object exists once, objects created before the kill are kept (same
// UID), each Deployment rolled out once, nothing outside the inventory.
func TestOperatorKilledMidReconcileConverges(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-restart")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	calaf(t, "deploy", "core", "examples/network-service", "-n", ns)
	// Kill the operator once some nodes are applied and others still wait.
	g.Eventually(func() bool {
		svc := getService(t, ns, "core")
		ready, waiting := 0, 0
		for _, node := range svc.Status.Nodes {
			if node.Phase == v1alpha1.NodeReady {
				ready++
			} else {
				waiting++
			}
		}
		return ready > 0 && waiting > 0
	}, 3*time.Minute, 100*time.Millisecond).Should(BeTrue())
	suite.operator.Kill()
	before := map[string]types.UID{}
	deployments, err := c.Clientset.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, d := range deployments.Items {
		before["Deployment/"+d.Name] = d.UID
	}
	configMaps, err := c.Clientset.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "calaf.io/service=core"})
	g.Expect(err).NotTo(HaveOccurred())
	for _, cm := range configMaps.Items {
		before["ConfigMap/"+cm.Name] = cm.UID
	}
	t.Logf("killed the operator with %d objects applied", len(before))

	g.Expect(suite.operator.Start()).To(Succeed())
	svc := waitReady(t, ns, "core", 5*time.Minute)

	seen := map[string]bool{}
	for _, entry := range svc.Status.Inventory {
		g.Expect(seen[entry.ID]).To(BeFalse(), "inventory holds %s twice", entry.ID)
		seen[entry.ID] = true
	}
	deployments, err = c.Clientset.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deployments.Items).To(HaveLen(3))
	for _, d := range deployments.Items {
		if uid, ok := before["Deployment/"+d.Name]; ok {
			g.Expect(d.UID).To(Equal(uid), "%s was recreated", d.Name)
		}
		sets, err := c.Clientset.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "calaf.io/node=" + d.Labels["calaf.io/node"]})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sets.Items).To(HaveLen(1), "%s rolled out more than once", d.Name)
	}
	configMaps, err = c.Clientset.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "calaf.io/service=core"})
	g.Expect(err).NotTo(HaveOccurred())
	for _, cm := range configMaps.Items {
		if uid, ok := before["ConfigMap/"+cm.Name]; ok {
			g.Expect(cm.UID).To(Equal(uid))
		}
		g.Expect(seen[ns+"_"+cm.Name+"__ConfigMap"]).To(BeTrue(), "ConfigMap %s is not in the inventory", cm.Name)
	}
}

const slowOpsPackage = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  test.App:
    derived_from: calaf.nodes.Deployment
    interfaces:
      Admin:
        type: tosca.interfaces.Root
        operations:
          slow: {}
topology_template:
  node_templates:
    app:
      type: test.App
      properties:
        image: busybox:1.36
        replicas: 2
        command: [ sh, -c, 'exec sleep 1000000' ]
      artifacts:
        configure:
          type: calaf.artifacts.Shell
          file: Artifacts/configure.sh
        slow:
          type: calaf.artifacts.Shell
          file: Artifacts/slow.sh
      interfaces:
        Standard:
          operations:
            configure: configure
        Admin:
          operations:
            slow: slow
`

// The operator killed with SIGKILL while operations run in pods: lifecycle operations
// are at-least-once — an interrupted run runs again, a recorded one never — and an
// on-demand Operation at most once (it ends Failed, interrupted, and does not run again).
// Runs are counted in each pod.
func TestOperatorKilledDuringOperations(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-kill-ops")
	ctx := context.Background()
	dir := t.TempDir()
	files := map[string]string{
		"service.yaml":           slowOpsPackage,
		"Artifacts/configure.sh": "echo run >> /tmp/configure-runs\nsleep 6\n",
		"Artifacts/slow.sh":      "echo run >> /tmp/slow-runs\nsleep 6\n",
	}
	for name, content := range files {
		g.Expect(os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
	}
	runs := func(file string) map[string]int {
		counts := map[string]int{}
		pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "calaf.io/service=ops"})
		g.Expect(err).NotTo(HaveOccurred())
		for _, pod := range pods.Items {
			out, err := c.Exec(ctx, ns, pod.Name, "main", "sh", "-c", "cat "+file+" 2>/dev/null | wc -l")
			g.Expect(err).NotTo(HaveOccurred())
			n, _ := strconv.Atoi(strings.TrimSpace(out.Stdout))
			counts[pod.Name] = n
		}
		return counts
	}

	calaf(t, "deploy", "ops", dir, "-n", ns)
	g.Eventually(func() bool { // kill once configure runs
		for _, node := range getService(t, ns, "ops").Status.Nodes {
			for _, op := range node.Operations {
				if op.Name == "Standard.configure" && op.Phase == v1alpha1.OperationRunning {
					return true
				}
			}
		}
		return false
	}, 3*time.Minute, 100*time.Millisecond).Should(BeTrue())
	suite.operator.Kill()
	g.Expect(suite.operator.Start()).To(Succeed())
	waitReady(t, ns, "ops", 3*time.Minute)
	afterKill := runs("/tmp/configure-runs")
	t.Logf("configure runs per pod after a kill mid-run: %v", afterKill)
	g.Expect(afterKill).To(HaveLen(2))
	for pod, n := range afterKill {
		g.Expect(n).To(BeNumerically(">=", 1), "pod %s", pod)
		g.Expect(n).To(BeNumerically("<=", 2), "pod %s ran configure more than the interrupted run and its rerun", pod)
	}
	// Recorded runs never run again: not on a reconcile, not after another restart.
	calaf(t, "reconcile", "ops", "-n", ns, "--wait")
	suite.operator.Stop()
	g.Expect(suite.operator.Start()).To(Succeed())
	calaf(t, "reconcile", "ops", "-n", ns, "--wait")
	g.Expect(runs("/tmp/configure-runs")).To(Equal(afterKill))

	// An on-demand run interrupted by a kill is not run again.
	ctxRun, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, _, _ = framework.Calaf(ctxRun, suite.calaf, suite.kubeconfig, "run", "ops", "app", "Admin.slow", "-n", ns)
	var name string
	g.Eventually(func() bool {
		list := &v1alpha1.OperationList{}
		g.Expect(suite.client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for _, op := range list.Items {
			if op.Status.Phase == v1alpha1.OperationRunning {
				name = op.Name
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond).Should(BeTrue())
	suite.operator.Kill()
	g.Expect(suite.operator.Start()).To(Succeed())
	op := &v1alpha1.Operation{}
	g.Eventually(func() v1alpha1.OperationPhase {
		g.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, op)).To(Succeed())
		return op.Status.Phase
	}, time.Minute, time.Second).Should(Equal(v1alpha1.OperationFailed))
	// The occurrence names the step that was cut short, and why.
	g.Expect(op.Status.Message).To(ContainSubstring("interrupted: the operator stopped while it ran"))
	calaf(t, "reconcile", "ops", "-n", ns, "--wait")
	slow := runs("/tmp/slow-runs")
	t.Logf("on-demand runs per pod after a kill mid-run: %v", slow)
	for pod, n := range slow {
		g.Expect(n).To(BeNumerically("<=", 1), "pod %s ran the on-demand operation again", pod)
	}
}
