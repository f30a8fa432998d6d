package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/render"
)

// ServiceSetReconciler makes a Service per site of a ServiceSet — per kubeconfig Secret or
// Cluster API Cluster it selects — with the site's inputs, rolls a change out across the
// sites in order (at most MaxConcurrent at a time, stopping at the first failure), deletes
// the Services of sites no longer selected, and aggregates where they stand.
type ServiceSetReconciler struct {
	client.Client
	// APIReader lists the clusters (Secrets' and Clusters' metadata only).
	APIReader client.Reader
	Recorder  events.EventRecorder
}

// setFieldManager applies the Services of ServiceSets.
const setFieldManager = "calaf-serviceset"

// AnnotationSetHash holds, on a ServiceSet's Service, the hash of what the ServiceSet
// wants of it: equal to the one it wants now, the site has the change.
const AnnotationSetHash = "calaf.io/service-set-hash"

// clusterAPIClusters is the kind of Cluster API's Clusters.
var clusterAPIClusters = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "ClusterList"}

// SetupWithManager registers the reconciler: a ServiceSet is reconciled when it or one of
// its Services changes, and at its interval (the clusters selected again).
func (r *ServiceSetReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("serviceset").
		For(&v1alpha1.ServiceSet{}).
		Owns(&v1alpha1.Service{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// site is one selected cluster of a ServiceSet.
type site struct {
	name, cluster, secret string
	labels                map[string]string
	// child is the site's Service as it is (nil: none yet), desired as the ServiceSet
	// wants it, hash identifying the latter.
	child   *v1alpha1.Service
	desired *v1alpha1.Service
	hash    string
	status  v1alpha1.SiteStatus
}

// Reconcile selects the sites, rolls the ServiceSet out to them and records where they
// stand.
func (r *ServiceSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	set := &v1alpha1.ServiceSet{}
	if err := r.Get(ctx, req.NamespacedName, set); err != nil || !set.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err) // its Services go with it (owner references)
	}
	before := set.DeepCopy()
	interval := durationOr(set.Spec.Interval, time.Minute)
	sites, err := r.selectSites(ctx, set)
	if err != nil {
		setSetCondition(set, metav1.ConditionFalse, v1alpha1.ReasonSelectionFailed, text.Truncate(err.Error(), 1024))
		return ctrl.Result{RequeueAfter: interval}, r.patchSetStatus(ctx, before, set)
	}
	if err := r.plan(ctx, set, sites); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.rollOut(ctx, set, sites); err != nil {
		return ctrl.Result{}, err
	}
	deselected, err := r.pruneSites(ctx, set, sites)
	if err != nil {
		return ctrl.Result{}, err
	}
	setSetStatus(set, sites, deselected)
	return ctrl.Result{RequeueAfter: requeueAfter(interval)}, r.patchSetStatus(ctx, before, set)
}

// selectSites lists the clusters the ServiceSet selects, sorted by site name: its
// kubeconfig Secrets, or its Cluster API Clusters (with their <name>-kubeconfig Secrets).
// Only their metadata is read.
func (r *ServiceSetReconciler) selectSites(ctx context.Context, set *v1alpha1.ServiceSet) ([]*site, error) {
	sel := set.Spec.Clusters
	selector, list, secretOf := sel.SecretSelector, &metav1.PartialObjectMetadataList{}, func(name string) string { return name }
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "SecretList"})
	if sel.ClusterSelector != nil {
		selector, secretOf = sel.ClusterSelector, func(name string) string { return name + "-kubeconfig" }
		list.SetGroupVersionKind(clusterAPIClusters)
	}
	if selector == nil {
		return nil, fmt.Errorf("spec.clusters selects nothing: set secretSelector or clusterSelector")
	}
	matching, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, fmt.Errorf("spec.clusters: %w", err)
	}
	if err := r.APIReader.List(ctx, list, client.InNamespace(set.Namespace), client.MatchingLabelsSelector{Selector: matching}); err != nil {
		if isNoMatch(err) {
			return nil, fmt.Errorf("Cluster API is not installed: no Clusters of cluster.x-k8s.io to select")
		}
		return nil, fmt.Errorf("listing the clusters: %w", err)
	}
	var sites []*site
	names := map[string]string{}
	for _, item := range list.Items {
		name := item.Labels[v1alpha1.LabelSite]
		if name == "" {
			name = item.Name
		}
		if other, dup := names[name]; dup {
			return nil, fmt.Errorf("site %s is both %s and %s (label %s)", name, other, item.Name, v1alpha1.LabelSite)
		}
		names[name] = item.Name
		sites = append(sites, &site{name: name, cluster: item.Name, secret: secretOf(item.Name), labels: item.Labels})
	}
	slices.SortFunc(sites, func(a, b *site) int { return strings.Compare(a.name, b.name) })
	return sites, nil
}

// plan reads each site's Service and works out the one the ServiceSet wants there.
func (r *ServiceSetReconciler) plan(ctx context.Context, set *v1alpha1.ServiceSet, sites []*site) error {
	for _, s := range sites {
		s.desired = setService(set, s)
		data, _ := json.Marshal(struct {
			Labels map[string]string
			Spec   v1alpha1.ServiceSpec
		}{s.desired.Labels, s.desired.Spec})
		sum := sha256.Sum256(data)
		s.hash = hex.EncodeToString(sum[:8])
		s.desired.Annotations[AnnotationSetHash] = s.hash
		child := &v1alpha1.Service{}
		err := r.Get(ctx, client.ObjectKey{Namespace: set.Namespace, Name: s.desired.Name}, child)
		switch {
		case err == nil:
			s.child = child
		case client.IgnoreNotFound(err) != nil:
			return err
		}
	}
	return nil
}

// setService is the Service a ServiceSet wants at a site: its template, deploying into
// the site's cluster, with the inputs of the template, the cluster's labels
// (InputsFromLabels) and the site's values, in that order.
func setService(set *v1alpha1.ServiceSet, s *site) *v1alpha1.Service {
	spec := *set.Spec.Template.Spec.DeepCopy()
	spec.KubeConfig = &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: s.secret}, Delegate: set.Spec.Clusters.Delegate}
	inputs := map[string]apiextensionsv1.JSON{}
	for name, value := range spec.Inputs {
		inputs[name] = value
	}
	for input, label := range set.Spec.InputsFromLabels {
		if value, ok := s.labels[label]; ok {
			data, _ := json.Marshal(value)
			inputs[input] = apiextensionsv1.JSON{Raw: data}
		}
	}
	for _, values := range set.Spec.Sites {
		if values.Name == s.name {
			for name, value := range values.Inputs {
				inputs[name] = value
			}
		}
	}
	spec.Inputs = inputs
	if len(inputs) == 0 {
		spec.Inputs = nil
	}
	labels := map[string]string{}
	for key, value := range set.Spec.Template.Metadata.Labels {
		labels[key] = value
	}
	labels[v1alpha1.LabelServiceSet], labels[v1alpha1.LabelSite] = set.Name, s.name
	annotations := map[string]string{}
	for key, value := range set.Spec.Template.Metadata.Annotations {
		annotations[key] = value
	}
	controllerRef := true
	return &v1alpha1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.ServiceKind},
		ObjectMeta: metav1.ObjectMeta{Name: render.ObjectName(set.Name, s.name), Namespace: set.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.ServiceSetKind, Name: set.Name, UID: set.UID, Controller: &controllerRef}}},
		Spec: spec,
	}
}
