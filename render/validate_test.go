package render

import (
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/tosca"
)

// object builds an unstructured object of a kind, named, with the content given.
func object(apiVersion, kind, name string, content map[string]any) *unstructured.Unstructured {
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": "ns"}}
	for key, value := range content {
		obj[key] = value
	}
	return &unstructured.Unstructured{Object: obj}
}

func deployment(container map[string]any) *unstructured.Unstructured {
	base := map[string]any{"name": "app", "image": "busybox:1.36"}
	for key, value := range container {
		base[key] = value
	}
	return object("apps/v1", "Deployment", "web", map[string]any{"spec": map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": map[string]any{"containers": []any{base}}},
	}})
}

// TestValidateObjects checks each rule with the exact diagnostic calaf prints.
func TestValidateObjects(t *testing.T) {
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"valid deployment", deployment(nil), ""},
		{"name", object("v1", "ConfigMap", "Bad_Name", nil),
			`node "n": ConfigMap "Bad_Name": metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"Service name", object("v1", "Service", "1st", nil),
			`node "n": Service "1st": metadata.name: Invalid value: "1st": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`},
		{"label", object("v1", "ConfigMap", "x", map[string]any{"metadata": map[string]any{"name": "x", "namespace": "ns", "labels": map[string]any{"tier": "front end"}}}),
			`node "n": ConfigMap "x": metadata.labels: Invalid value: "front end": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{"annotation", object("v1", "ConfigMap", "x", map[string]any{"metadata": map[string]any{"name": "x", "namespace": "ns", "annotations": map[string]any{"bad key!": "v"}}}),
			`node "n": ConfigMap "x": metadata.annotations: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{"quantity", deployment(map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "3 cpus"}}}),
			`node "n": Deployment "web": a field of the wrong type: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`},
		{"port", deployment(map[string]any{"ports": []any{map[string]any{"containerPort": int64(70000)}}}),
			`node "n": Deployment "web": spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`},
		{"wrong type", object("apps/v1", "Deployment", "web", map[string]any{"spec": map[string]any{"replicas": "three"}}),
			`node "n": Deployment "web": spec.replicas: text where an integer is expected`},
		{"NaN", object("v1", "ConfigMap", "x", map[string]any{"data": map[string]any{"x": math.NaN()}}),
			`node "n": ConfigMap "x": data.x: NaN is not a JSON number`},
		{"Infinity", object("v1", "ConfigMap", "x", map[string]any{"data": map[string]any{"list": []any{math.Inf(1)}}}),
			`node "n": ConfigMap "x": data.list[0]: Infinity is not a JSON number`},
		{"function", object("v1", "ConfigMap", "x", map[string]any{"data": map[string]any{"f": func() {}}}),
			`node "n": ConfigMap "x": data.f: a function is not data`},
		{"too large", object("v1", "ConfigMap", "big", map[string]any{"data": map[string]any{"blob": strings.Repeat("x", 2<<20)}}),
			`node "n": ConfigMap "big": 2097252 bytes, more than the API server's limit of 1.5 MiB per object`},
		{"ConfigMap data", object("v1", "ConfigMap", "x", map[string]any{"data": map[string]any{"blob": strings.Repeat("x", 1100<<10)}}),
			`node "n": ConfigMap "x": data: Too long: may not be more than 1048576 bytes`},
		{"ConfigMap key", object("v1", "ConfigMap", "x", map[string]any{"data": map[string]any{"a/b": "v"}}),
			`node "n": ConfigMap "x": data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
		{"Secret base64", object("v1", "Secret", "x", map[string]any{"data": map[string]any{"k": "not base64!"}}),
			`node "n": Secret "x": a field of the wrong type: illegal base64 data at input byte 3`},
		{"env name", deployment(map[string]any{"env": []any{map[string]any{"name": "A=B", "value": "x"}}}),
			`node "n": Deployment "web": spec.template.spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`},
		{"container name", deployment(map[string]any{"name": "App"}),
			`node "n": Deployment "web": spec.template.spec.containers[0].name: Invalid value: "App": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"apiVersion of three parts", object("a/b/c/../../d", "ConfigMap", "x", nil),
			`node "n": ConfigMap "x": apiVersion "a/b/c/../../d": it is no version ("v1") nor group/version ("apps/v1")`},
		{"apiVersion without a group", object("/v1", "ConfigMap", "x", nil),
			`node "n": ConfigMap "x": apiVersion "/v1": it is no version ("v1") nor group/version ("apps/v1")`},
		{"kind", object("v1", "Config Map!", "x", nil),
			`node "n": Config Map! "x": kind "Config Map!": a kind is a word of letters and digits that starts with a letter (ConfigMap, StatefulSet)`},
		{"kind in lower case", object("apps/v1", "deployment", "x", nil),
			`node "n": deployment "x": kind "deployment": Kubernetes has no such kind in apps/v1 (Deployment?)`},
		{"core version", object("v2", "ConfigMap", "x", nil),
			`node "n": ConfigMap "x": apiVersion "v2": the core group of Kubernetes has the versions v1, not "v2"`},
		{"a kind of a group Kubernetes does not have", object("example.com/v1", "Widget", "x", nil), ""},
		{"Service port", object("v1", "Service", "web", map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(0)}}}}),
			`node "n": Service "web": spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateObjects("service.yaml", []*Node{{Name: "n", Objects: []*unstructured.Unstructured{c.obj}}})
			got := ""
			if err != nil {
				diags := tosca.DiagnosticsOf(err)
				if len(diags) != 1 {
					t.Fatalf("%d diagnostics: %v", len(diags), err)
				}
				if diags[0].File != "service.yaml" {
					t.Errorf("file %q", diags[0].File)
				}
				got = diags[0].Message
			}
			if got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestValidateRenderTotal refuses a render whose objects together exceed the limit.
func TestValidateRenderTotal(t *testing.T) {
	var objects []*unstructured.Unstructured
	for i := range 20 {
		objects = append(objects, object("v1", "ConfigMap", "part-"+string(rune('a'+i)), map[string]any{"binaryData": map[string]any{"b": strings.Repeat("AAAA", 250<<10)}}))
	}
	err := ValidateObjects("service.yaml", []*Node{{Name: "n", Objects: objects}})
	if err == nil || !strings.Contains(err.Error(), "more than the limit of 16 MiB per package") {
		t.Errorf("got %v", err)
	}
}

// TestValidateKindsOfThePackage checks the objects of a group that the package's own
// CustomResourceDefinition defines against its kinds and served versions.
func TestValidateKindsOfThePackage(t *testing.T) {
	crd := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com", map[string]any{"spec": map[string]any{
		"group": "example.com", "scope": "Namespaced", "names": map[string]any{"kind": "Widget", "plural": "widgets"},
		"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true}, map[string]any{"name": "v0", "served": false}},
	}})
	for _, c := range []struct {
		obj  *unstructured.Unstructured
		want string
	}{
		{object("example.com/v1", "Widget", "w", nil), ""},
		{object("example.com/v1", "Gadget", "g", nil), `node "n": Gadget "g": kind "Gadget": the package's CustomResourceDefinitions of example.com define Widget only`},
		{object("example.com/v0", "Widget", "w", nil), `node "n": Widget "w": apiVersion "example.com/v0": the package's CustomResourceDefinition serves Widget in v1 only`},
		{object("other.example.com/v9", "Anything", "a", nil), ""},
	} {
		err := ValidateObjects("service.yaml", []*Node{{Name: "n", Objects: []*unstructured.Unstructured{crd, c.obj}}})
		got := ""
		if err != nil {
			got = tosca.DiagnosticsOf(err)[0].Message
		}
		if got != c.want {
			t.Errorf("%s %s: got\n%s\nwant\n%s", c.obj.GetAPIVersion(), c.obj.GetKind(), got, c.want)
		}
	}
}
