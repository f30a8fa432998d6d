package policy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// workload wraps a pod spec and its metadata the way kind carries them (a Pod, a
// template of the built-in workloads, a CronJob's job template).
func workload(kind string, meta, spec map[string]any) *unstructured.Unstructured {
	template := map[string]any{"metadata": meta, "spec": spec}
	switch kind {
	case "Pod":
		pod := obj("v1", "Pod", "web", map[string]any{"spec": spec})
		for key, value := range meta {
			pod.Object["metadata"].(map[string]any)[key] = value
		}
		return pod
	case "Job":
		return obj("batch/v1", "Job", "web", map[string]any{"spec": map[string]any{"template": template}})
	case "CronJob":
		return obj("batch/v1", "CronJob", "web", map[string]any{"spec": map[string]any{"schedule": "* * * * *",
			"jobTemplate": map[string]any{"spec": map[string]any{"template": template}}}})
	}
	return obj("apps/v1", kind, "web", map[string]any{"spec": map[string]any{"template": template}})
}

// podSpec is a pod spec of one container "app", with the pod's fields and the container's.
func podSpec(spec, container map[string]any) map[string]any {
	c := map[string]any{"name": "app", "image": "busybox:1.36"}
	for key, value := range container {
		c[key] = value
	}
	s := map[string]any{"containers": []any{c}}
	for key, value := range spec {
		s[key] = value
	}
	return s
}

// restrictedSpec meets the restricted level: not root, no privilege escalation, every
// capability dropped, the runtime's seccomp profile.
func restrictedSpec() map[string]any {
	return podSpec(map[string]any{"securityContext": map[string]any{"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}},
		map[string]any{"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}}})
}

// TestPodSecurityBaseline checks that the default policy refuses what Kubernetes' baseline
// Pod Security Standard refuses, with its words, in every kind that carries a pod, and
// Services with external IPs.
func TestPodSecurityBaseline(t *testing.T) {
	const prefix = `service.yaml: node "n": `
	const violates = `violates PodSecurity "baseline:latest": `
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"seccomp Unconfined (pod)", workload("Deployment", nil, podSpec(map[string]any{"securityContext": map[string]any{"seccompProfile": map[string]any{"type": "Unconfined"}}}, nil)),
			prefix + `Deployment "web": refused by the render policy: spec.template.spec: ` + violates + `seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined") in namespace "tenant"`},
		{"seccomp Unconfined (container)", workload("StatefulSet", nil, podSpec(nil, map[string]any{"securityContext": map[string]any{"seccompProfile": map[string]any{"type": "Unconfined"}}})),
			prefix + `StatefulSet "web": refused by the render policy: spec.template.spec: ` + violates + `seccompProfile (container "app" must not set securityContext.seccompProfile.type to "Unconfined") in namespace "tenant"`},
		{"AppArmor Unconfined", workload("DaemonSet", nil, podSpec(nil, map[string]any{"securityContext": map[string]any{"appArmorProfile": map[string]any{"type": "Unconfined"}}})),
			prefix + `DaemonSet "web": refused by the render policy: spec.template.spec: ` + violates + `forbidden AppArmor profile (container "app" must not set AppArmor profile type to "Unconfined") in namespace "tenant"`},
		{"AppArmor annotation unconfined", workload("ReplicaSet", map[string]any{"annotations": map[string]any{"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}}, podSpec(nil, nil)),
			prefix + `ReplicaSet "web": refused by the render policy: spec.template.spec: ` + violates + `forbidden AppArmor profile (annotation must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/app="unconfined"") in namespace "tenant"`},
		{"SELinux options", workload("Job", nil, podSpec(map[string]any{"securityContext": map[string]any{"seLinuxOptions": map[string]any{"type": "spc_t", "user": "system_u"}}}, nil)),
			prefix + `Job "web": refused by the render policy: spec.template.spec: ` + violates + `seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set) in namespace "tenant"`},
		{"unsafe sysctl", workload("CronJob", nil, podSpec(map[string]any{"securityContext": map[string]any{"sysctls": []any{map[string]any{"name": "kernel.msgmax", "value": "65536"}}}}, nil)),
			prefix + `CronJob "web": refused by the render policy: spec.jobTemplate.spec.template.spec: ` + violates + `forbidden sysctls (kernel.msgmax) in namespace "tenant"`},
		{"Windows hostProcess", workload("Pod", nil, podSpec(map[string]any{"hostNetwork": true, "securityContext": map[string]any{"windowsOptions": map[string]any{"hostProcess": true}}}, nil)),
			prefix + `Pod "web": refused by the render policy: spec: ` + violates + `host namespaces (hostNetwork=true), hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true) in namespace "tenant"`},
		{"privileged", workload("Deployment", nil, podSpec(nil, map[string]any{"securityContext": map[string]any{"privileged": true}})),
			prefix + `Deployment "web": refused by the render policy: spec.template.spec: ` + violates + `privileged (container "app" must not set securityContext.privileged=true) in namespace "tenant"`},
		{"hostPath", workload("Pod", nil, podSpec(map[string]any{"volumes": []any{map[string]any{"name": "root", "hostPath": map[string]any{"path": "/"}}}}, nil)),
			prefix + `Pod "web": refused by the render policy: spec: ` + violates + `hostPath volumes (volume "root") in namespace "tenant"`},
		{"Service with externalIPs", obj("v1", "Service", "intercept", map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(53)}}, "externalIPs": []any{"8.8.8.8"}}}),
			prefix + `Service "intercept": refused by the render policy: spec.externalIPs: external IPs are not allowed (they take the traffic every pod of the cluster sends to 8.8.8.8: CVE-2020-8554) in namespace "tenant"`},
		{"a custom kind's pod template", obj("argoproj.io/v1alpha1", "Rollout", "web", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": podSpec(map[string]any{"securityContext": map[string]any{"sysctls": []any{map[string]any{"name": "kernel.msgmax", "value": "1"}}}}, nil)}}}),
			prefix + `Rollout "web": refused by the render policy: spec.template.spec: ` + violates + `forbidden sysctls (kernel.msgmax) in namespace "tenant"`},
		{"a Service without externalIPs", obj("v1", "Service", "plain", map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(53)}}}}), ""},
		{"a plain CronJob", workload("CronJob", nil, podSpec(nil, nil)), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := check(nil, c.obj); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestPodSecurityLevels sets the level of a namespace in the policy: restricted refuses the
// root pod baseline admits, privileged admits what baseline refuses; a namespace without
// a level of its own has the policy's.
func TestPodSecurityLevels(t *testing.T) {
	p, err := Parse("policy.yaml", []byte(`apiVersion: calaf.io/v1alpha1
kind: RenderPolicy
namespaces:
  tenant:
    podSecurity: restricted
  infra:
    podSecurity: privileged
`))
	if err != nil {
		t.Fatal(err)
	}
	root := workload("Deployment", nil, podSpec(nil, nil))
	privileged := workload("Deployment", nil, podSpec(map[string]any{"hostNetwork": true}, map[string]any{"securityContext": map[string]any{"privileged": true}}))
	const restricted = `service.yaml: node "n": Deployment "web": refused by the render policy: spec.template.spec: violates PodSecurity "restricted:latest": ` +
		`allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), ` +
		`runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost") in namespace "tenant"`
	for _, c := range []struct {
		namespace string
		obj       *unstructured.Unstructured
		want      string
	}{
		{"tenant", root, text.Elide(restricted, tosca.MaxDiagnosticLength)}, // as calaf prints it: one line of a bounded length
		{"tenant", workload("Deployment", nil, restrictedSpec()), ""},
		{"infra", privileged, ""},
		{"other", root, ""},
		{"other", privileged, `violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), privileged (container "app" must not set securityContext.privileged=true) in namespace "other"`},
	} {
		got := checkIn(p, c.namespace, c.obj)
		if c.want == "" && got != "" || c.want != "" && !strings.HasSuffix(got, c.want) {
			t.Errorf("%s, %s: got  %s\nwant %s", c.namespace, c.obj.GetName(), got, c.want)
		}
	}

	p, err = Parse("policy.yaml", []byte("apiVersion: calaf.io/v1alpha1\nkind: RenderPolicy\npodSecurity: restricted:v1.30\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := checkIn(p, "any", root); !strings.Contains(got, `violates PodSecurity "restricted:v1.30": `) {
		t.Errorf("the policy's own level: got %s", got)
	}
}

// TestPodSecurityExceptions lifts the baseline checks a namespace's exceptions name, and
// only those.
func TestPodSecurityExceptions(t *testing.T) {
	p, err := Parse("policy.yaml", []byte(`apiVersion: calaf.io/v1alpha1
kind: RenderPolicy
namespaces:
  tenant:
    hostNamespaces: true
    hostPaths: [/var/log]
    externalIPs: true
`))
	if err != nil {
		t.Fatal(err)
	}
	admitted := []*unstructured.Unstructured{
		workload("Deployment", nil, podSpec(map[string]any{"hostNetwork": true, "volumes": []any{map[string]any{"name": "logs", "hostPath": map[string]any{"path": "/var/log/app"}}}},
			map[string]any{"ports": []any{map[string]any{"containerPort": int64(80), "hostPort": int64(80)}}})),
		obj("v1", "Service", "intercept", map[string]any{"spec": map[string]any{"externalIPs": []any{"192.0.2.1"}}}),
	}
	for _, o := range admitted {
		if got := check(p, o); got != "" {
			t.Errorf("%s refused: %s", o.GetKind(), got)
		}
	}
	refused := map[*unstructured.Unstructured]string{
		workload("Deployment", nil, podSpec(map[string]any{"volumes": []any{map[string]any{"name": "etc", "hostPath": map[string]any{"path": "/etc"}}}}, nil)): `spec.template.spec.volumes[0].hostPath: hostPath volumes are not allowed (path "/etc") in namespace "tenant"`,
		workload("Deployment", nil, podSpec(map[string]any{"hostNetwork": true}, map[string]any{"securityContext": map[string]any{"privileged": true}})):       `spec.template.spec: violates PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true) in namespace "tenant"`,
	}
	for o, want := range refused {
		if got := check(p, o); !strings.HasSuffix(got, want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

// TestPodSecurityFileErrors refuses a level Kubernetes does not know.
func TestPodSecurityFileErrors(t *testing.T) {
	for text, want := range map[string]string{
		"apiVersion: calaf.io/v1alpha1\nkind: RenderPolicy\npodSecurity: strict\n":                        `podSecurity "strict": must be one of privileged, baseline, restricted`,
		"apiVersion: calaf.io/v1alpha1\nkind: RenderPolicy\nnamespaces: {a: {podSecurity: baseline:2}}\n": `namespaces.a.podSecurity "baseline:2": must be "latest" or "v1.x"`,
	} {
		if _, err := Parse("p.yaml", []byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", text, err, want)
		}
	}
}

// checkIn runs a policy on one object for a Service in namespace.
func checkIn(p *Policy, namespace string, o *unstructured.Unstructured) string {
	err := p.Check("service.yaml", namespace, []*render.Node{{Name: "n", Objects: []*unstructured.Unstructured{o}}}, Offline)
	var lines []string
	for _, d := range tosca.DiagnosticsOf(err) {
		lines = append(lines, d.String())
	}
	return strings.Join(lines, "\n")
}

// BenchmarkPodSecurity measures the check of a Deployment, as every reconcile makes it.
func BenchmarkPodSecurity(b *testing.B) {
	nodes := []*render.Node{{Name: "n", Objects: []*unstructured.Unstructured{workload("Deployment", nil, restrictedSpec())}}}
	p := &Policy{}
	for b.Loop() {
		if err := p.Check("service.yaml", "tenant", nodes, Offline); err != nil {
			b.Fatal(err)
		}
	}
}
