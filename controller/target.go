package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/clusters"
	"calaf.io/calaf/internal/kubeconfig"
)

// A Service with spec.kubeConfig deploys into the cluster of that kubeconfig (its
// target): reconcileTarget makes the scope's access that cluster's — its cache for reads,
// its client for writes, as the kubeconfig's identity — after the Service's inputs and
// package were read in the operator's cluster as the Service acts there.

// reconcileTarget resolves the cluster the Service's objects are in. The kubeconfig
// Secret is read as the Service acts in the operator's cluster; a cluster known to be
// unreachable fails at once (retried with backoff, and reconciled as soon as it answers).
func (r *ServiceReconciler) reconcileTarget(ctx context.Context, s *scope) error {
	svc := s.Service
	if svc.Spec.KubeConfig == nil {
		r.releaseTarget(svc)
		r.movedFrom(s, "")
		return nil
	}
	a, err := r.targetAccess(ctx, svc, s.access)
	if err != nil {
		return err
	}
	s.access = a
	r.movedFrom(s, a.cluster.Server)
	if err := a.cluster.Unreachable(); err != nil {
		return newPhaseError(v1alpha1.ConditionApplied, v1alpha1.ReasonClusterUnreachable, retry, err)
	}
	return nil
}

// movedFrom forgets an inventory recorded in another cluster than server (spec.kubeConfig
// changed the Service's cluster): its objects are left there, unmanaged (a Warning event
// says so), and none of them is taken for one of the Service's in the new cluster.
func (r *ServiceReconciler) movedFrom(s *scope, server string) {
	svc := s.Service
	if svc.Status.Cluster == server {
		return
	}
	if n := len(svc.Status.Inventory); n > 0 {
		r.warn(svc, "ClusterChanged", "%d objects are left in cluster %s, no longer managed: spec.kubeConfig now deploys the Service into %s (set spec.instantiationState NOT_INSTANTIATED before changing it, to remove them)",
			n, clusterName(svc.Status.Cluster), clusterName(server))
		r.forgetObjects(svc.Status.Inventory)
		r.fingerprints.forget(string(svc.UID) + "/")
	}
	svc.Status.Inventory, svc.Status.Cluster = nil, server
}

// clusterName names a cluster in messages.
func clusterName(server string) string {
	if server == "" {
		return "the operator's own cluster"
	}
	return server
}

// releaseTarget tells the clusters pool that the Service uses no target cluster.
func (r *ServiceReconciler) releaseTarget(svc *v1alpha1.Service) {
	if r.Clusters != nil {
		r.Clusters.Release(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name})
	}
}

// targetAccess is how the Service's objects are read and written in its target cluster,
// local being how it acts in the operator's cluster.
func (r *ServiceReconciler) targetAccess(ctx context.Context, svc *v1alpha1.Service, local *access) (*access, error) {
	ref := svc.Spec.KubeConfig.SecretRef
	cluster, err := r.targetCluster(ctx, svc, local)
	if err != nil {
		return nil, err
	}
	poller := polling.NewStatusPoller(cluster.Client, cluster.Mapper, polling.Options{})
	return &access{account: local.account, local: local.local, cluster: cluster, kubeconfig: ref.Name, home: local, delegating: delegated(svc),
		cached: cluster.Reader(svc.Namespace), direct: cluster.Client, writer: cluster.Client,
		manager: ssa.NewResourceManager(cluster.Client, poller, ssa.Owner{Field: fieldManager, Group: "calaf.io"})}, nil
}

// errKubeConfigGone says that a Service's kubeconfig Secret does not exist.
var errKubeConfigGone = errors.New("the kubeconfig Secret does not exist")

// targetCluster reads the kubeconfig and returns the connection to its cluster.
func (r *ServiceReconciler) targetCluster(ctx context.Context, svc *v1alpha1.Service, local *access) (*clusters.Cluster, error) {
	ref := svc.Spec.KubeConfig.SecretRef
	if r.Clusters == nil {
		return nil, stalled(v1alpha1.ConditionApplied, v1alpha1.ReasonKubeConfigInvalid,
			"this operator deploys into its own cluster only (no target clusters set up): spec.kubeConfig cannot be honoured")
	}
	data, err := readKubeconfig(ctx, local.local, svc.Namespace, ref)
	switch {
	case errors.Is(err, errKubeConfigGone):
		return nil, stalled(v1alpha1.ConditionApplied, v1alpha1.ReasonKubeConfigInvalid, "Secret %s: %v", ref.Name, err)
	case errors.Is(err, errNoKubeconfigKey):
		return nil, stalled(v1alpha1.ConditionApplied, v1alpha1.ReasonKubeConfigInvalid, "Secret %s: %v", ref.Name, err)
	case apierrors.IsForbidden(err):
		return nil, stalled(v1alpha1.ConditionApplied, v1alpha1.ReasonKubeConfigInvalid, "Secret %s may not be read as the Service acts (%s)", ref.Name, actingAs(local))
	case err != nil:
		return nil, newPhaseError(v1alpha1.ConditionApplied, v1alpha1.ReasonKubeConfigInvalid, retry, fmt.Errorf("reading Secret %s: %w", ref.Name, err))
	}
	target, err := kubeconfig.Parse(data)
	if err != nil {
		return nil, stalled(v1alpha1.ConditionApplied, v1alpha1.ReasonKubeConfigInvalid, "Secret %s: %v", ref.Name, err)
	}
	cluster, err := r.Clusters.Acquire(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, svc.Namespace, target)
	switch {
	case clusters.IsRefused(err):
		return nil, stalled(v1alpha1.ConditionApplied, v1alpha1.ReasonKubeConfigInvalid, "Secret %s: %v", ref.Name, err)
	case err != nil:
		return nil, newPhaseError(v1alpha1.ConditionApplied, v1alpha1.ReasonClusterUnreachable, retry, fmt.Errorf("cluster %s: %w", target.Server, err))
	}
	return cluster, nil
}

// actingAs says how a Service acts in the operator's cluster.
func actingAs(a *access) string {
	if a.account == "" {
		return "the operator"
	}
	return "service account " + a.account
}

// readKubeconfig reads the kubeconfig of a Secret: its key, else "value", else
// "value.yaml" (Flux's layout, and Cluster API's <cluster>-kubeconfig Secrets).
func readKubeconfig(ctx context.Context, reader client.Reader, namespace string, ref v1alpha1.SecretKeyReference) ([]byte, error) {
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errKubeConfigGone
		}
		return nil, err
	}
	if ref.Key != "" {
		data, ok := secret.Data[ref.Key]
		if !ok {
			return nil, fmt.Errorf("%w: it has no key %q", errNoKubeconfigKey, ref.Key)
		}
		return data, nil
	}
	for _, key := range []string{"value", "value.yaml"} {
		if data, ok := secret.Data[key]; ok {
			return data, nil
		}
	}
	return nil, fmt.Errorf("%w: it has neither \"value\" nor \"value.yaml\" (name the key in spec.kubeConfig.secretRef.key)", errNoKubeconfigKey)
}

// errNoKubeconfigKey says that a Secret lacks the key of the kubeconfig.
var errNoKubeconfigKey = errors.New("no kubeconfig in the Secret")

// targetFailure turns the failure of a phase that got no answer from the target cluster
// into ClusterUnreachable (retried with backoff), and marks the cluster unreachable for
// the other Services that use it.
func targetFailure(a *access, err error) error {
	if err == nil || a == nil || a.cluster == nil {
		return err
	}
	var unreachable *clusters.UnreachableError
	if observed := a.cluster.Observe(err); errors.As(observed, &unreachable) {
		return newPhaseError(v1alpha1.ConditionApplied, v1alpha1.ReasonClusterUnreachable, retry, unreachable)
	}
	if clusters.IsRefused(err) {
		return newPhaseError(v1alpha1.ConditionApplied, v1alpha1.ReasonKubeConfigInvalid, stall, err)
	}
	return err
}

// TargetChanged reconciles the Service whose object changed in its target cluster (the
// clusters pool reports what its caches see): pods only when they can make operations
// due, as in the operator's own cluster.
func (r *ServiceReconciler) TargetChanged(owner types.NamespacedName, old, now client.Object) {
	if _, pod := now.(*corev1.Pod); pod && old != nil {
		if !(podReadiness{}).Update(event.UpdateEvent{ObjectOld: old, ObjectNew: now}) {
			return
		}
	}
	if r.Triggers != nil {
		r.Triggers.Trigger(owner.Namespace, owner.Name)
	}
}

// TargetHealthChanged reconciles a Service whose target cluster was found unreachable,
// or answers again.
func (r *ServiceReconciler) TargetHealthChanged(owner types.NamespacedName) {
	if r.Triggers != nil {
		r.Triggers.Trigger(owner.Namespace, owner.Name)
	}
}

// OwnsInTarget tells whether an object of a target cluster carries owner's labels.
func OwnsInTarget(owner types.NamespacedName, obj client.Object) bool {
	labels := obj.GetLabels()
	return labels[v1alpha1.LabelService] == owner.Name && labels[v1alpha1.LabelServiceNamespace] == owner.Namespace
}

// errObjectsElsewhere says that a Service's inventory is in another cluster than its
// spec.kubeConfig now reaches.
var errObjectsElsewhere = errors.New("the Service's objects are in another cluster than spec.kubeConfig reaches")

// objectsAccess is how the objects of a Service's inventory are reached to tear them
// down: in the operator's cluster, or in the target cluster they were applied to (which
// spec.kubeConfig must still reach: errObjectsElsewhere otherwise).
func (r *ServiceReconciler) objectsAccess(ctx context.Context, svc *v1alpha1.Service) (*access, error) {
	local, err := r.accessFor(svc)
	if err != nil || svc.Spec.KubeConfig == nil {
		if err == nil && svc.Status.Cluster != "" {
			return nil, fmt.Errorf("%w: they are in %s", errObjectsElsewhere, svc.Status.Cluster)
		}
		return local, err
	}
	a, err := r.targetAccess(ctx, svc, local)
	if err != nil {
		return nil, err
	}
	if svc.Status.Cluster != "" && svc.Status.Cluster != a.cluster.Server {
		return nil, fmt.Errorf("%w: they are in %s, it reaches %s", errObjectsElsewhere, svc.Status.Cluster, a.cluster.Server)
	}
	if err := a.cluster.Unreachable(); err != nil {
		return nil, err
	}
	return &access{account: a.account, local: a.local, cluster: a.cluster, kubeconfig: a.kubeconfig, home: a.home, delegating: a.delegating,
		cached: a.direct, direct: a.direct, writer: &observedWriter{Client: a.writer, cluster: a.cluster}, manager: a.manager}, nil
}

// leftInTarget tells whether a deleted Service's teardown cannot reach its objects for
// good — its kubeconfig Secret is gone or refused, or names another cluster now — and if
// so says with a Warning event that they are left where they are: nothing must keep a
// deleted Service from going. A cluster that does not answer is waited for.
func (r *ServiceReconciler) leftInTarget(svc *v1alpha1.Service, err error) bool {
	var failure *phaseError
	gone := errors.Is(err, errObjectsElsewhere) || errors.As(err, &failure) && failure.reason == v1alpha1.ReasonKubeConfigInvalid
	if !gone {
		return false
	}
	r.warn(svc, "ObjectsLeft", "%d objects are left in cluster %s: %s", len(svc.Status.Inventory), clusterName(svc.Status.Cluster), err.Error())
	return true
}

// observedWriter is the client of a teardown in a target cluster: a request that gets no
// answer marks the cluster unreachable.
type observedWriter struct {
	client.Client
	cluster *clusters.Cluster
}

func (w *observedWriter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return w.cluster.Observe(w.Client.Delete(ctx, obj, opts...))
}

func (w *observedWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return w.cluster.Observe(w.Client.Patch(ctx, obj, patch, opts...))
}

// TargetClient returns the client of a Service's target cluster (spec.kubeConfig), as
// its kubeconfig's identity, the kubeconfig read as the Service acts: for the lifecycle
// occurrences that act on its pods.
func (r *ServiceReconciler) TargetClient(ctx context.Context, svc *v1alpha1.Service) (client.Client, error) {
	if svc.Spec.KubeConfig == nil {
		return nil, errors.New("the Service deploys into the operator's own cluster")
	}
	local, err := r.accessFor(svc)
	if err != nil {
		return nil, err
	}
	if local.account != "" {
		if err := r.mayActAs(ctx, svc, local.account); err != nil {
			return nil, err
		}
	}
	cluster, err := r.targetCluster(ctx, svc, local)
	if err != nil {
		return nil, err
	}
	if err := cluster.Unreachable(); err != nil {
		return nil, err
	}
	return &observedWriter{Client: cluster.Client, cluster: cluster}, nil
}
