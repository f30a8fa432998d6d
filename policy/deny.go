package policy

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// deniedGroups are API groups no package may render into, whatever the policy, and why.
var deniedGroups = map[string]string{
	"calaf.io":                     "Calaf's own kinds",
	"admissionregistration.k8s.io": "admission webhooks and policies",
	"apiextensions.k8s.io":         "custom resource definitions",
	"apiregistration.k8s.io":       "API services",
	"certificates.k8s.io":          "certificates",
	"flowcontrol.apiserver.k8s.io": "API priority and fairness",
	"authentication.k8s.io":        "tokens",
	"internal.apiserver.k8s.io":    "the API server's own state",
	"storagemigration.k8s.io":      "the API server's own state",
}

// deniedKinds are kinds of other groups no package may render, and why; RBAC that grants
// cluster roles only without the admin's trust (clusterRBAC).
var deniedKinds = map[string]string{
	"ClusterRole.rbac.authorization.k8s.io":        "RBAC that grants cluster roles",
	"ClusterRoleBinding.rbac.authorization.k8s.io": "RBAC that grants cluster roles",
	"Node": "nodes",
}

// stateSuffixes end the names of what the operator keeps for each Service in its
// namespace: the compiled package (a Secret) and an uploaded package (a ConfigMap).
var stateSuffixes = []string{".calaf-state", ".calaf-package"}

// denied says why no policy lets a package render an object; "" when the denylist does
// not name it.
func denied(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	if why := deniedGroups[gvk.Group]; why != "" {
		return kindName(gvk.GroupKind()) + " is on the denylist (" + why + ")"
	}
	if why := deniedKinds[kindName(gvk.GroupKind())]; why != "" {
		return kindName(gvk.GroupKind()) + " is on the denylist (" + why + ")"
	}
	for _, suffix := range stateSuffixes {
		if strings.HasSuffix(obj.GetName(), suffix) {
			return "the name ends with " + suffix + ", which names the operator's state of a Service (on the denylist)"
		}
	}
	switch kindName(gvk.GroupKind()) {
	case "RoleBinding.rbac.authorization.k8s.io":
		if kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind"); kind != "Role" {
			return "a RoleBinding to a ClusterRole is on the denylist (RBAC that grants cluster roles): bind a Role of the namespace"
		}
	case "Secret":
		if kind, _, _ := unstructured.NestedString(obj.Object, "type"); kind == "kubernetes.io/service-account-token" {
			return "a Secret of type kubernetes.io/service-account-token is on the denylist (it would hold the token of a service account)"
		}
	}
	return ""
}

// grantsClusterRole tells whether an object is RBAC that grants cluster roles: a
// ClusterRole, a ClusterRoleBinding, or a RoleBinding to a ClusterRole.
func grantsClusterRole(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	if gvk.Group != "rbac.authorization.k8s.io" {
		return false
	}
	switch gvk.Kind {
	case "ClusterRole", "ClusterRoleBinding":
		return true
	case "RoleBinding":
		kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind")
		return kind != "Role"
	}
	return false
}

// trustsClusterRBAC tells whether the admin trusts a target with RBAC that grants cluster
// roles: every package of its namespace (namespaces.<ns>.clusterRBAC), or the packages of
// its verified signer (signers[].clusterRBAC, within their namespaces when listed). The
// API server still checks that the identity applying them holds what they grant.
func (p *Policy) trustsClusterRBAC(target Target) bool {
	if p.Namespaces[target.Namespace].ClusterRBAC {
		return true
	}
	if target.Signer == nil {
		return false
	}
	for _, s := range p.Signers {
		if !s.ClusterRBAC || s.Subject != target.Signer.Subject || s.Issuer != "" && s.Issuer != target.Signer.Issuer {
			continue
		}
		if len(s.Namespaces) == 0 || slices.Contains(s.Namespaces, target.Namespace) {
			return true
		}
	}
	return false
}
