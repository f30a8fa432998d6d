package policy

import (
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

// deniedKinds are kinds of other groups no package may render, and why.
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
