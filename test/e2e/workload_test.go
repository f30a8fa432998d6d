//go:build e2e

package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/exec"
	"k8s.io/utils/ptr"

	"calaf.io/calaf/test/e2e/framework"
)

// A Deployment of the busybox image runs on the real kubelet, and exec into its pod returns
// the command's output and propagates its exit code.
func TestDeploymentPodRunsAndExecs(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-workload")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	created := time.Now()
	_, err := c.Clientset.AppsV1().Deployments(ns).Create(ctx, sleeper("sleeper"), metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	pod, err := c.WaitForPodRunning(ctx, ns, "app=sleeper", time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("pod %s Running %v after the Deployment was created", pod.Name, time.Since(created).Round(time.Millisecond))

	started := time.Now()
	out, err := c.Exec(ctx, ns, pod.Name, "main", "echo", "hello from calaf")
	t.Logf("exec round trip: %v", time.Since(started).Round(time.Millisecond))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Stdout).To(Equal("hello from calaf\n"))
	g.Expect(out.Stderr).To(BeEmpty())

	out, err = c.Exec(ctx, ns, pod.Name, "main", "sh", "-c", "echo out; echo err >&2; exit 3")
	var exitErr exec.CodeExitError
	g.Expect(errors.As(err, &exitErr)).To(BeTrue(), "want an exit code error, got %v", err)
	g.Expect(exitErr.ExitStatus()).To(Equal(3))
	g.Expect(out.Stdout).To(Equal("out\n"))
	g.Expect(out.Stderr).To(Equal("err\n"))
}

// sleeper is a one-replica Deployment of the busybox image that sleeps, labelled app=NAME.
func sleeper(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{
						Name:            "main",
						Image:           framework.BusyboxImage,
						ImagePullPolicy: corev1.PullNever,
						Command:         []string{"sleep", "3600"},
					}},
				},
			},
		},
	}
}
