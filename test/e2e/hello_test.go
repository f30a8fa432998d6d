//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/test/e2e/framework"
)

// hello-world, deployed with the CLI, reaches Ready with its pod Running; its url output
// is computed from the live cluster IP; changing an input scales it in place.
func TestHelloWorld(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-hello")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	start := time.Now()
	out := calaf(t, "deploy", "hello", "examples/hello-world", "-n", ns, "-i", "message=Hello from the e2e test", "--wait", "--wait-timeout=4m")
	t.Logf("calaf deploy --wait: Ready after %v\n%s", time.Since(start).Round(time.Millisecond), out)
	svc := waitReady(t, ns, "hello", time.Minute)

	pod, err := c.WaitForPodRunning(ctx, ns, "calaf.io/service=hello,calaf.io/node=web", time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	front, err := c.Clientset.CoreV1().Services(ns).Get(ctx, "hello-frontend", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(front.Spec.ClusterIP).NotTo(BeEmpty())
	g.Expect(output(svc, "url")).To(Equal("http://" + front.Spec.ClusterIP + "/"))
	g.Expect(output(svc, "ready_replicas")).To(BeEquivalentTo(1))

	served, err := c.Exec(ctx, ns, pod.Name, "main", "wget", "-qO-", "http://127.0.0.1:8080/")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(served.Stdout).To(ContainSubstring("Hello from the e2e test"))

	status := calaf(t, "status", "hello", "-n", ns)
	g.Expect(status).To(ContainSubstring("web"))
	g.Expect(status).To(ContainSubstring("Ready"))
	g.Expect(status).To(ContainSubstring(front.Spec.ClusterIP))

	deployment, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, "hello-web", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	calaf(t, "deploy", "hello", "examples/hello-world", "-n", ns, "-i", "message=Hello from the e2e test", "-i", "replicas=2", "--wait", "--wait-timeout=4m")
	svc = waitReady(t, ns, "hello", time.Minute)
	g.Eventually(func(g Gomega) {
		svc = getService(t, ns, "hello")
		g.Expect(output(svc, "ready_replicas")).To(BeEquivalentTo(2))
	}, time.Minute, time.Second).Should(Succeed())
	pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "calaf.io/node=web"})
	g.Expect(err).NotTo(HaveOccurred())
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	g.Expect(running).To(Equal(2))
	scaled, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, "hello-web", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(scaled.UID).To(Equal(deployment.UID), "updated in place")

	calaf(t, "delete", "hello", "-n", ns, "--wait")
	g.Eventually(func() int {
		list, _ := c.Clientset.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		services, _ := c.Clientset.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		return len(list.Items) + len(services.Items)
	}, time.Minute, time.Second).Should(BeZero())
	_ = strings.TrimSpace
}
