package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/render"
)

// deletePollInterval is how often a deletion in progress is checked.
const deletePollInterval = time.Second

// finalize tears a deleted Service down. With DeletionPolicy Delete its objects are
// deleted node by node in reverse deployment order, each node's objects gone before the
// next, then the claims its StatefulSets made (unless RetainVolumes); with Orphan they are
// left running without Calaf's labels. A suspended Service is let go without touching its
// objects.
func (r *ServiceReconciler) finalize(ctx context.Context, svc *v1alpha1.Service) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(svc, v1alpha1.ServiceFinalizer) {
		return ctrl.Result{}, nil
	}
	r.forgetObjects(svc.Status.Inventory) // nothing of it is applied again
	if !svc.Spec.Suspend {
		var done bool
		var err error
		orphan := svc.Spec.DeletionPolicy == v1alpha1.DeletionPolicyOrphan
		if orphan {
			done, err = r.orphan(ctx, svc)
		} else {
			done, err = r.deleteInReverse(ctx, svc)
		}
		if done && err == nil {
			done, err = r.releaseVolumes(ctx, svc, !orphan && !svc.Spec.RetainVolumes)
		}
		if unreachable := r.leftInTarget(svc, err); unreachable {
			done, err = true, nil
		}
		if err != nil {
			setDeleting(svc, err.Error())
			return ctrl.Result{}, err
		}
		if !done {
			return ctrl.Result{RequeueAfter: deletePollInterval}, nil
		}
	}
	if err := r.deleteState(ctx, svc); err != nil {
		return ctrl.Result{}, err
	}
	r.fingerprints.forget(string(svc.UID) + "/")
	r.Secrets.Forget(string(svc.UID))
	r.teardownWarned.Delete(svc.UID)
	r.settled.forget(svc)
	r.releaseTarget(svc)
	// Optimistic: a merge patch replaces the whole list, and another controller's
	// finalizer (calaf.io/vnf-identifier) may have gone since the cache read it.
	patch := client.MergeFromWithOptions(svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(svc, v1alpha1.ServiceFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Patch(ctx, svc, patch))
}

// deleteInReverse deletes the objects of the last node (in deployment order) that still
// has objects, and reports done once no inventory object is left.
func (r *ServiceReconciler) deleteInReverse(ctx context.Context, svc *v1alpha1.Service) (bool, error) {
	a, err := r.objectsAccess(ctx, svc)
	if err != nil {
		return false, err
	}
	var node string
	var batch []*unstructured.Unstructured
	for i := len(svc.Status.Inventory) - 1; i >= 0; i-- {
		live, err := ownedLive(ctx, a, svc, svc.Status.Inventory[i])
		if err != nil {
			return false, err
		}
		if live == nil {
			continue
		}
		liveNode := live.GetLabels()[v1alpha1.LabelNode]
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
			if err := a.route(obj.GroupVersionKind()).writer.Delete(ctx, obj, client.PropagationPolicy(propagationFor(obj))); err != nil && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("deleting %s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
		}
		deleting = append(deleting, obj.GetKind()+"/"+obj.GetName())
	}
	setDeleting(svc, fmt.Sprintf("deleting node %s: %v", node, deleting))
	return false, nil
}

// teardown runs a node's teardown operations before its objects (live) are deleted, when
// the orchestrator can; it reports done once the objects may go. A package that cannot be
// fetched, compiled or rendered any more skips them, with one Warning event: nothing must
// keep a deleted Service from going.
func (r *ServiceReconciler) teardown(ctx context.Context, svc *v1alpha1.Service, nodeName string, live []*unstructured.Unstructured) (bool, error) {
	st := nodeByName(svc, nodeName)
	if _, warned := r.teardownWarned.Load(svc.UID); r.Orchestrator == nil || st == nil || warned || skipsTeardown(svc) || delegated(svc) {
		return true, nil
	}
	s, err := r.teardownScope(ctx, svc)
	if err != nil {
		if _, warned := r.teardownWarned.LoadOrStore(svc.UID, true); !warned && r.Recorder != nil {
			r.Recorder.Eventf(svc, nil, "Warning", "TeardownSkipped", "Teardown", "%s",
				text.Truncate("stop and delete operations are not run: "+s.Redact.String(err.Error()), 1024))
		}
		return true, nil
	}
	i := slices.IndexFunc(s.Result.Nodes, func(n *render.Node) bool { return n.Name == nodeName })
	if i < 0 {
		return true, nil
	}
	s.Live[nodeName] = map[string]*unstructured.Unstructured{}
	for _, obj := range live {
		s.Live[nodeName][obj.GetKind()+"/"+obj.GetName()] = obj
	}
	s.Attributes[nodeName] = s.renderedWith[nodeName]
	result := r.Orchestrator.Teardown(ctx, s.orchestrationInput(s.Result.Nodes[i], st))
	st.Operations = result.Operations
	if result.Message != "" {
		st.Message = result.Message
	}
	if result.Failure != nil {
		s.Log.Info("a teardown operation failed; deleting the node's objects all the same", "node", nodeName, "error", s.Redact.String(result.Failure.Error()))
		return true, nil
	}
	if !result.Done {
		setDeleting(svc, fmt.Sprintf("node %s: %s", nodeName, text.Truncate(st.Message, 512)))
	}
	return result.Done, nil
}

// teardownScope fetches, compiles and renders the Service's package again (all cached
// in the common case) for the plans of its teardown operations. The scope comes back
// with an error too: its redactor hides the secrets read until then.
func (r *ServiceReconciler) teardownScope(ctx context.Context, svc *v1alpha1.Service) (*scope, error) {
	s := newScope(ctx, svc)
	for _, run := range []phase{r.reconcileAccess, r.reconcileSource, r.reconcileCompile, r.reconcileTarget, r.reconcileRender} {
		if err := run(ctx, s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// nodeByName returns the status entry of a node, or nil.
func nodeByName(svc *v1alpha1.Service, name string) *v1alpha1.NodeStatus {
	for i := range svc.Status.Nodes {
		if svc.Status.Nodes[i].Name == name {
			return &svc.Status.Nodes[i]
		}
	}
	return nil
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
	a, err := r.objectsAccess(ctx, svc)
	if err != nil {
		return false, err
	}
	for _, entry := range svc.Status.Inventory {
		live, err := ownedLive(ctx, a, svc, entry)
		if err != nil {
			return false, err
		}
		if live == nil {
			continue
		}
		if err := a.route(live.GroupVersionKind()).writer.Patch(ctx, live, unlabel()); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("orphaning %s %s: %w", live.GetKind(), live.GetName(), err)
		}
	}
	return true, nil
}

// ownedLive reads the live object of an inventory entry from the API server of its
// cluster (access.route); nil when it is gone, no longer carries this Service's labels,
// or the entry is malformed.
func ownedLive(ctx context.Context, a *access, svc *v1alpha1.Service, entry v1alpha1.InventoryEntry) (*unstructured.Unstructured, error) {
	obj, err := entryObject(entry)
	if err != nil {
		return nil, nil
	}
	live, err := getLiveUncached(ctx, a.route(obj.GroupVersionKind()).direct, obj)
	if err != nil || live == nil || !ownedBy(live, svc) {
		return nil, err
	}
	return live, nil
}

// releaseVolumes deals with the claims the Service's StatefulSets made from their
// volumeClaimTemplates (they are not in the inventory, and Kubernetes keeps them): it
// deletes them, or, when they are kept, removes Calaf's labels so that nothing claims them
// for the deleted Service. It reports done once none is left labelled for the Service.
func (r *ServiceReconciler) releaseVolumes(ctx context.Context, svc *v1alpha1.Service, remove bool) (bool, error) {
	a, err := r.objectsAccess(ctx, svc)
	if err != nil {
		return false, err
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := a.direct.List(ctx, claims, client.InNamespace(svc.Namespace), client.MatchingLabels{v1alpha1.LabelService: svc.Name}); err != nil {
		return false, fmt.Errorf("listing the Service's volume claims: %w", err)
	}
	var deleting []string
	for i := range claims.Items {
		claim := &claims.Items[i]
		if !remove {
			if err := a.writer.Patch(ctx, claim, unlabel()); err != nil && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("releasing PersistentVolumeClaim %s: %w", claim.Name, err)
			}
			continue
		}
		if claim.DeletionTimestamp == nil {
			if err := a.writer.Delete(ctx, claim); err != nil && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("deleting PersistentVolumeClaim %s: %w", claim.Name, err)
			}
		}
		deleting = append(deleting, "PersistentVolumeClaim/"+claim.Name)
	}
	if len(deleting) > 0 {
		setDeleting(svc, fmt.Sprintf("deleting the volumes of StatefulSets: %v", deleting))
		return false, nil
	}
	return true, nil
}

// unlabel is the merge patch that removes Calaf's labels from an object: nothing manages
// it for a Service any more.
func unlabel() client.Patch {
	labels := map[string]any{}
	for _, key := range []string{v1alpha1.LabelManagedBy, v1alpha1.LabelService, v1alpha1.LabelServiceNamespace, v1alpha1.LabelNode} {
		labels[key] = nil
	}
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	return client.RawPatch(types.MergePatchType, data)
}
