package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// A delegated Service (spec.kubeConfig.delegate) is handed to the Calaf operator serving
// its target cluster (the site): this operator fetches, compiles and renders nothing of
// it — it applies there a copy of the Service (without kubeConfig) and what that copy
// reads in its namespace (the uploaded package, the inputsFrom and credentials Secrets
// and ConfigMaps), and follows the copy's status. The site's operator deploys it, repairs
// its drift and runs its Day-2 operations, also while this one cannot reach it; when it
// can again, this Service's status catches up, and nothing is applied again unless it
// changed.

// Node templates of a delegated Service's plan.
const (
	// delegatedInputs holds the copies of what the site's Service reads.
	delegatedInputs = "site-inputs"
	// delegatedService holds the site's Service.
	delegatedService = "site"
)

// delegated tells whether a Service is handed to its target cluster's operator.
func delegated(svc *v1alpha1.Service) bool {
	return svc.Spec.KubeConfig != nil && svc.Spec.KubeConfig.Delegate
}

// delegatedPhases are the phases of a delegated Service's reconcile.
func (r *ServiceReconciler) delegatedPhases() []phase {
	return []phase{r.reconcileAccess, r.reconcileTarget, r.reconcileDelegate, r.reconcileDeploy, r.reconcilePrune, r.reconcileMirror}
}

// reconcileDelegate plans what a delegated Service applies in its target cluster: the
// copies of what the site's Service reads (node site-inputs), then the site's Service
// (node site, which waits for them and is healthy when that Service is Ready).
func (r *ServiceReconciler) reconcileDelegate(ctx context.Context, s *scope) error {
	svc := s.Service
	if svc.Spec.Source.VnfPackage != nil {
		return stalled(v1alpha1.ConditionApplied, v1alpha1.ReasonInvalidSource,
			"a delegated Service's package must be one its site can fetch (git, oci, url or an upload): VnfPackage %s is onboarded in this cluster", svc.Spec.Source.VnfPackage.VnfdID)
	}
	copies, err := r.siteInputs(ctx, s)
	if err != nil {
		return err
	}
	site, err := siteService(svc)
	if err != nil {
		return newPhaseError(v1alpha1.ConditionApplied, v1alpha1.ReasonInternalError, retry, err)
	}
	result := &render.Result{}
	if len(copies) > 0 {
		result.Nodes = append(result.Nodes, &render.Node{Name: delegatedInputs, Type: "calaf.Delegation", Objects: copies})
	}
	node := &render.Node{Name: delegatedService, Type: "calaf.Delegation", Objects: []*unstructured.Unstructured{site}}
	if len(copies) > 0 {
		node.DependsOn = []string{delegatedInputs}
	}
	result.Nodes = append(result.Nodes, node)
	for _, n := range result.Nodes {
		result.Objects = append(result.Objects, n.Objects...)
	}
	s.Result = result
	s.nodes = map[string]*v1alpha1.NodeStatus{}
	for _, old := range s.Service.Status.Nodes {
		s.nodes[old.Name] = &old
	}
	return nil
}

// siteService is the copy of a delegated Service its site's operator deploys: the same
// name, namespace, labels and spec, without the kubeConfig that delegates it.
func siteService(svc *v1alpha1.Service) (*unstructured.Unstructured, error) {
	labels := map[string]string{}
	for key, value := range svc.Labels {
		labels[key] = value
	}
	labels[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByCalaf
	labels[v1alpha1.LabelService], labels[v1alpha1.LabelServiceNamespace] = svc.Name, svc.Namespace
	labels[v1alpha1.LabelNode] = delegatedService
	spec := *svc.Spec.DeepCopy()
	spec.KubeConfig = nil
	site := &v1alpha1.Service{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.ServiceKind},
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: labels, Annotations: map[string]string{v1alpha1.AnnotationNodeType: "calaf.Delegation"}},
		Spec:       spec}
	return toApply(site)
}

// toApply converts an object to what an apply sends: no status, no creation time.
func toApply(obj runtime.Object) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(content, "status")
	unstructured.RemoveNestedField(content, "metadata", "creationTimestamp")
	return &unstructured.Unstructured{Object: content}, nil
}

// siteInputs copies what the site's Service reads in its namespace, read here as the
// Service acts: its uploaded package, its inputsFrom Secrets and ConfigMaps (an optional
// one that is missing is left out), the Secret of its source's credentials, its trust
// anchors.
func (r *ServiceReconciler) siteInputs(ctx context.Context, s *scope) ([]*unstructured.Unstructured, error) {
	svc := s.Service
	type ref struct {
		kind, name string
		optional   bool
	}
	var refs []ref
	src := svc.Spec.Source
	if src.Upload != nil {
		refs = append(refs, ref{kind: "ConfigMap", name: src.Upload.ConfigMapName})
	}
	for _, secret := range []*v1alpha1.LocalObjectReference{src.SecretRef, gitSecret(src), ociSecret(src)} {
		if secret != nil {
			refs = append(refs, ref{kind: "Secret", name: secret.Name})
		}
	}
	for _, in := range svc.Spec.InputsFrom {
		refs = append(refs, ref{kind: in.Kind, name: in.Name, optional: in.Optional})
	}
	if v := svc.Spec.Verify; v != nil && v.Anchors != nil {
		refs = append(refs, ref{kind: v.Anchors.Kind, name: v.Anchors.Name})
	}
	var copies []*unstructured.Unstructured
	seen := map[string]bool{}
	for _, r := range refs {
		if seen[r.kind+"/"+r.name] {
			continue
		}
		seen[r.kind+"/"+r.name] = true
		obj, err := siteCopy(ctx, s.access.local, svc, r.kind, r.name)
		switch {
		case apierrors.IsNotFound(err) && r.optional:
			continue
		case err != nil:
			return nil, newPhaseError(v1alpha1.ConditionApplied, v1alpha1.ReasonApplyFailed, retry, fmt.Errorf("reading %s %s to copy to the site: %w", r.kind, r.name, err))
		}
		copies = append(copies, obj)
	}
	return copies, nil
}

func gitSecret(src v1alpha1.Source) *v1alpha1.LocalObjectReference {
	if src.Git == nil {
		return nil
	}
	return src.Git.SecretRef
}

func ociSecret(src v1alpha1.Source) *v1alpha1.LocalObjectReference {
	if src.OCI == nil {
		return nil
	}
	return src.OCI.SecretRef
}

// siteCopy reads a Secret or ConfigMap and returns its copy for the site: its data, type
// and labels, and the Service's.
func siteCopy(ctx context.Context, reader client.Reader, svc *v1alpha1.Service, kind, name string) (*unstructured.Unstructured, error) {
	key := client.ObjectKey{Namespace: svc.Namespace, Name: name}
	meta := func(labels map[string]string) metav1.ObjectMeta {
		copied := map[string]string{}
		for k, v := range labels {
			copied[k] = v
		}
		copied[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByCalaf
		copied[v1alpha1.LabelService], copied[v1alpha1.LabelServiceNamespace] = svc.Name, svc.Namespace
		copied[v1alpha1.LabelNode] = delegatedInputs
		return metav1.ObjectMeta{Name: name, Namespace: svc.Namespace, Labels: copied}
	}
	if kind == "Secret" {
		secret := &corev1.Secret{}
		if err := reader.Get(ctx, key, secret); err != nil {
			return nil, err
		}
		return toApply(&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta(secret.Labels), Type: secret.Type, Data: secret.Data})
	}
	cm := &corev1.ConfigMap{}
	if err := reader.Get(ctx, key, cm); err != nil {
		return nil, err
	}
	return toApply(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta(cm.Labels), Data: cm.Data, BinaryData: cm.BinaryData})
}

// reconcileMirror makes the delegated Service's status say what its site's says: the
// package it fetched, its outputs (and why some are pending), its instantiation state,
// its VNF, lifecycle and warnings. The conditions are this Service's (Ready once the site's is).
func (r *ServiceReconciler) reconcileMirror(_ context.Context, s *scope) error {
	live := s.Live[delegatedService][v1alpha1.ServiceKind+"/"+s.Service.Name]
	if live == nil {
		return nil
	}
	site := &v1alpha1.Service{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, site); err != nil {
		return newPhaseError(v1alpha1.ConditionApplied, v1alpha1.ReasonInternalError, retry, fmt.Errorf("reading the site's Service: %w", err))
	}
	st, from := &s.Service.Status, site.Status
	st.Outputs, st.PendingOutputs, st.InstantiationState, st.VNF, st.Warnings = from.Outputs, from.PendingOutputs, from.InstantiationState, from.VNF, from.Warnings
	st.Lifecycle = from.Lifecycle
	if from.Package != nil {
		st.Package = from.Package.DeepCopy()
		s.passed.revision, s.passed.entry = from.Package.Revision, from.Package.Entry
		st.LastAttemptedRevision = from.LastAttemptedRevision
	}
	return nil
}
