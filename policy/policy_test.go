package policy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

func obj(apiVersion, kind, name string, content map[string]any) *unstructured.Unstructured {
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
	for key, value := range content {
		o[key] = value
	}
	return &unstructured.Unstructured{Object: o}
}

// pod is a Deployment whose pod spec is spec, its container container.
func pod(spec, container map[string]any) *unstructured.Unstructured {
	c := map[string]any{"name": "app", "image": "busybox:1.36"}
	for key, value := range container {
		c[key] = value
	}
	s := map[string]any{"containers": []any{c}}
	for key, value := range spec {
		s[key] = value
	}
	return obj("apps/v1", "Deployment", "web", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": s}}})
}

// check runs a policy on one object for a Service in namespace "tenant".
func check(p *Policy, o *unstructured.Unstructured) string {
	err := p.Check("service.yaml", "tenant", []*render.Node{{Name: "n", Objects: []*unstructured.Unstructured{o}}}, Offline)
	if err == nil {
		return ""
	}
	var lines []string
	for _, d := range tosca.DiagnosticsOf(err) {
		lines = append(lines, d.String())
	}
	return strings.Join(lines, "\n")
}

// TestDefaultPolicy checks what the default policy refuses, with the exact diagnostics.
func TestDefaultPolicy(t *testing.T) {
	const prefix = `service.yaml: node "n": `
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"a plain Deployment", pod(nil, nil), ""},
		{"ClusterRoleBinding", obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "admin", nil),
			prefix + `ClusterRoleBinding "admin": refused by the render policy: ClusterRoleBinding.rbac.authorization.k8s.io is on the denylist (RBAC that grants cluster roles)`},
		{"RoleBinding to a ClusterRole", obj("rbac.authorization.k8s.io/v1", "RoleBinding", "edit", map[string]any{"roleRef": map[string]any{"kind": "ClusterRole", "name": "admin"}}),
			prefix + `RoleBinding "edit": refused by the render policy: a RoleBinding to a ClusterRole is on the denylist (RBAC that grants cluster roles): bind a Role of the namespace`},
		{"RoleBinding to a Role", obj("rbac.authorization.k8s.io/v1", "RoleBinding", "edit", map[string]any{"roleRef": map[string]any{"kind": "Role", "name": "edit"}}), ""},
		{"mutating webhook", obj("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "hook", nil),
			prefix + `MutatingWebhookConfiguration "hook": refused by the render policy: MutatingWebhookConfiguration.admissionregistration.k8s.io is on the denylist (admission webhooks and policies)`},
		{"CRD", obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "things.example.com", nil),
			prefix + `CustomResourceDefinition "things.example.com": refused by the render policy: CustomResourceDefinition.apiextensions.k8s.io is on the denylist (custom resource definitions)`},
		{"a Calaf Service", obj("calaf.io/v1alpha1", "Service", "other", nil),
			prefix + `Service "other": refused by the render policy: Service.calaf.io is on the denylist (Calaf's own kinds)`},
		{"the state Secret", obj("v1", "Secret", "other.calaf-state", nil),
			prefix + `Secret "other.calaf-state": refused by the render policy: the name ends with .calaf-state, which names the operator's state of a Service (on the denylist)`},
		{"a service account token", obj("v1", "Secret", "token", map[string]any{"type": "kubernetes.io/service-account-token"}),
			prefix + `Secret "token": refused by the render policy: a Secret of type kubernetes.io/service-account-token is on the denylist (it would hold the token of a service account)`},
		{"a Namespace", obj("v1", "Namespace", "kube-system", nil),
			prefix + `Namespace "kube-system": refused by the render policy: cluster-scoped objects are not allowed (clusterScoped: false)`},
		{"privileged", pod(nil, map[string]any{"securityContext": map[string]any{"privileged": true}}),
			prefix + `Deployment "web": refused by the render policy: spec.template.spec: violates PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true) in namespace "tenant"`},
		{"SYS_ADMIN", pod(nil, map[string]any{"securityContext": map[string]any{"capabilities": map[string]any{"add": []any{"NET_BIND_SERVICE", "SYS_ADMIN"}}}}),
			prefix + `Deployment "web": refused by the render policy: spec.template.spec: violates PodSecurity "baseline:latest": non-default capabilities (container "app" must not include "SYS_ADMIN" in securityContext.capabilities.add) in namespace "tenant"`},
		{"hostNetwork", pod(map[string]any{"hostNetwork": true}, nil),
			prefix + `Deployment "web": refused by the render policy: spec.template.spec: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true) in namespace "tenant"`},
		{"hostPID", pod(map[string]any{"hostPID": true}, nil),
			prefix + `Deployment "web": refused by the render policy: spec.template.spec: violates PodSecurity "baseline:latest": host namespaces (hostPID=true) in namespace "tenant"`},
		{"hostPort", pod(nil, map[string]any{"ports": []any{map[string]any{"containerPort": int64(80), "hostPort": int64(80)}}}),
			prefix + `Deployment "web": refused by the render policy: spec.template.spec: violates PodSecurity "baseline:latest": hostPort (container "app" uses hostPort 80) in namespace "tenant"`},
		{"hostPath", pod(map[string]any{"volumes": []any{map[string]any{"name": "root", "hostPath": map[string]any{"path": "/"}}}}, nil),
			prefix + `Deployment "web": refused by the render policy: spec.template.spec: violates PodSecurity "baseline:latest": hostPath volumes (volume "root") in namespace "tenant"`},
		{"hostNetwork in a custom kind", obj("argoproj.io/v1alpha1", "Rollout", "web", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"hostNetwork": true}}}}),
			prefix + `Rollout "web": refused by the render policy: spec.template.spec.hostNetwork: host namespaces are not allowed in namespace "tenant"`},
		{"a ConfigMap that says hostNetwork", obj("v1", "ConfigMap", "notes", map[string]any{"data": map[string]any{"hostNetwork": "true"}}), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := check(nil, c.obj); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestPolicyFile reads a policy: kinds, cluster-scoped objects and a namespace's
// exceptions are lifted as it says; the denylist is not.
func TestPolicyFile(t *testing.T) {
	p, err := Parse("policy.yaml", []byte(`apiVersion: calaf.io/v1alpha1
kind: RenderPolicy
allowedKinds: [Deployment.apps, ConfigMap, Namespace, ClusterRoleBinding.rbac.authorization.k8s.io, "*.example.com"]
clusterScoped: true
namespaces:
  tenant:
    privileged: true
    hostNamespaces: true
    hostPaths: [/var/log]
`))
	if err != nil {
		t.Fatal(err)
	}
	admitted := []*unstructured.Unstructured{
		obj("v1", "Namespace", "extra", nil),
		obj("example.com/v1", "Widget", "w", nil),
		pod(map[string]any{"hostNetwork": true, "volumes": []any{map[string]any{"name": "logs", "hostPath": map[string]any{"path": "/var/log/app"}}}},
			map[string]any{"securityContext": map[string]any{"privileged": true}}),
	}
	for _, o := range admitted {
		if got := check(p, o); got != "" {
			t.Errorf("%s refused: %s", o.GetKind(), got)
		}
	}
	refused := map[*unstructured.Unstructured]string{
		obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "admin", nil): "is on the denylist",
		obj("v1", "Secret", "s", nil):                                           "Secret is not among the allowed kinds (allowedKinds: *.example.com, ClusterRoleBinding.rbac.authorization.k8s.io, ConfigMap, Deployment.apps, Namespace)",
		pod(map[string]any{"volumes": []any{map[string]any{"name": "etc", "hostPath": map[string]any{"path": "/var/log/../../etc"}}}}, nil): `hostPath volumes are not allowed (path "/var/log/../../etc")`,
	}
	for o, want := range refused {
		if got := check(p, o); !strings.Contains(got, want) {
			t.Errorf("%s: got %q, want %q", o.GetKind(), got, want)
		}
	}
	other := p.Check("service.yaml", "other", []*render.Node{{Name: "n", Objects: []*unstructured.Unstructured{admitted[2]}}}, Offline)
	if other == nil || !strings.Contains(other.Error(), `privileged (container "app" must not set securityContext.privileged=true) in namespace "other"`) {
		t.Errorf("another namespace got the exceptions: %v", other)
	}
}

// TestPolicyFileErrors refuses files that are not render policies.
func TestPolicyFileErrors(t *testing.T) {
	for text, want := range map[string]string{
		"apiVersion: calaf.io/v1alpha1\nkind: RenderPolicy\nallowPrivileged: true\n":   `unknown field "allowPrivileged"`,
		"apiVersion: v1\nkind: ConfigMap\n":                                            "want kind RenderPolicy",
		"apiVersion: calaf.io/v1alpha1\nkind: RenderPolicy\nallowedKinds: [apps/v1]\n": `"apps/v1" is not a kind`,
	} {
		if _, err := Parse("p.yaml", []byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", text, err, want)
		}
	}
}

// TestExamplesPass renders the examples: the default policy admits all they render.
func TestExamplesPass(t *testing.T) {
	for _, name := range []string{"hello-world", "network-service", "vendor-profile"} {
		pkg, err := tosca.Open(filepath.Join("..", "examples", name), tosca.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		compiled, err := tosca.NewCompiler(1).Compile(context.Background(), pkg, nil)
		if err != nil {
			t.Fatal(err)
		}
		result, err := render.NewRenderer(1).Render(context.Background(), compiled, render.Options{Service: "s", Namespace: "tenant"})
		if err != nil {
			t.Fatal(err)
		}
		if err := (&Policy{}).Check(pkg.Entry, "tenant", result.Nodes, Offline); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		pkg.Close()
	}
}
