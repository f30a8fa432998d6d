package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// health is what a node's objects say of themselves: kstatus, and for a workload that
// makes no progress, the cause its controller or its pods give.
type health struct {
	// failed is "Kind/name: message" of an object that failed.
	failed string
	// reason is the machine-readable cause of the failure, when known (FailedCreate,
	// ImagePullBackOff, CrashLoopBackOff, …).
	reason string
	// waiting are "Kind/name: message" of the objects not current yet.
	waiting []string
	// unobserved counts those of them whose controller has not observed their latest
	// generation yet: nothing can be said of them but that it is about to look.
	unobserved int
}

// awaitsObservation tells whether every object is current but those whose controller
// has not looked at them yet.
func (h health) awaitsObservation() bool {
	return h.failed == "" && len(h.waiting) > 0 && h.unobserved == len(h.waiting)
}

// unobservedGeneration tells whether an object's controller has not looked at its latest
// generation yet: its status.observedGeneration is below its generation, or absent on a
// kind whose controller always sets it.
func unobservedGeneration(obj *unstructured.Unstructured) bool {
	generation := obj.GetGeneration()
	observed, found, err := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	switch {
	case err != nil || generation == 0:
		return false
	case found:
		return observed < generation
	}
	return obj.GroupVersionKind().Group == "apps" && workloadKinds[obj.GetKind()]
}

// current tells whether every object is current.
func (h health) current() bool { return h.failed == "" && len(h.waiting) == 0 }

// isStalling tells whether a node failure reason stalls the Service: a cause that does
// not go away without a change of the package, its inputs or the namespace — a pod's
// (v1alpha1.StuckPodReasons) or its controller's FailedCreate.
func isStalling(reason string) bool {
	return reason == "FailedCreate" || slices.Contains(v1alpha1.StuckPodReasons, reason)
}

// workloadKinds are the kinds whose lack of progress is explained from their pods.
var workloadKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true, "Job": true}

// check adds an object's health: current, failed, or not yet and why.
func (r *ServiceReconciler) check(ctx context.Context, a *access, h *health, svc *v1alpha1.Service, node *render.Node, ref string, obj *unstructured.Unstructured) {
	if isCalafService(obj.GroupVersionKind()) {
		checkService(h, ref, obj)
		return
	}
	result, err := status.Compute(obj)
	switch {
	case err != nil:
		h.waiting = append(h.waiting, ref+": "+err.Error())
		return
	case result.Status == status.CurrentStatus:
		return
	case result.Status == status.FailedStatus:
		h.failed = ref + ": " + result.Message
		return
	}
	unobserved := unobservedGeneration(obj)
	// A workload whose controller has not looked at its latest template yet has pods of an
	// earlier one: their trouble (a broken image being rolled back) is not this template's.
	if workloadKinds[obj.GetKind()] && !unobserved {
		if reason, message := r.explain(ctx, a, svc, node, obj); reason != "" {
			h.failed, h.reason = ref+": "+reason+": "+message, reason
			return
		}
	}
	message := result.Message
	if message == "" {
		message = string(result.Status)
	}
	if unobserved {
		h.unobserved++
	}
	h.waiting = append(h.waiting, ref+": "+message)
}

// explain finds why a workload does not become current, when it will not by waiting: its
// controller could not create pods (admission refused them: Pod Security, a quota, a
// missing service account), or a pod cannot start (its image cannot be pulled, a container
// crashes over and over, its configuration is missing). It returns "" when nothing says
// so: the workload is merely progressing.
func (r *ServiceReconciler) explain(ctx context.Context, a *access, svc *v1alpha1.Service, node *render.Node, obj *unstructured.Unstructured) (reason, message string) {
	if message := replicaFailure(obj); message != "" {
		return "FailedCreate", message
	}
	if kind := obj.GetKind(); kind == "StatefulSet" || kind == "DaemonSet" || kind == "Job" {
		if message := r.failedCreateEvent(ctx, a.direct, obj); message != "" {
			return "FailedCreate", message
		}
	}
	pods := &corev1.PodList{}
	ofNode := client.MatchingLabels{v1alpha1.LabelService: svc.Name, v1alpha1.LabelNode: render.LabelValue(node.Name)}
	err := a.cached.List(ctx, pods, client.InNamespace(svc.Namespace), ofNode)
	if err != nil {
		return "", ""
	}
	current := currentReplicaSet(ctx, a.direct, obj, ofNode)
	for i := range pods.Items {
		if current != "" && !ownedByReplicaSet(&pods.Items[i], current) {
			continue // a pod of a revision the Deployment is leaving: its trouble is not the node's
		}
		if reason, message := podTrouble(&pods.Items[i]); reason != "" {
			return reason, message
		}
	}
	return "", ""
}

// currentReplicaSet names the ReplicaSet of a Deployment's current revision (its pods are
// the ones a rollout waits for); "" for other kinds, or when it cannot be told.
func currentReplicaSet(ctx context.Context, reader client.Reader, obj *unstructured.Unstructured, labels client.MatchingLabels) string {
	if obj.GetKind() != "Deployment" {
		return ""
	}
	revision := obj.GetAnnotations()["deployment.kubernetes.io/revision"]
	sets := &appsv1.ReplicaSetList{}
	if revision == "" || reader.List(ctx, sets, client.InNamespace(obj.GetNamespace()), labels) != nil {
		return ""
	}
	for _, rs := range sets.Items {
		if metav1.IsControlledBy(&rs, obj) && rs.Annotations["deployment.kubernetes.io/revision"] == revision {
			return rs.Name
		}
	}
	return ""
}

func ownedByReplicaSet(pod *corev1.Pod, name string) bool {
	owner := metav1.GetControllerOf(pod)
	return owner != nil && owner.Kind == "ReplicaSet" && owner.Name == name
}

// replicaFailure returns the message of a ReplicaFailure condition (Deployments and
// ReplicaSets report pods their admission refused there).
func replicaFailure(obj *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		condition, _ := c.(map[string]any)
		if condition["type"] == "ReplicaFailure" && condition["status"] == "True" {
			message, _ := condition["message"].(string)
			return message
		}
	}
	return ""
}

// failedCreateEvent returns the latest FailedCreate Event of a workload whose controller
// reports refused pods only as Events (StatefulSets, DaemonSets, Jobs).
func (r *ServiceReconciler) failedCreateEvent(ctx context.Context, reader client.Reader, obj *unstructured.Unstructured) string {
	events := &corev1.EventList{}
	err := reader.List(ctx, events, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{"involvedObject.uid": string(obj.GetUID()), "reason": "FailedCreate"})
	if err != nil {
		return ""
	}
	var latest *corev1.Event
	for i := range events.Items {
		e := &events.Items[i]
		if latest == nil || eventTime(e).After(eventTime(latest)) {
			latest = e
		}
	}
	if latest == nil {
		return ""
	}
	return latest.Message
}

// eventTime is when an Event last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// podTrouble returns why a pod cannot run, from its containers' waiting states.
func podTrouble(pod *corev1.Pod) (reason, message string) {
	if pod.DeletionTimestamp != nil {
		return "", ""
	}
	statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		waiting := cs.State.Waiting
		if waiting == nil || !isStalling(waiting.Reason) {
			continue
		}
		message := fmt.Sprintf("pod %s, container %s: %s", pod.Name, cs.Name, strings.TrimSpace(waiting.Message))
		if last := cs.LastTerminationState.Terminated; waiting.Reason == "CrashLoopBackOff" && last != nil {
			message = fmt.Sprintf("pod %s, container %s: exited with code %d (%s) %d times", pod.Name, cs.Name, last.ExitCode, last.Reason, cs.RestartCount)
		}
		return waiting.Reason, strings.TrimSuffix(message, ": ")
	}
	return "", ""
}

// checkService adds the health of a Service of Calaf's (a child): current when Ready for
// its generation, failed when Stalled (its reason kept), else not yet, saying why; one
// with no condition yet has not been looked at by its reconciler.
func checkService(h *health, ref string, obj *unstructured.Unstructured) {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var ready, stalledCondition map[string]any
	for _, c := range conditions {
		condition, _ := c.(map[string]any)
		switch condition["type"] {
		case v1alpha1.ConditionReady:
			ready = condition
		case v1alpha1.ConditionStalled:
			stalledCondition = condition
		}
	}
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	readyGeneration, _, _ := unstructured.NestedInt64(ready, "observedGeneration")
	switch {
	case ready == nil:
		h.waiting, h.unobserved = append(h.waiting, ref+": not reconciled yet"), h.unobserved+1
	case ready["status"] == string(metav1.ConditionTrue) && observed == obj.GetGeneration() && readyGeneration == obj.GetGeneration():
	case stalledCondition != nil && stalledCondition["status"] == string(metav1.ConditionTrue):
		reason, _ := stalledCondition["reason"].(string)
		message, _ := stalledCondition["message"].(string)
		h.failed, h.reason = ref+": "+reason+": "+message, reason
	default:
		reason, _ := ready["reason"].(string)
		message, _ := ready["message"].(string)
		h.waiting = append(h.waiting, ref+": "+reason+": "+message)
	}
}
