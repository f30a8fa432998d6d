package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// A HEAL recreates pods: the pods it names, the pods of the nodes it names, or every pod
// of the Service. It records which pods (name and UID) before it deletes any, deletes
// exactly those, and waits until the Service, reconciled after they went, is Ready again:
// their replacements run, ready and configured (their Standard operations ran), the other
// pods untouched.

// selectPodsStep chooses the pods to recreate and records them.
var selectPodsStep = step{name: "choose the pods to recreate", run: func(ctx context.Context, rn *run, rec *v1alpha1.OperationStep) result {
	c, err := rn.pods(ctx)
	if err != nil {
		return waiting("%v", err)
	}
	pods, err := healTargets(ctx, c, rn.svc, rn.op.Spec.Heal)
	if err != nil {
		return failed("%v", err)
	}
	rec.Pods = nil
	for _, pod := range pods {
		rec.Pods = append(rec.Pods, pod.Name+"/"+string(pod.UID))
	}
	if len(rec.Pods) == 0 {
		return doneWith("no pod to recreate")
	}
	return doneWith("%d pods: %s", len(pods), podNames(rec.Pods))
}}

// recreatePodsStep deletes the chosen pods (those UIDs only: a replacement of the same
// name is never touched) and waits until they are gone.
var recreatePodsStep = step{name: "recreate the pods", run: func(ctx context.Context, rn *run, rec *v1alpha1.OperationStep) result {
	chosen := rn.record(selectPodsStep.name, false)
	c, err := rn.pods(ctx)
	if err != nil {
		return waiting("%v", err)
	}
	var going []string
	for _, entry := range chosen.Pods {
		name, uid, _ := strings.Cut(entry, "/")
		pod := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKey{Namespace: rn.op.Namespace, Name: name}, pod)
		switch {
		case apierrors.IsNotFound(err) || err == nil && string(pod.UID) != uid:
			continue
		case err != nil:
			return waiting("reading pod %s: %v", name, err)
		}
		going = append(going, name)
		if pod.DeletionTimestamp == nil {
			precondition := metav1.Preconditions{UID: (*types.UID)(&pod.UID)}
			if err := c.Delete(ctx, pod, client.Preconditions(precondition)); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return failed("deleting pod %s: %v", name, err)
			}
		}
	}
	if len(going) > 0 {
		if rn.pastDeadline(rec) {
			return failed("pods %s did not go within %v", strings.Join(going, ", "), rn.timeout())
		}
		return waiting("waiting for pods %s to go", strings.Join(going, ", "))
	}
	return doneWith("pods %s deleted", podNames(chosen.Pods))
}}

// replacedStep asks for a reconcile of the Service once the pods are gone and waits until
// that reconcile, or a later one, finds the Service Ready.
var replacedStep = step{name: "wait for the new pods to be configured", run: func(ctx context.Context, rn *run, rec *v1alpha1.OperationStep) result {
	svc := rn.svc
	token := fmt.Sprintf("heal-%s-%d", rn.op.UID, rec.Attempt)
	if svc.Status.LastHandledReconcileAt != token {
		if svc.Annotations[v1alpha1.ReconcileRequestAnnotation] != token {
			patch := client.MergeFrom(svc.DeepCopy())
			if svc.Annotations == nil {
				svc.Annotations = map[string]string{}
			}
			svc.Annotations[v1alpha1.ReconcileRequestAnnotation] = token
			if err := rn.r.Patch(ctx, svc, patch); err != nil {
				return waiting("asking for a reconcile of the Service: %v", err)
			}
		}
		return waiting("waiting for the Service to see the pods go")
	}
	ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == svc.Generation:
		return doneWith("the Service is Ready: the new pods run, configured")
	case ready != nil && ready.ObservedGeneration == svc.Generation && failing(svc, svc.Generation):
		return failed("the Service is not healthy: %s: %s", ready.Reason, ready.Message)
	case rn.pastDeadline(rec):
		return failed("the Service did not become Ready within %v: %s", rn.timeout(), readyMessage(ready))
	}
	return waiting("waiting for the new pods: %s", readyMessage(ready))
}}

// healTargets lists the pods a heal recreates: the pods named (each must be one of the
// Service's), the pods of the nodes named, or every pod of the Service.
func healTargets(ctx context.Context, c client.Reader, svc *v1alpha1.Service, req *v1alpha1.HealRequest) ([]corev1.Pod, error) {
	if req == nil {
		req = &v1alpha1.HealRequest{}
	}
	if len(req.Pods) > 0 {
		return namedPods(ctx, c, svc, req.Pods)
	}
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(svc.Namespace), client.MatchingLabels{v1alpha1.LabelService: svc.Name}); err != nil {
		return nil, err
	}
	labels := map[string]bool{}
	for _, node := range req.Nodes {
		labels[render.LabelValue(node)] = true
	}
	var pods []corev1.Pod
	for _, pod := range list.Items {
		if pod.DeletionTimestamp != nil || !ownsPod(svc, &pod) || len(labels) > 0 && !labels[pod.Labels[v1alpha1.LabelNode]] {
			continue
		}
		pods = append(pods, pod)
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods, nil
}

// namedPods reads the pods a heal names; one that is not the Service's is refused.
func namedPods(ctx context.Context, c client.Reader, svc *v1alpha1.Service, names []string) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	for _, name := range names {
		pod := corev1.Pod{}
		err := c.Get(ctx, client.ObjectKey{Namespace: svc.Namespace, Name: name}, &pod)
		if apierrors.IsNotFound(err) {
			return nil, refusef("pod %s not found in namespace %s", name, svc.Namespace)
		}
		if err != nil {
			return nil, err
		}
		if !ownsPod(svc, &pod) {
			return nil, refusef("pod %s is not a pod of Service %s", name, svc.Name)
		}
		pods = append(pods, pod)
	}
	return pods, nil
}

// ownsPod tells whether a pod is one of the Service's: it carries the Service's label,
// and the node label of one of its nodes.
func ownsPod(svc *v1alpha1.Service, pod *corev1.Pod) bool {
	if pod.Labels[v1alpha1.LabelService] != svc.Name {
		return false
	}
	for _, node := range svc.Status.Nodes {
		if render.LabelValue(node.Name) == pod.Labels[v1alpha1.LabelNode] {
			return true
		}
	}
	return false
}

// podNames lists the names of "name/uid" entries.
func podNames(entries []string) string {
	names := make([]string, len(entries))
	for i, entry := range entries {
		names[i], _, _ = strings.Cut(entry, "/")
	}
	return strings.Join(names, ", ")
}
