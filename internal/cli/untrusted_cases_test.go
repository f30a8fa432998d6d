package cli

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"calaf.io/calaf/test/hostile"
)

// Classes of untrusted input.
const (
	classIsolation  = "isolation"
	classPolicy     = "policy"
	classValidation = "validation"
	classArchive    = "archive"
	classInputs     = "inputs"
)

// aliasExpansion anchors a 4 MB string and refers to it 300 times: few alias nodes, a
// gigabyte once expanded.
func aliasExpansion() string {
	var b strings.Builder
	b.WriteString(strings.Replace(serviceYAML("", "", ""), "metadata:\n", "metadata:\n  big: &big \""+strings.Repeat("x", 4<<20)+"\"\n", 1))
	b.WriteString("    copies:\n      type: calaf.nodes.ConfigMap\n      properties:\n        data:\n")
	for i := range 300 {
		fmt.Fprintf(&b, "          k%d: *big\n", i)
	}
	return b.String()
}

// pollution is a package whose node "evil" pollutes Object.prototype with a
// serviceAccountName and a command — in its renderer, or in a TOSCA function evaluated for
// one of its properties (inFunction) — before the Deployment "web" and the node "zprobe"
// render; zprobe's renderer fails, saying what it sees of the pollution.
func pollution(inFunction bool) string {
	const pollute = "Object.prototype.serviceAccountName = 'cluster-admin-sa'; Object.prototype.command = ['sh', '-c', 'steal'];"
	function, renderer, property := "exports.evaluate = function () { return 'x'; };", pollute, ""
	if inFunction {
		function, renderer, property = "exports.evaluate = function () { "+pollute+" return 'x'; };", "", "\n      properties: { label: { pollute: [] } }"
	}
	return `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:tosca.function.pollute: "` + function + `"
  puccini.scriptlet:evil.render: "exports.render = function () { ` + renderer + ` return []; };"
  puccini.scriptlet:probe.render: "exports.render = function () { throw 'sees serviceAccountName ' + ({}).serviceAccountName + ', command ' + ({}).command; };"
imports:
- ` + profileImport + `
node_types:
  x.Evil:
    derived_from: calaf.nodes.Root
    metadata: { calaf.render: evil.render }
    properties: { label: { type: string, required: false } }
  x.Probe:
    derived_from: calaf.nodes.Root
    metadata: { calaf.render: probe.render }
topology_template:
  node_templates:
    evil:
      type: x.Evil` + property + `
    web:
      type: calaf.nodes.Deployment
      properties: { image: busybox:1.36 }
    zprobe:
      type: x.Probe
`
}

// deploymentWith is a renderer returning a Deployment whose pod spec is extended by the
// JavaScript object literal spec and its container by container.
func deploymentWith(spec, container string) string {
	return fmt.Sprintf(`[{ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' },
  spec: { selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } },
    spec: Object.assign({ containers: [Object.assign({ name: 'app', image: 'busybox:1.36' }, %s)] }, %s) } } }]`, container, spec)
}

// configMap is a renderer returning a ConfigMap of the given JavaScript fields.
func configMap(fields string) string {
	return "[Object.assign({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }, " + fields + ")]"
}

// thing prefixes the diagnostics about the vendor node of renderer's packages.
const thing = `service.yaml: node "thing": `

// untrustedCases are the cases of TestUntrustedInputs, class by class.
func untrustedCases() []untrustedCase {
	return slices.Concat(isolationCases(), policyCases(), validationCases(), archiveCases(), inputCases())
}

func isolationCases() []untrustedCase {
	return []untrustedCase{
		{classIsolation, "Puccini's stack overflows (data type derivation cycle)", service(hostile.DerivationCycle),
			"service.yaml: compile of the package crashed: stack overflow in github.com/tliron/puccini/tosca/grammars/tosca_v2_0.(*DataType).GetInternalTypeName (a goroutine stack above 64 MiB: a cycle in the package's types or data?)"},
		// goja's string concatenation is slow: the memory limit, not the deadline, must end it.
		{classIsolation, "a scriptlet doubles a string", service(functionTemplate("exports.evaluate = function() { let s = 'x'; while (true) { s = s + s; } };"), "--script-timeout", "60s"),
			"service.yaml: render of the package exceeded 512 MiB of memory"},
		{classIsolation, "300 aliases of a 4 MB string", service(aliasExpansion()),
			"service.yaml: compile of the package exceeded 512 MiB of memory"},
		{classIsolation, "a renderer result escaping the plain copy (Symbol.toStringTag)",
			renderer("(function () { let o = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }; o[Symbol.toStringTag] = 'String'; o.valueOf = function () { return o; }; return [o]; })()"),
			thing + `ConfigMap "x": valueOf: a function is not data`},
		{classIsolation, "a renderer pollutes Object.prototype (serviceAccountName, command)", service(pollution(false)),
			`service.yaml: node "zprobe": renderer probe.render: sees serviceAccountName undefined, command undefined`},
		// Evaluation is one realm (functions see the whole topology): the pollution breaks
		// Puccini's own traversal there, and no renderer's realm gets it.
		{classIsolation, "a TOSCA function pollutes Object.prototype", service(pollution(true)),
			`service.yaml: a TOSCA function added serviceAccountName, command to Object.prototype: scriptlets may not change JavaScript's built-in prototypes`},
	}
}

func policyCases() []untrustedCase {
	return []untrustedCase{
		{classPolicy, "ClusterRoleBinding to cluster-admin", renderer("[{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'own' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' }, subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: 'default' }] }]"),
			thing + `ClusterRoleBinding "own": refused by the render policy: ClusterRoleBinding.rbac.authorization.k8s.io is on the denylist (RBAC that grants cluster roles)`},
		{classPolicy, "RoleBinding to cluster-admin", renderer("[{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'own' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' }, subjects: [{ kind: 'ServiceAccount', name: 'default' }] }]"),
			thing + `RoleBinding "own": refused by the render policy: a RoleBinding to a ClusterRole is on the denylist (RBAC that grants cluster roles): bind a Role of the namespace`},
		{classPolicy, "mutating webhook", renderer("[{ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name: 'hook' } }]"),
			thing + `MutatingWebhookConfiguration "hook": refused by the render policy: MutatingWebhookConfiguration.admissionregistration.k8s.io is on the denylist (admission webhooks and policies)`},
		{classPolicy, "a kube-system Namespace", renderer("[{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } }]"),
			thing + `Namespace "kube-system": refused by the render policy: cluster-scoped objects are not allowed (clusterScoped: false)`},
		{classPolicy, "the package's own calaf.io Service", renderer("[{ apiVersion: 'calaf.io/v1alpha1', kind: 'Service', metadata: { name: ctx.service.name } }]"),
			thing + `Service "demo": refused by the render policy: Service.calaf.io is on the denylist (Calaf's own kinds)`},
		{classPolicy, "the operator's state Secret", renderer("[{ apiVersion: 'v1', kind: 'Secret', metadata: { name: ctx.service.name + '.calaf-state' } }]"),
			thing + `Secret "demo.calaf-state": refused by the render policy: the name ends with .calaf-state, which names the operator's state of a Service (on the denylist)`},
		{classPolicy, "a privileged container", renderer(deploymentWith("{}", "{ securityContext: { privileged: true } }")),
			thing + `Deployment "web": refused by the render policy: spec.template.spec: violates PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true) in namespace "default"`},
		{classPolicy, "the host's network", renderer(deploymentWith("{ hostNetwork: true }", "{}")),
			thing + `Deployment "web": refused by the render policy: spec.template.spec: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true) in namespace "default"`},
		{classPolicy, "the host's root as a hostPath volume", renderer(deploymentWith("{ volumes: [{ name: 'root', hostPath: { path: '/' } }] }", "{}")),
			thing + `Deployment "web": refused by the render policy: spec.template.spec: violates PodSecurity "baseline:latest": hostPath volumes (volume "root") in namespace "default"`},
		{classPolicy, "an unconfined seccomp profile", renderer(deploymentWith("{ securityContext: { seccompProfile: { type: 'Unconfined' } } }", "{}")),
			thing + `Deployment "web": refused by the render policy: spec.template.spec: violates PodSecurity "baseline:latest": seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined") in namespace "default"`},
		{classPolicy, "a Service with external IPs", renderer("[{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'dns' }, spec: { ports: [{ port: 53 }], externalIPs: ['8.8.8.8'] } }]"),
			thing + `Service "dns": refused by the render policy: spec.externalIPs: external IPs are not allowed (they take the traffic every pod of the cluster sends to 8.8.8.8: CVE-2020-8554) in namespace "default"`},
	}
}

func validationCases() []untrustedCase {
	return []untrustedCase{
		{classValidation, "an invalid name", renderer("[{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'Bad_Name' } }]"),
			thing + `ConfigMap "Bad_Name": metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{classValidation, "an invalid label", renderer(configMap("{ metadata: { name: 'x', labels: { tier: 'front end' } } }")),
			thing + `ConfigMap "x": metadata.labels: Invalid value: "front end": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{classValidation, "an invalid annotation", renderer(configMap("{ metadata: { name: 'x', annotations: { 'bad key!': 'v' } } }")),
			thing + `ConfigMap "x": metadata.annotations: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{classValidation, "an invalid quantity", renderer(deploymentWith("{}", "{ resources: { limits: { cpu: '3 cpus' } } }")),
			thing + `Deployment "web": a field of the wrong type: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`},
		{classValidation, "an invalid port", renderer(deploymentWith("{}", "{ ports: [{ containerPort: 70000 }] }")),
			thing + `Deployment "web": spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`},
		{classValidation, "NaN", renderer(configMap("{ data: { ratio: NaN } }")),
			thing + `ConfigMap "x": data.ratio: NaN is not a JSON number`},
		{classValidation, "Infinity", renderer(configMap("{ data: { limit: 1 / 0 } }")),
			thing + `ConfigMap "x": data.limit: Infinity is not a JSON number`},
		{classValidation, "a function", renderer(configMap("{ data: { f: function () { return 1; } } }")),
			thing + `ConfigMap "x": data.f: a function is not data`},
		{classValidation, "a 20 MB ConfigMap", renderer(configMap("{ data: { blob: 'x'.repeat(20 << 20) } }")),
			thing + `ConfigMap "x": 20971820 bytes, more than the API server's limit of 1.5 MiB per object`},
		{classValidation, "17 ConfigMaps of 1 MB", renderer("Array.from({ length: 17 }, function (_, i) { return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'part-' + i }, data: { blob: 'x'.repeat(1000000) } }; })"),
			"service.yaml: the objects rendered take 17005192 bytes, more than the limit of 16 MiB per package"},
	}
}

// TestUntrustedCasesCover checks that every class has cases.
func TestUntrustedCasesCover(t *testing.T) {
	count := map[string]int{}
	for _, c := range untrustedCases() {
		count[c.class]++
	}
	for _, class := range []string{classIsolation, classPolicy, classValidation, classArchive, classInputs} {
		if count[class] < 3 {
			t.Errorf("class %s has %d cases", class, count[class])
		}
	}
}
