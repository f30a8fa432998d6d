package cmmode_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/cmmode"
	"calaf.io/calaf/deploy/crd"
)

// refusal is a spec the CRD refuses: on create, or (before set) as an update of a stored
// object whose status.operationState is state.
type refusal struct {
	rule   string // the message of the CEL rule it breaks ("" for another check of the schema)
	kind   string
	before string
	state  v1alpha1.OperationState
	spec   string
}

const (
	validSource = "source: {url: https://packages.example/p.csar}\n"
	scaleOut    = "serviceName: svc\ntype: SCALE\nscale: {aspectId: a}\n"
)

// refusals break every CEL rule of the Service's and the Operation's CRDs (TestRulesCovered
// checks that none is missing), and some OpenAPI checks.
func refusals() []refusal {
	return []refusal{
		{rule: "exactly one of url, upload, git, oci and vnfPackage must be set", kind: "Service",
			spec: "source: {url: https://packages.example/p.csar, oci: {url: oci://registry.example/p}}\n"},
		{rule: "set at most one of branch, tag and commit", kind: "Service",
			spec: "source: {git: {url: https://git.example/p.git, ref: {branch: main, tag: v1}}}\n"},
		{rule: "a CUSTOM operation names a node and an operation", kind: "Operation",
			spec: "serviceName: svc\ntype: CUSTOM\nnode: web\n"},
		{rule: "node and operation belong to CUSTOM operations", kind: "Operation",
			spec: scaleOut + "node: web\n"},
		{rule: "the request must be the member of its type", kind: "Operation",
			spec: "serviceName: svc\ntype: SCALE\nheal: {}\n"},
		{rule: "only INSTANTIATE, SCALE, SCALE_TO_LEVEL, CHANGE_FLAVOUR, CHANGE_PACKAGE, MODIFY and OPERATE occurrences can be rolled back", kind: "Operation",
			spec: "serviceName: svc\ntype: HEAL\nheal: {}\nresolution: Rollback\n"},
		{rule: "set pods or nodes, not both", kind: "Operation",
			spec: "serviceName: svc\ntype: HEAL\nheal: {pods: [a], nodes: [b]}\n"},
		{rule: "set either instantiationLevelId or scaleInfo", kind: "Operation",
			spec: "serviceName: svc\ntype: SCALE_TO_LEVEL\nscaleToLevel: {}\n"},
		{rule: "exactly one of url, upload, git, oci and vnfPackage must be set", kind: "Operation",
			spec: "serviceName: svc\ntype: CHANGE_PACKAGE\nchangePackage: {source: {}}\n"},
		{rule: "set at most one of branch, tag and commit", kind: "Operation",
			spec: "serviceName: svc\ntype: CHANGE_PACKAGE\nchangePackage: {source: {git: {url: https://git.example/p.git, ref: {tag: v1, commit: abc}}}}\n"},
		{rule: "the request of an Operation cannot be changed", kind: "Operation",
			before: scaleOut, state: v1alpha1.OperationState("PROCESSING"), spec: "serviceName: other\ntype: SCALE\nscale: {aspectId: a}\n"},
		{rule: "a resolution cannot be changed", kind: "Operation",
			before: scaleOut + "resolution: Fail\n", state: v1alpha1.OperationState("FAILED_TEMP"), spec: scaleOut + "resolution: Rollback\n"},
		{rule: "rollback and fail are allowed only while the occurrence is FAILED_TEMP", kind: "Operation",
			before: scaleOut, state: v1alpha1.OperationState("PROCESSING"), spec: scaleOut + "resolution: Fail\n"},
		{rule: "retry is allowed only while the occurrence is FAILED_TEMP, one retry at a time", kind: "Operation",
			before: scaleOut, state: v1alpha1.OperationState("FAILED_TEMP"), spec: scaleOut + "retries: 2\n"},
		{rule: "a cancel cannot be changed or withdrawn", kind: "Operation",
			before: scaleOut + "cancel: GRACEFUL\n", state: v1alpha1.OperationState("PROCESSING"), spec: scaleOut + "cancel: FORCEFUL\n"},
		{rule: "cancel is allowed only while the occurrence is STARTING, PROCESSING or ROLLING_BACK", kind: "Operation",
			before: scaleOut, state: v1alpha1.OperationState("COMPLETED"), spec: scaleOut + "cancel: GRACEFUL\n"},
		// Checks of the OpenAPI schema, and fields the schema does not know.
		{kind: "Service", spec: "interval: 10m\n"},
		{kind: "Operation", spec: "serviceName: svc\ntype: EXPLODE\n"},
		{kind: "Service", spec: validSource + "suspend: maybe\n"},
		{kind: "Service", spec: validSource + "colour: blue\n"},
	}
}

// Every CEL rule of the CRDs a user's spec can break is broken by a row of refusals (the
// status's rules guard what only the operator writes).
func TestRulesCovered(t *testing.T) {
	covered := map[string]bool{}
	for _, r := range refusals() {
		covered[r.kind+": "+r.rule] = true
	}
	for kind, file := range map[string]string{"Service": "calaf.io_services.yaml", "Operation": "calaf.io_operations.yaml"} {
		data, err := fs.ReadFile(crd.Files(), file)
		if err != nil {
			t.Fatal(err)
		}
		var def struct {
			Spec struct {
				Versions []struct {
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					} `json:"schema"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &def); err != nil {
			t.Fatal(err)
		}
		root := def.Spec.Versions[0].Schema.OpenAPIV3Schema
		for _, rule := range celRules(root, "") {
			if strings.HasPrefix(rule.path, ".status") {
				continue
			}
			found := false
			for key := range covered {
				if key != kind+": " && strings.HasPrefix(kind+": "+rule.message, key) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s%s: no row of refusals breaks the rule %q", kind, rule.path, rule.message)
			}
		}
	}
}

type celRule struct{ path, message string }

// celRules lists the x-kubernetes-validations of a schema and its children.
func celRules(s map[string]any, path string) []celRule {
	var out []celRule
	rules, _ := s["x-kubernetes-validations"].([]any)
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		message, _ := rule["message"].(string)
		out = append(out, celRule{path: path, message: message})
	}
	properties, _ := s["properties"].(map[string]any)
	for name, child := range properties {
		if c, ok := child.(map[string]any); ok {
			out = append(out, celRules(c, path+"."+name)...)
		}
	}
	for _, key := range []string{"items", "additionalProperties"} {
		if c, ok := s[key].(map[string]any); ok {
			out = append(out, celRules(c, path+"[]")...)
		}
	}
	return out
}

// Each refusal is refused in ConfigMap mode — through its client (an update or create by
// the operator) and by the admission of a ConfigMap written by hand — with the very error
// the API server gives for the custom resource.
func TestRefusedAsTheAPIServerRefuses(t *testing.T) {
	ns := newNamespace(t)
	for i, r := range refusals() {
		name := strings.ToLower(r.kind) + "-" + string(rune('a'+i))
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			want := crError(t, ns, name, r)
			g.Expect(want).NotTo(BeEmpty(), "the API server accepts %s", r.spec)
			if r.rule != "" {
				g.Expect(want).To(ContainSubstring(r.rule))
			}
			g.Expect(admissionRefusal(t, ns, name, r)).To(Equal(want), "the admission of a ConfigMap")
			if r.before != "" {
				g.Expect(clientRefusal(t, ns, name, r)).To(Equal(want), "an update through ConfigMap mode's client")
			}
		})
	}
}

// crError is the API server's error for r's custom resource.
func crError(t *testing.T, ns, name string, r refusal) string {
	t.Helper()
	ctx := context.Background()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(v1alpha1.GroupVersion.String())
	obj.SetKind(r.kind)
	obj.SetNamespace(ns)
	obj.SetName(name)
	if r.before == "" {
		obj.Object["spec"] = specOf(t, r.spec)
		return errText(env.client.Create(ctx, obj, client.FieldValidation("Strict")))
	}
	obj.Object["spec"] = specOf(t, r.before)
	if err := env.client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	obj.Object["status"] = map[string]any{"operationState": string(r.state)}
	if err := env.client.Status().Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	obj.Object["spec"] = specOf(t, r.spec)
	return errText(env.client.Update(ctx, obj, client.FieldValidation("Strict")))
}

// admissionRefusal writes r's spec into a ConfigMap as a user would, and returns why
// its admission refused it (after admitting r.before, with r.state, when set).
func admissionRefusal(t *testing.T, ns, name string, r refusal) string {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{cmmode.LabelKind: r.kind, cmmode.LabelVersion: "v1alpha1"}}}
	cm.Data = map[string]string{cmmode.KeySpec: r.spec}
	if r.before != "" {
		cm.Data[cmmode.KeySpec] = r.before
	}
	if err := env.client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if r.before != "" {
		if refused, err := env.store.Admit(ctx, cm); err != nil || refused != nil {
			t.Fatalf("before: refused %v, error %v", refused, err)
		}
		op := &v1alpha1.Operation{}
		if err := env.cm.Get(ctx, client.ObjectKeyFromObject(cm), op); err != nil {
			t.Fatal(err)
		}
		op.Status.OperationState = r.state
		if err := env.cm.Status().Update(ctx, op); err != nil {
			t.Fatal(err)
		}
		cm.Data[cmmode.KeySpec] = r.spec
		if err := env.client.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	refused, err := env.store.Admit(ctx, cm)
	if err != nil {
		t.Fatal(err)
	}
	if r.before != "" {
		// What the reconcilers see is still the spec admitted before.
		op := &v1alpha1.Operation{}
		if err := env.cm.Get(ctx, client.ObjectKeyFromObject(cm), op); err != nil {
			t.Fatal(err)
		}
		if op.Generation != 1 || op.Spec.ServiceName != "svc" {
			t.Errorf("after a refused update: generation %d, serviceName %q; want the admitted spec (1, svc)", op.Generation, op.Spec.ServiceName)
		}
	}
	return errText(refused)
}

// clientRefusal updates the object stored by admissionRefusal (r.before) with r.spec
// through ConfigMap mode's client, as the operator would.
func clientRefusal(t *testing.T, ns, name string, r refusal) string {
	t.Helper()
	ctx := context.Background()
	op := &v1alpha1.Operation{}
	if err := env.cm.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, op); err != nil {
		t.Fatal(err)
	}
	spec := v1alpha1.OperationSpec{}
	if err := yaml.UnmarshalStrict([]byte(r.spec), &spec); err != nil {
		t.Fatal(err)
	}
	op.Spec = spec
	return errText(env.cm.Update(ctx, op))
}

func specOf(t *testing.T, text string) map[string]any {
	t.Helper()
	spec := map[string]any{}
	if err := yaml.Unmarshal([]byte(text), &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
