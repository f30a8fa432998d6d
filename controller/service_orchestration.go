package controller

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/jsonvalue"
	"calaf.io/calaf/orchestration"
	"calaf.io/calaf/render"
)

// Orchestrator runs the operations of a Service's nodes in their pods (package
// orchestration): the lifecycle and on-demand operations of a ready node, and its
// teardown operations before its objects are deleted.
type Orchestrator interface {
	Run(ctx context.Context, in orchestration.Input) orchestration.Result
	Teardown(ctx context.Context, in orchestration.Input) orchestration.Result
}

// runOperations hands a healthy node to the orchestrator and records what it decided:
// the operation statuses, the attributes the operations set, and when to look again.
func (r *ServiceReconciler) runOperations(ctx context.Context, s *scope, node *render.Node, st *v1alpha1.NodeStatus) *orchestration.Result {
	result := r.Orchestrator.Run(ctx, s.orchestrationInput(node, st))
	st.Operations = result.Operations
	s.mergeOperationAttributes(node.Name, st, result.Attributes)
	s.requeue(result.RequeueAfter)
	return &result
}

// orchestrationInput is what the orchestrator reads of a node.
func (s *scope) orchestrationInput(node *render.Node, st *v1alpha1.NodeStatus) orchestration.Input {
	return orchestration.Input{
		Service:     s.Service,
		Files:       s.Artifact.Package,
		Revision:    s.Artifact.Revision,
		Node:        node,
		Attributes:  s.Attributes[node.Name],
		Live:        s.Live[node.Name],
		Operations:  st.Operations,
		Redact:      s.Redact,
		Reader:      s.access.cached,
		Impersonate: s.access.user(s.Service.Namespace),
		Cluster:     s.access.execCluster(),
	}
}

// mergeOperationAttributes makes the attributes a node's operations set part of its
// attributes, ahead of those observed on its objects: in the status, and in what this
// reconcile renders the outputs with.
func (s *scope) mergeOperationAttributes(node string, st *v1alpha1.NodeStatus, set map[string]any) {
	if len(set) == 0 {
		return
	}
	values := maps.Clone(s.Attributes[node])
	if values == nil {
		values = map[string]any{}
	}
	maps.Copy(values, set)
	s.Attributes[node] = values
	st.Attributes = jsonvalue.Map(s.Redact.Value, values)
}

// serviceOfPod maps a pod to its Service: pods carry the Service's name label (from their
// workload's template) and live in the Service's namespace.
func serviceOfPod(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[v1alpha1.LabelService]
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
