// Package policy is the render policy: what the cluster admin lets packages render, set
// with the operator's flags or a file (never by a package). It names the kinds packages
// may render, allows cluster-scoped objects or not (not, by default), keeps a denylist no
// policy lifts — Calaf's own kinds and state, admission webhooks and policies, CRDs, API
// services, certificates, service account tokens —, refuses RBAC that grants cluster roles
// unless it trusts a namespace or a package's SOL004 signer with it, and
// refuses pods that do not meet the namespace's level of Kubernetes' Pod Security
// Standards (baseline by default), and Services with external IPs, unless the policy
// allows them for the Service's namespace. The operator checks every render against it before any request
// to the API server, whatever identity the Service acts with; `calaf validate` and `calaf
// render` check it too, with the same file.
package policy

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// Kind and APIVersion of a policy file.
const (
	Kind       = "RenderPolicy"
	APIVersion = "calaf.io/v1alpha1"
)

// Policy is a render policy. The zero Policy is the default: every namespaced kind off
// the denylist, no cluster-scoped object, pods of the baseline Pod Security level, no
// external IPs. A Policy is not copied: it keeps what it built to evaluate pods.
type Policy struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	// AllowedKinds, when set, are the only kinds packages may render: "Kind" for the core
	// group, "Kind.group" otherwise, "*.group" for every kind of a group.
	AllowedKinds []string `json:"allowedKinds,omitempty"`
	// DeniedKinds adds kinds to the denylist, spelled as AllowedKinds.
	DeniedKinds []string `json:"deniedKinds,omitempty"`
	// ClusterScoped allows objects that have no namespace (Namespaces, PersistentVolumes,
	// StorageClasses...), the denylist's excepted.
	ClusterScoped bool `json:"clusterScoped,omitempty"`
	// Namespaces set the Pod Security level of a namespace's Services, and lift pod rules
	// for them.
	Namespaces map[string]Exceptions `json:"namespaces,omitempty"`
	PodRules
	// Signers lift rules for the packages signed by a certificate (SOL004) whose signature
	// verified against the operator's trust anchors.
	Signers []SignerExceptions `json:"signers,omitempty"`
}

// SignerExceptions are what the packages signed by a certificate may render that others
// may not.
type SignerExceptions struct {
	// Subject and, when set, Issuer identify the signing certificate: distinguished names
	// as the Service's status.package.signer shows them ("CN=...,O=...").
	Subject string `json:"subject"`
	Issuer  string `json:"issuer,omitempty"`
	// Namespaces, when set, are the only namespaces whose Services get the exceptions.
	Namespaces []string `json:"namespaces,omitempty"`
	// ClusterRBAC allows ClusterRoles, ClusterRoleBindings and RoleBindings to
	// ClusterRoles.
	ClusterRBAC bool `json:"clusterRBAC,omitempty"`
}

// Target is what a render is checked for: the Service's namespace and, when its package's
// signature verified, the certificate that signed it.
type Target struct {
	Namespace string
	Signer    *Signer
}

// Signer identifies the certificate that signed a package whose signature verified.
type Signer struct {
	Subject, Issuer string
}

// Exceptions are what the Services of a namespace may render that others may not.
type Exceptions struct {
	// Privileged allows privileged containers, added capabilities beyond Kubernetes'
	// baseline and an unmasked /proc (it lifts these checks of the Pod Security levels).
	Privileged bool `json:"privileged,omitempty"`
	// HostNamespaces allows the host's network, PID and IPC namespaces, and host ports.
	HostNamespaces bool `json:"hostNamespaces,omitempty"`
	// HostPaths are the host directories hostPath volumes may mount (a path and what is
	// below it; "/" is any).
	HostPaths []string `json:"hostPaths,omitempty"`
	// ExternalIPs allows Services with external IPs.
	ExternalIPs bool `json:"externalIPs,omitempty"`
	// PodSecurity is the namespace's Pod Security level (PodRules.PodSecurity).
	PodSecurity string `json:"podSecurity,omitempty"`
	// ClusterRBAC allows ClusterRoles, ClusterRoleBindings and RoleBindings to
	// ClusterRoles, whatever the package and clusterScoped.
	ClusterRBAC bool `json:"clusterRBAC,omitempty"`
}

// Load reads a policy file (YAML or JSON); unknown fields are errors.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("render policy: %w", err)
	}
	return Parse(path, data)
}

// Parse reads a policy; name is used in errors.
func Parse(name string, data []byte) (*Policy, error) {
	var p Policy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("render policy %s: %w", name, err)
	}
	if p.Kind != Kind || p.APIVersion != APIVersion {
		return nil, fmt.Errorf("render policy %s: kind %q, apiVersion %q: want kind %s, apiVersion %s", name, p.Kind, p.APIVersion, Kind, APIVersion)
	}
	for i, signer := range p.Signers {
		if strings.TrimSpace(signer.Subject) == "" {
			return nil, fmt.Errorf("render policy %s: signers[%d] needs the subject of the signing certificate", name, i)
		}
	}
	for _, kind := range append(append([]string{}, p.AllowedKinds...), p.DeniedKinds...) {
		if kind == "" || strings.ContainsAny(kind, " /") {
			return nil, fmt.Errorf("render policy %s: %q is not a kind (Kind, Kind.group or *.group)", name, kind)
		}
	}
	if err := p.checkLevels(name); err != nil {
		return nil, err
	}
	return &p, nil
}

// Namespaced tells whether objects of a kind live in a namespace: from the API server's
// discovery in the operator, from Kubernetes' built-in kinds offline. known is false for
// a kind it cannot tell.
type Namespaced func(gvk schema.GroupVersionKind) (namespaced, known bool)

// Offline tells the scope of the built-in kinds; other kinds count as namespaced.
func Offline(gvk schema.GroupVersionKind) (bool, bool) {
	return !render.IsClusterScoped(gvk.Kind), true
}

// Error lists what a render policy refused, object by object. It is a problem of the
// package for the CLI (it unwraps to a *tosca.InvalidError); the operator reports it with
// its own reason.
type Error struct {
	Diagnostics []tosca.Diagnostic
}

func (e *Error) Error() string { return e.Unwrap().Error() }

// Unwrap returns the refusals as a package problem.
func (e *Error) Unwrap() error { return &tosca.InvalidError{Diagnostics: e.Diagnostics} }

// Check checks every object of a render for a Service in namespace whose package has no
// verified signer; entry locates the diagnostics. It returns an *Error listing each
// refusal, nil when the policy admits all.
func (p *Policy) Check(entry, namespace string, nodes []*render.Node, scope Namespaced) error {
	return p.CheckTarget(entry, Target{Namespace: namespace}, nodes, scope)
}

// CheckTarget is Check for a target: the namespace and the package's verified signer.
func (p *Policy) CheckTarget(entry string, target Target, nodes []*render.Node, scope Namespaced) error {
	if p == nil {
		p = &Policy{}
	}
	var diags []tosca.Diagnostic
	for _, node := range nodes {
		for _, obj := range node.Objects {
			for _, refusal := range p.refusals(obj, target, scope) {
				diags = append(diags, tosca.Diagnostic{File: entry, Message: fmt.Sprintf("node %q: %s %q: refused by the render policy: %s", node.Name, obj.GetKind(), obj.GetName(), refusal)})
			}
		}
	}
	if len(diags) == 0 {
		return nil
	}
	return &Error{Diagnostics: diags}
}

// refusals says why the policy refuses an object; none when it admits it.
func (p *Policy) refusals(obj *unstructured.Unstructured, target Target, scope Namespaced) []string {
	gvk := obj.GroupVersionKind()
	trusted := grantsClusterRole(obj) && p.trustsClusterRBAC(target)
	if reason := denied(obj); reason != "" && !trusted {
		return []string{reason}
	}
	name := kindName(gvk.GroupKind())
	if matches(p.DeniedKinds, gvk.GroupKind()) {
		return []string{name + " is denied (deniedKinds)"}
	}
	if len(p.AllowedKinds) > 0 && !matches(p.AllowedKinds, gvk.GroupKind()) {
		return []string{fmt.Sprintf("%s is not among the allowed kinds (allowedKinds: %s)", name, strings.Join(sorted(p.AllowedKinds), ", "))}
	}
	namespaced, known := scope(gvk)
	if !known {
		namespaced, _ = Offline(gvk)
	}
	if !namespaced && !p.ClusterScoped && !trusted {
		return []string{"cluster-scoped objects are not allowed (clusterScoped: false)"}
	}
	return p.podRefusals(obj, target.Namespace)
}

// kindName spells a kind as the policy does: "Kind" or "Kind.group".
func kindName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// matches tells whether a kind is in a list of kinds ("Kind", "Kind.group", "*.group").
func matches(kinds []string, gk schema.GroupKind) bool {
	for _, k := range kinds {
		if k == kindName(gk) || k == "*."+gk.Group && gk.Group != "" {
			return true
		}
	}
	return false
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}
