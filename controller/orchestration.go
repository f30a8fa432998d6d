package controller

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// What the Service reconciler does for the orchestrator (package artifacts): it watches the
// pods of Services, so that a pod that appears or becomes ready gets the operations it
// missed, and it makes the attributes that operations set part of the node's attributes.

// serviceOfPod maps a pod to its Service: pods carry the Service's name label (from their
// workload's template) and live in the Service's namespace.
func serviceOfPod(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[render.LabelService]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// podReadiness lets through the pod events that can make operations due: a pod created,
// deleted, becoming ready or not, or restarting a container.
type podReadiness struct {
	predicate.Funcs
}

func (podReadiness) Create(event.CreateEvent) bool   { return true }
func (podReadiness) Delete(event.DeleteEvent) bool   { return true }
func (podReadiness) Generic(event.GenericEvent) bool { return false }

func (podReadiness) Update(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*corev1.Pod)
	now, ok2 := e.ObjectNew.(*corev1.Pod)
	if !ok1 || !ok2 {
		return false
	}
	return podReady(old) != podReady(now) || restarts(old) != restarts(now) ||
		(old.DeletionTimestamp == nil) != (now.DeletionTimestamp == nil)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, c := range pod.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// operationAttributes returns the attributes a node's operations set, the latest run
// winning.
func operationAttributes(st *v1alpha1.NodeStatus) map[string]any {
	ops := make([]v1alpha1.NodeOperationStatus, 0, len(st.Operations))
	for _, op := range st.Operations {
		if len(op.Attributes) > 0 {
			ops = append(ops, op)
		}
	}
	sort.SliceStable(ops, func(i, j int) bool {
		a, b := ops[i].LastRunTime, ops[j].LastRunTime
		return a == nil || (b != nil && a.Before(b))
	})
	values := map[string]any{}
	for _, op := range ops {
		for name, raw := range op.Attributes {
			values[name] = fromJSON(raw)
		}
	}
	return values
}

// MergeOperationAttributes makes the attributes the node's operations set (recorded in
// st.Operations) part of its attributes, ahead of those observed on its objects: in the
// status, and in what this reconcile renders the outputs with. The orchestrator calls it
// after recording a run.
func (s *Scope) MergeOperationAttributes(node string, st *v1alpha1.NodeStatus) {
	set := operationAttributes(st)
	if len(set) == 0 {
		return
	}
	values := map[string]any{}
	for name, value := range s.Attributes[node] {
		values[name] = value
	}
	for name, value := range set {
		values[name] = value
	}
	s.Attributes[node] = values
	st.Attributes = toJSONMap(s.Redact, values)
}
