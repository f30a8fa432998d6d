package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// deletePollInterval is how often a deletion in progress is checked.
const deletePollInterval = time.Second

// finalize tears a deleted Service down. With DeletionPolicy Delete its objects are
// deleted node by node in reverse deployment order, each node's objects gone before the
// next; with Orphan they are left running without Calaf's labels. A suspended Service is
// let go without touching its objects.
func (r *ServiceReconciler) finalize(ctx context.Context, svc *v1alpha1.Service) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(svc, v1alpha1.ServiceFinalizer) {
		return ctrl.Result{}, nil
	}
	if !svc.Spec.Suspend {
		var done bool
		var err error
		if svc.Spec.DeletionPolicy == v1alpha1.DeletionPolicyOrphan {
			done, err = r.orphan(ctx, svc)
		} else {
			done, err = r.deleteInReverse(ctx, svc)
		}
		if err != nil {
			setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDeleting, truncate(err.Error(), 1024))
			return ctrl.Result{}, err
		}
		if !done {
			return ctrl.Result{RequeueAfter: deletePollInterval}, nil
		}
	}
	r.fingerprints.forget(string(svc.UID) + "/")
	r.teardownWarned.Delete(svc.UID)
	patch := client.MergeFrom(svc.DeepCopy())
	controllerutil.RemoveFinalizer(svc, v1alpha1.ServiceFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Patch(ctx, svc, patch))
}

// deleteInReverse deletes the objects of the last node (in deployment order) that still
// has objects, and reports done once no inventory object is left.
func (r *ServiceReconciler) deleteInReverse(ctx context.Context, svc *v1alpha1.Service) (bool, error) {
	writer, err := r.writerFor(svc)
	if err != nil {
		return false, err
	}
	var node string
	var batch []*unstructured.Unstructured
	for i := len(svc.Status.Inventory) - 1; i >= 0; i-- {
		obj, err := entryObject(svc.Status.Inventory[i])
		if err != nil {
			continue
		}
		live, err := r.getLiveUncached(ctx, obj)
		if err != nil {
			return false, err
		}
		if live == nil || !ownedBy(live, svc) {
			continue
		}
		liveNode := live.GetLabels()[render.LabelNode]
		if node == "" {
			node = liveNode
		}
		if liveNode == node {
			batch = append(batch, live)
		}
	}
	if len(batch) == 0 {
		return true, nil
	}
	if done, err := r.teardown(ctx, svc, node, batch); !done || err != nil {
		return false, err
	}
	var deleting []string
	for _, obj := range batch {
		if obj.GetDeletionTimestamp() == nil {
			if err := writer.Delete(ctx, obj, client.PropagationPolicy(propagationFor(obj))); err != nil && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("deleting %s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
		}
		deleting = append(deleting, obj.GetKind()+"/"+obj.GetName())
	}
	setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDeleting,
		fmt.Sprintf("deleting node %s: %v", node, deleting))
	return false, nil
}

// teardown runs a node's teardown operations before its objects (live) are deleted, when
// the orchestrator can; it reports done once the objects may go. A package that cannot be
// fetched, compiled or rendered any more skips them, with one Warning event: nothing must
// keep a deleted Service from going.
func (r *ServiceReconciler) teardown(ctx context.Context, svc *v1alpha1.Service, nodeName string, live []*unstructured.Unstructured) (bool, error) {
	orchestrator, ok := r.Orchestrator.(Teardowner)
	if !ok {
		return true, nil
	}
	var st *v1alpha1.NodeStatus
	for i := range svc.Status.Nodes {
		if svc.Status.Nodes[i].Name == nodeName {
			st = &svc.Status.Nodes[i]
		}
	}
	if _, warned := r.teardownWarned.Load(svc.UID); st == nil || warned {
		return true, nil
	}
	s, err := r.teardownScope(ctx, svc)
	if err != nil {
		if _, warned := r.teardownWarned.LoadOrStore(svc.UID, true); !warned && r.Recorder != nil {
			r.Recorder.Eventf(svc, nil, "Warning", "TeardownSkipped", "Teardown", "%s",
				truncate("stop and delete operations are not run: "+err.Error(), 1024))
		}
		return true, nil
	}
	var node *render.Node
	for _, n := range s.Result.Nodes {
		if n.Name == nodeName {
			node = n
		}
	}
	if node == nil {
		return true, nil
	}
	s.Live[nodeName] = map[string]*unstructured.Unstructured{}
	for _, obj := range live {
		s.Live[nodeName][obj.GetKind()+"/"+obj.GetName()] = obj
	}
	s.Attributes[nodeName] = s.renderedWith[nodeName]
	done, err := orchestrator.Teardown(ctx, s, node, st)
	if err != nil {
		s.Log.Info("a teardown operation failed; deleting the node's objects all the same", "node", nodeName, "error", s.Redact.String(err.Error()))
		return true, nil
	}
	if !done {
		setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDeleting,
			fmt.Sprintf("node %s: %s", nodeName, truncate(st.Message, 512)))
	}
	return done, nil
}

// teardownScope fetches, compiles and renders the Service's package again (all cached
// in the common case) for the plans of its teardown operations.
func (r *ServiceReconciler) teardownScope(ctx context.Context, svc *v1alpha1.Service) (*Scope, error) {
	s := newScope(ctx, svc)
	for _, run := range []phase{r.reconcileSource, r.reconcileCompile, r.reconcileRender} {
		if err := run(ctx, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// propagationFor deletes workloads in the foreground, so that a node counts as gone only
// once its pods are; other objects go at once.
func propagationFor(obj *unstructured.Unstructured) metav1.DeletionPropagation {
	switch obj.GroupVersionKind().GroupKind().String() {
	case "Deployment.apps", "StatefulSet.apps", "DaemonSet.apps", "ReplicaSet.apps", "Job.batch":
		return metav1.DeletePropagationForeground
	}
	return metav1.DeletePropagationBackground
}

// orphan removes Calaf's labels from the inventory objects so nothing manages them anymore.
func (r *ServiceReconciler) orphan(ctx context.Context, svc *v1alpha1.Service) (bool, error) {
	writer, err := r.writerFor(svc)
	if err != nil {
		return false, err
	}
	for _, entry := range svc.Status.Inventory {
		obj, err := entryObject(entry)
		if err != nil {
			continue
		}
		live, err := r.getLiveUncached(ctx, obj)
		if err != nil {
			return false, err
		}
		if live == nil || !ownedBy(live, svc) {
			continue
		}
		labels := map[string]any{}
		for _, key := range []string{render.LabelManagedBy, render.LabelService, render.LabelServiceNamespace, render.LabelNode} {
			labels[key] = nil
		}
		patch := map[string]any{"metadata": map[string]any{"labels": labels}}
		data, _ := jsonMarshal(patch)
		if err := writer.Patch(ctx, live, client.RawPatch(types.MergePatchType, data)); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("orphaning %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return true, nil
}
