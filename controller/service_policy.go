package controller

import (
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"calaf.io/calaf/api/v1alpha1"
	renderpolicy "calaf.io/calaf/policy"
	"calaf.io/calaf/render"
	sourcepkg "calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// admit checks a render against the render policy before anything of it reaches the API
// server, whatever identity the Service acts with: an object the policy refuses stalls the
// Service (PolicyViolation, the refusals in the message) until its package or the policy
// changes, and nothing of the render is applied.
func (r *ServiceReconciler) admit(s *scope, result *render.Result) error {
	target := renderpolicy.Target{Namespace: s.Service.Namespace, Signer: verifiedSigner(s.Artifact)}
	err := r.Policy.CheckTarget(s.facts.policyEntry, target, result.Nodes, r.namespaced)
	if err == nil {
		return nil
	}
	diags := tosca.DiagnosticsOf(err)
	lines := make([]string, 0, len(diags))
	for _, d := range diags {
		lines = append(lines, d.String())
	}
	const maxLines = 5
	if len(lines) > maxLines {
		lines = append(lines[:maxLines], fmt.Sprintf("(and %d more refusals)", len(lines)-maxLines))
	}
	return stalled(v1alpha1.ConditionApplied, v1alpha1.ReasonPolicyViolation, "%s", s.Redact.String(strings.Join(lines, "; ")))
}

// verifiedSigner is who signed the package fetched this reconcile, when its signature
// verified against the operator's own trust anchors (a Service's spec.verify.anchors
// cannot vouch for a signer the admin's policy trusts); nil otherwise.
func verifiedSigner(artifact *sourcepkg.Artifact) *renderpolicy.Signer {
	if artifact == nil || artifact.Signer == nil || !artifact.OperatorAnchored {
		return nil
	}
	return &renderpolicy.Signer{Subject: artifact.Signer.Subject, Issuer: artifact.Signer.Issuer}
}

// namespaced tells the scope of a kind as the API server's discovery does (known is false
// for a kind it does not serve).
func (r *ServiceReconciler) namespaced(gvk schema.GroupVersionKind) (namespaced, known bool) {
	mapping, err := r.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, false
	}
	return mapping.Scope.Name() == apimeta.RESTScopeNameNamespace, true
}
