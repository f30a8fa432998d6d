package policy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// vendor is the signer a cluster admin trusts with cluster RBAC in trustPolicy.
var vendor = &Signer{Subject: "CN=Signing,O=Vendor A", Issuer: "CN=Vendor A CA,O=Vendor A"}

const trustPolicy = `apiVersion: calaf.io/v1alpha1
kind: RenderPolicy
namespaces:
  trusted: { clusterRBAC: true }
signers:
- subject: CN=Signing,O=Vendor A
  issuer: CN=Vendor A CA,O=Vendor A
  clusterRBAC: true
- subject: CN=Signing,O=Vendor B
  namespaces: [ telco ]
  clusterRBAC: true
- subject: CN=Signing,O=Vendor C
`

// checkTarget runs a policy on one object for a target; "" when it admits it.
func checkTarget(p *Policy, target Target, o *unstructured.Unstructured) string {
	err := p.CheckTarget("vnfd.yaml", target, []*render.Node{{Name: "n", Objects: []*unstructured.Unstructured{o}}}, Offline)
	var lines []string
	for _, d := range tosca.DiagnosticsOf(err) {
		lines = append(lines, d.String())
	}
	return strings.Join(lines, "\n")
}

// Cluster RBAC (ClusterRoles, ClusterRoleBindings, RoleBindings to ClusterRoles) is
// refused unless the admin trusts the namespace, or the package's verified signer (by
// subject, issuer when given, within the namespaces given); trusting it lifts nothing else.
func TestClusterRBACTrust(t *testing.T) {
	p, err := Parse("policy.yaml", []byte(trustPolicy))
	if err != nil {
		t.Fatal(err)
	}
	clusterRole := obj("rbac.authorization.k8s.io/v1", "ClusterRole", "reader", map[string]any{"rules": []any{}})
	binding := obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "reader", map[string]any{"roleRef": map[string]any{"kind": "ClusterRole", "name": "reader"}})
	roleBinding := obj("rbac.authorization.k8s.io/v1", "RoleBinding", "reader", map[string]any{"roleRef": map[string]any{"kind": "ClusterRole", "name": "view"}})
	signedBy := func(subject, issuer string) *Signer { return &Signer{Subject: subject, Issuer: issuer} }
	cases := []struct {
		name   string
		target Target
		obj    *unstructured.Unstructured
		want   string // a substring of the refusal; "" when admitted
	}{
		{"ClusterRole, untrusted namespace, no signer", Target{Namespace: "tenant"}, clusterRole, "ClusterRole.rbac.authorization.k8s.io is on the denylist"},
		{"ClusterRoleBinding, untrusted namespace, no signer", Target{Namespace: "tenant"}, binding, "ClusterRoleBinding.rbac.authorization.k8s.io is on the denylist"},
		{"RoleBinding to a ClusterRole, untrusted", Target{Namespace: "tenant"}, roleBinding, "a RoleBinding to a ClusterRole is on the denylist"},
		{"ClusterRole, trusted namespace", Target{Namespace: "trusted"}, clusterRole, ""},
		{"ClusterRoleBinding, trusted namespace", Target{Namespace: "trusted"}, binding, ""},
		{"RoleBinding to a ClusterRole, trusted namespace", Target{Namespace: "trusted"}, roleBinding, ""},
		{"ClusterRole, trusted signer", Target{Namespace: "tenant", Signer: vendor}, clusterRole, ""},
		{"ClusterRoleBinding, trusted signer", Target{Namespace: "tenant", Signer: vendor}, binding, ""},
		{"trusted subject, another issuer", Target{Namespace: "tenant", Signer: signedBy(vendor.Subject, "CN=Someone Else")}, binding, "is on the denylist"},
		{"another subject", Target{Namespace: "tenant", Signer: signedBy("CN=Signing,O=Vendor Z", vendor.Issuer)}, binding, "is on the denylist"},
		{"signer trusted in its namespace", Target{Namespace: "telco", Signer: signedBy("CN=Signing,O=Vendor B", "CN=any")}, binding, ""},
		{"signer trusted in another namespace", Target{Namespace: "tenant", Signer: signedBy("CN=Signing,O=Vendor B", "CN=any")}, binding, "is on the denylist"},
		{"signer listed without clusterRBAC", Target{Namespace: "tenant", Signer: signedBy("CN=Signing,O=Vendor C", "CN=any")}, binding, "is on the denylist"},
		{"trust lifts no other denied kind", Target{Namespace: "trusted", Signer: vendor}, obj("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "hook", nil), "is on the denylist (admission webhooks and policies)"},
		{"trust lifts no token Secret", Target{Namespace: "trusted", Signer: vendor}, obj("v1", "Secret", "t", map[string]any{"type": "kubernetes.io/service-account-token"}), "service-account-token is on the denylist"},
		{"trust lifts no other cluster-scoped object", Target{Namespace: "trusted", Signer: vendor}, obj("v1", "Namespace", "other", nil), "cluster-scoped objects are not allowed"},
		{"trust lifts no pod rule", Target{Namespace: "trusted", Signer: vendor}, pod(map[string]any{"hostNetwork": true}, nil), "host namespaces (hostNetwork=true)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkTarget(p, c.target, c.obj)
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// The default policy and Check (no signer) trust no cluster RBAC whatever the namespace.
func TestClusterRBACClosedByDefault(t *testing.T) {
	binding := obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "reader", map[string]any{"roleRef": map[string]any{"kind": "ClusterRole", "name": "reader"}})
	if got := checkTarget(nil, Target{Namespace: "trusted", Signer: vendor}, binding); !strings.Contains(got, "is on the denylist") {
		t.Errorf("the default policy admits a ClusterRoleBinding of a signed package: %q", got)
	}
	p, err := Parse("policy.yaml", []byte(trustPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if got := check(p, binding); !strings.Contains(got, "is on the denylist") {
		t.Errorf("Check in namespace tenant without a signer admits a ClusterRoleBinding: %q", got)
	}
}

// A signer the policy names without a subject is refused with the policy's name.
func TestSignerNeedsSubject(t *testing.T) {
	_, err := Parse("policy.yaml", []byte("apiVersion: calaf.io/v1alpha1\nkind: RenderPolicy\nsigners:\n- { issuer: 'CN=CA', clusterRBAC: true }\n"))
	if err == nil || err.Error() != "render policy policy.yaml: signers[0] needs the subject of the signing certificate" {
		t.Errorf("got %v", err)
	}
}
