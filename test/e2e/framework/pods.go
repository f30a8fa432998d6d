package framework

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitForPodRunning waits until a pod in namespace ns matching the label selector is Running
// with all its containers ready, and returns it. On a time-out the error describes what the
// pods were waiting for (image, scheduling, sandbox...).
func (c *Cluster) WaitForPodRunning(ctx context.Context, ns, selector string, timeout time.Duration) (*corev1.Pod, error) {
	var found *corev1.Pod
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var states []string
		for i := range pods.Items {
			pod := &pods.Items[i]
			if pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && allReady(pod) {
				found = pod
				return true, nil
			}
			states = append(states, describe(pod))
		}
		last = strings.Join(states, "; ")
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("no running pod %q in %s: %w (last seen: %s)", selector, ns, err, last)
	}
	return found, nil
}

func allReady(pod *corev1.Pod) bool {
	for _, s := range pod.Status.ContainerStatuses {
		if !s.Ready {
			return false
		}
	}
	return len(pod.Status.ContainerStatuses) > 0
}

// describe summarises why a pod is not running yet, e.g. "web-1: Pending (ErrImageNeverPull)".
func describe(pod *corev1.Pod) string {
	reason := string(pod.Status.Phase)
	for _, cond := range pod.Status.Conditions {
		if cond.Status != corev1.ConditionTrue && cond.Reason != "" {
			reason += " " + cond.Reason + ": " + cond.Message
		}
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Waiting != nil {
			reason += fmt.Sprintf(" (%s: %s %s)", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
		}
	}
	return pod.Name + ": " + reason
}
