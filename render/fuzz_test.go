package render

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/tosca"
)

// FuzzValidateObjects feeds the validation of rendered objects arbitrary JSON objects (as
// a renderer may return them): it must return nil or an *tosca.InvalidError whose every
// diagnostic is one line, never panic.
func FuzzValidateObjects(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"b"}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"busybox","ports":[{"containerPort":70000}],"resources":{"limits":{"cpu":"3 cpus"}}}]}}}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"Bad_Name"},"spec":{"ports":[{"port":"x"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","env":[{"name":"1bad"}],"volumeMounts":[{"name":"v","mountPath":"rel"}]}]}}`,
		`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","annotations":{"bad key!":"v"}},"spec":{}}`,
		`{"apiVersion":"vendor.io/v1","kind":"Thing","metadata":{"name":"t"},"spec":{"deep":[[[[1]]]]}}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"not base64!"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var object map[string]any
		if json.Unmarshal(data, &object) != nil || object == nil {
			return
		}
		node := &Node{Name: "fuzz", Objects: []*unstructured.Unstructured{{Object: object}}}
		err := ValidateObjects("service.yaml", []*Node{node})
		if err == nil {
			return
		}
		if !tosca.IsInvalid(err) {
			t.Fatalf("not an *InvalidError: %v", err)
		}
		for _, d := range tosca.DiagnosticsOf(err) {
			if strings.ContainsAny(d.String(), "\n\r") {
				t.Fatalf("a diagnostic of more than one line: %q", d.String())
			}
		}
	})
}
