//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"calaf.io/calaf/test/e2e/framework"
)

// The image Calaf's examples default to, busybox:1.36, runs unchanged with imagePullPolicy
// IfNotPresent although the node has no registry (the test ground imports it under that name).
func TestExamplesBusyboxImageRuns(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-images")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, err := c.Clientset.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "busybox", Labels: map[string]string{"app": "busybox"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name:            "main",
				Image:           framework.ExamplesImage,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"sleep", "3600"},
			}},
		},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	pod, err := c.WaitForPodRunning(ctx, ns, "app=busybox", time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("pod %s runs image %s (%s)", pod.Name, pod.Status.ContainerStatuses[0].Image, pod.Status.ContainerStatuses[0].ImageID)

	out, err := c.Exec(ctx, ns, pod.Name, "main", "sh", "-c", "echo $((6 * 7))")
	g.Expect(err).NotTo(HaveOccurred(), "stderr: %s", out.Stderr)
	g.Expect(out.Stdout).To(Equal("42\n"))
}
