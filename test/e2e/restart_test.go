//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
