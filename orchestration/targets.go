package orchestration

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// workloadKinds are the kinds whose pods run a node's operations.
var workloadKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "Job": true}

// podSet is the pods of a node: all that exist (by name) and those ready to run
// operations, sorted by name.
type podSet struct {
	existing map[string]bool
	ready    []*corev1.Pod
}

// pod returns a copy of a ready pod by name, or nil.
func (set *podSet) pod(name string) *corev1.Pod {
	for _, pod := range set.ready {
		if pod.Name == name {
			return pod.DeepCopy()
		}
	}
	return nil
}

// selectPods lists the pods of a node's workloads: labelled with the Service and node,
// and owned (through their controller references, by UID) by one of the node's live
// workloads, so that operations never run in a pod the Service does not own. Ready pods
// are running, ready and not terminating.
func selectPods(ctx context.Context, c client.Reader, namespace, service string, node *render.Node, live map[string]*unstructured.Unstructured) (*podSet, bool, error) {
	workloads := map[types.UID]string{}
	for _, obj := range live {
		if workloadKinds[obj.GetKind()] {
			workloads[obj.GetUID()] = obj.GetKind()
		}
	}
	set := &podSet{existing: map[string]bool{}}
	if len(workloads) == 0 {
		return set, false, nil
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{
		v1alpha1.LabelService: service, v1alpha1.LabelNode: render.LabelValue(node.Name),
	}); err != nil {
		return nil, true, fmt.Errorf("listing the pods of node %s: %w", node.Name, err)
	}
	owners := map[types.UID]types.UID{} // ReplicaSet → its Deployment
	for i := range pods.Items {
		pod := &pods.Items[i]
		owned, err := ownedBy(ctx, c, pod, workloads, owners)
		if err != nil {
			return nil, true, err
		}
		if !owned {
			continue
		}
		set.existing[pod.Name] = true
		if isReady(pod) {
			set.ready = append(set.ready, pod)
		}
	}
	sort.Slice(set.ready, func(i, j int) bool { return set.ready[i].Name < set.ready[j].Name })
	return set, true, nil
}

// ownedBy tells whether a pod's controller is one of the workloads, directly or through
// a ReplicaSet (for Deployments).
func ownedBy(ctx context.Context, c client.Reader, pod *corev1.Pod, workloads map[types.UID]string, owners map[types.UID]types.UID) (bool, error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return false, nil
	}
	if _, ok := workloads[ref.UID]; ok {
		return ref.Kind == workloads[ref.UID], nil
	}
	if ref.Kind != "ReplicaSet" {
		return false, nil
	}
	deployment, ok := owners[ref.UID]
	if !ok {
		rs := &unstructured.Unstructured{}
		rs.SetAPIVersion("apps/v1")
		rs.SetKind("ReplicaSet")
		if err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}, rs); err != nil {
			if client.IgnoreNotFound(err) == nil {
				return false, nil
			}
			return false, fmt.Errorf("reading ReplicaSet %s of pod %s: %w", ref.Name, pod.Name, err)
		}
		if rs.GetUID() == ref.UID {
			if owner := metav1.GetControllerOfNoCopy(rs); owner != nil {
				deployment = owner.UID
			}
		}
		owners[ref.UID] = deployment
	}
	return workloads[deployment] == "Deployment", nil
}

// isReady tells whether a pod can run operations: running, ready, not terminating.
func isReady(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podKey names a pod in an operation's list of pods it succeeded in: the pod's name, and
// "#<restarts>" once the operation's container restarted (a restarted container starts
// from its image again, so its operations run again).
func podKey(pod *corev1.Pod, container string) string {
	if container == "" && len(pod.Spec.Containers) > 0 {
		container = pod.Spec.Containers[0].Name
	}
	for _, status := range pod.Status.ContainerStatuses {
		if status.Name == container && status.RestartCount > 0 {
			return fmt.Sprintf("%s#%d", pod.Name, status.RestartCount)
		}
	}
	return pod.Name
}

// podOfKey returns the pod name of a key of podKey.
func podOfKey(key string) string {
	name, _, _ := strings.Cut(key, "#")
	return name
}

// containerOf returns the container an operation runs in: the one named, or the pod's
// first; it must be running.
func containerOf(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		if len(pod.Spec.Containers) == 0 {
			return "", fmt.Errorf("pod %s has no containers", pod.Name)
		}
		name = pod.Spec.Containers[0].Name
	}
	for _, status := range pod.Status.ContainerStatuses {
		if status.Name == name {
			if status.State.Running == nil {
				return "", fmt.Errorf("container %s of pod %s is not running", name, pod.Name)
			}
			return name, nil
		}
	}
	return "", fmt.Errorf("pod %s has no container %q", pod.Name, name)
}
