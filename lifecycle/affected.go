package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// The pods an occurrence added, removed or replaced (SOL003 resourceChanges.affectedVnfcs,
// status.affectedPods): the occurrences that change what runs record the Service's pods
// when they start, and compare them with those it runs when they stop (FAILED_TEMP or an
// end) — a pod that is new is ADDED, one that went is REMOVED, one whose name came back
// with another UID (a StatefulSet's) is MODIFIED.

const (
	// maxRecordedPods bounds the pods an occurrence records at its start.
	maxRecordedPods = 1024
	// maxAffectedPods bounds status.affectedPods (the CRD's MaxItems).
	maxAffectedPods = 256
)

// recordPodsStep records the pods the Service runs ("name/uid/node").
var recordPodsStep = step{name: "record the pods", run: func(ctx context.Context, rn *run, rec *v1alpha1.OperationStep) result {
	reader, err := rn.pods(ctx)
	if err != nil {
		return waiting("listing the Service's pods: %v", err)
	}
	pods, err := livePods(ctx, reader, rn.op.Namespace, rn.op.Spec.ServiceName)
	if err != nil {
		return waiting("listing the Service's pods: %v", err)
	}
	rec.Pods = nil
	for i := range pods {
		if len(rec.Pods) == maxRecordedPods {
			return doneWith("%d pods, the first %d recorded: the pods affected are told among those, and those created since", len(pods), maxRecordedPods)
		}
		rec.Pods = append(rec.Pods, pods[i].Name+"/"+string(pods[i].UID)+"/"+nodeOfPod(rn.svc, &pods[i]))
	}
	return doneWith("%d pods", len(pods))
}}

// livePods lists the pods of a Service that are not going, by name.
func livePods(ctx context.Context, c client.Reader, namespace, service string) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{v1alpha1.LabelService: service}); err != nil {
		return nil, err
	}
	var pods []corev1.Pod
	for _, pod := range list.Items {
		if pod.DeletionTimestamp == nil {
			pods = append(pods, pod)
		}
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods, nil
}

// nodeOfPod is the node template of a pod: the node of the Service whose label it
// carries, else the label's value.
func nodeOfPod(svc *v1alpha1.Service, pod *corev1.Pod) string {
	label := pod.Labels[v1alpha1.LabelNode]
	if svc != nil {
		for _, node := range svc.Status.Nodes {
			if render.LabelValue(node.Name) == label {
				return node.Name
			}
		}
	}
	return label
}

// reportAffected sets status.affectedPods of an occurrence that recorded its pods.
func (rn *run) reportAffected(ctx context.Context) error {
	rec := rn.record(recordPodsStep.name, false)
	if rec == nil || rec.Phase != v1alpha1.StepSucceeded {
		return nil
	}
	reader, err := rn.pods(ctx)
	if err != nil {
		return fmt.Errorf("listing the pods the occurrence affected: %w", err)
	}
	pods, err := livePods(ctx, reader, rn.op.Namespace, rn.op.Spec.ServiceName)
	if err != nil {
		return fmt.Errorf("listing the pods the occurrence affected: %w", err)
	}
	since := time.Time{}
	if len(rec.Pods) >= maxRecordedPods && rec.StartTime != nil {
		since = rec.StartTime.Time
	}
	rn.op.Status.AffectedPods = affectedPods(rec.Pods, pods, func(pod *corev1.Pod) string { return nodeOfPod(rn.svc, pod) }, since)
	return nil
}

// affectedPods compares the pods recorded ("name/uid/node") with those that run now:
// ADDED, MODIFIED (the same name, another UID), REMOVED, each by name, at most
// maxAffectedPods. When the record was cut short, only pods created since are ADDED.
func affectedPods(recorded []string, now []corev1.Pod, nodeOf func(*corev1.Pod) string, since time.Time) []v1alpha1.AffectedPod {
	type entry struct{ name, uid, node string }
	byUID, byName := map[string]entry{}, map[string]entry{}
	for _, r := range recorded {
		parts := strings.SplitN(r, "/", 3)
		if len(parts) < 3 {
			continue
		}
		e := entry{parts[0], parts[1], parts[2]}
		byUID[e.uid], byName[e.name] = e, e
	}
	var added, modified, removed []v1alpha1.AffectedPod
	running := map[string]bool{}
	for i := range now {
		pod := &now[i]
		uid := string(pod.UID)
		running[uid] = true
		_, kept := byUID[uid]
		_, named := byName[pod.Name]
		switch {
		case kept:
		case named:
			modified = append(modified, v1alpha1.AffectedPod{Pod: pod.Name, UID: uid, Node: nodeOf(pod), ChangeType: v1alpha1.ChangeModified})
		case !since.IsZero() && pod.CreationTimestamp.Time.Before(since):
		default:
			added = append(added, v1alpha1.AffectedPod{Pod: pod.Name, UID: uid, Node: nodeOf(pod), ChangeType: v1alpha1.ChangeAdded})
		}
	}
	replaced := map[string]bool{}
	for _, m := range modified {
		replaced[m.Pod] = true
	}
	for _, e := range byName {
		if !running[e.uid] && !replaced[e.name] {
			removed = append(removed, v1alpha1.AffectedPod{Pod: e.name, UID: e.uid, Node: e.node, ChangeType: v1alpha1.ChangeRemoved})
		}
	}
	byPod := func(a, b v1alpha1.AffectedPod) int { return strings.Compare(a.Pod, b.Pod) }
	slices.SortFunc(removed, byPod)
	all := append(append(added, modified...), removed...)
	if len(all) > maxAffectedPods {
		all = all[:maxAffectedPods]
	}
	return all
}
