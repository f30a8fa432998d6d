//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// The network-service example (NRF, AMF, SMF, a UDR StatefulSet with storage, generated
// configuration, an N2 NodePort, network policies and a disruption budget) reaches Ready with every pod Running; its
// outputs come from live attributes and endpoints are injected through relationships.
func TestNetworkService(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-5gc")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	start := time.Now()
	calaf(t, "deploy", "core", "examples/network-service", "-n", ns, "--wait", "--wait-timeout=5m")
	t.Logf("network service Ready after %v", time.Since(start).Round(time.Millisecond))
	svc := waitReady(t, ns, "core", time.Minute)

	var order []string
	for _, node := range svc.Status.Nodes {
		order = append(order, node.Name)
		g.Expect(node.Phase).To(Equal(v1alpha1.NodeReady), "node %s: %s", node.Name, node.Message)
	}
	g.Expect(indexOf(order, "nrf")).To(BeNumerically("<", indexOf(order, "smf")))
	g.Expect(indexOf(order, "udr")).To(BeNumerically("<", indexOf(order, "smf")))
	g.Expect(indexOf(order, "smf")).To(BeNumerically("<", indexOf(order, "amf")))

	for _, node := range []string{"nrf", "udr", "amf", "smf"} {
		_, err := c.WaitForPodRunning(ctx, ns, "calaf.io/service=core,calaf.io/node="+node, time.Minute)
		g.Expect(err).NotTo(HaveOccurred(), node)
	}
	claims, err := c.Clientset.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claims.Items).To(HaveLen(1))
	g.Expect(claims.Items[0].Status.Phase).To(Equal(corev1.ClaimBound))

	n2, err := c.Clientset.CoreV1().Services(ns).Get(ctx, "core-n2", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n2.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
	g.Expect(output(svc, "n2_address")).To(Equal(n2.Spec.ClusterIP + ":38412"))
	g.Expect(output(svc, "n2_node_ports")).To(HaveKeyWithValue(n2.Spec.Ports[0].Name, BeEquivalentTo(n2.Spec.Ports[0].NodePort)))
	g.Expect(output(svc, "subscriber_store_ready")).To(BeEquivalentTo(1))
	g.Expect(output(svc, "plmn")).To(Equal("001-01"))

	smf, err := c.WaitForPodRunning(ctx, ns, "calaf.io/service=core,calaf.io/node=smf", time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	env, err := c.Exec(ctx, ns, smf.Name, "main", "sh", "-c", "echo $NRF_HOST:$NRF_PORT $UDR_URL; cat /etc/plmn/plmn")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Stdout).To(ContainSubstring(fmt.Sprintf("core-nrf.%s.svc:8000", ns)))
	g.Expect(env.Stdout).To(ContainSubstring(fmt.Sprintf("tcp://core-udr.%s.svc:8000", ns)))
	g.Expect(env.Stdout).To(ContainSubstring("001-01"))

	policies, err := c.Clientset.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{LabelSelector: "calaf.io/service=core"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(policies.Items).To(HaveLen(2))
	for _, policy := range policies.Items {
		g.Expect(policy.Spec.PodSelector.MatchLabels).To(HaveKeyWithValue("calaf.io/service", "core"), "policy %s selects only this Service's pods", policy.Name)
	}
}

// The example can be copied: a second Service of the same package in the same namespace
// deploys beside the first, and its names and selectors never touch the first one's (its
// disruption budget, network policies and workloads are its own).
func TestNetworkServiceTwiceSideBySide(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-5gc-twice")
	ctx := context.Background()
	for _, name := range []string{"core", "core2"} {
		calaf(t, "deploy", name, "examples/network-service", "-n", ns, "--wait", "--wait-timeout=5m")
	}
	for _, name := range []string{"core", "core2"} {
		waitReady(t, ns, name, time.Minute)
		budgets, err := c.Clientset.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{LabelSelector: "calaf.io/service=" + name})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(budgets.Items).To(HaveLen(1))
		g.Expect(budgets.Items[0].Name).To(Equal(name + "-amf-budget"))
		g.Expect(budgets.Items[0].Spec.Selector.MatchLabels).To(HaveKeyWithValue("calaf.io/service", name))
		g.Eventually(func() int32 {
			pdb, err := c.Clientset.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name+"-amf-budget", metav1.GetOptions{})
			if err != nil {
				return -1
			}
			return pdb.Status.ExpectedPods
		}, time.Minute, time.Second).Should(BeEquivalentTo(1), "the budget of %s counts its own AMF pod only", name)
		policies, err := c.Clientset.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{LabelSelector: "calaf.io/service=" + name})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(policies.Items).To(HaveLen(2))
		for _, policy := range policies.Items {
			g.Expect(policy.Spec.PodSelector.MatchLabels).To(HaveKeyWithValue("calaf.io/service", name))
		}
	}
}

func indexOf(list []string, s string) int {
	for i, item := range list {
		if item == s {
			return i
		}
	}
	return -1
}
