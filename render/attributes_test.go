package render

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestObserve(t *testing.T) {
	service := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "demo-n2"},
		"spec": map[string]any{
			"clusterIP": "10.96.0.7",
			"ports": []any{
				map[string]any{"name": "n2", "port": int64(38412), "nodePort": int64(30412)},
				map[string]any{"name": "metrics", "port": int64(9090), "nodePort": int64(30090)},
				map[string]any{"name": "internal", "port": int64(8080)},
			},
		},
		"status": map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"hostname": "lb.example.com"}}}},
	}}
	deployment := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "demo-web"},
		"spec":   map[string]any{"replicas": int64(3)},
		"status": map[string]any{"replicas": int64(3), "readyReplicas": int64(0), "conditions": nil},
	}}
	live := map[string]*unstructured.Unstructured{"Service/demo-n2": service, "Deployment/demo-web": deployment}

	cases := []struct {
		name   string
		source AttributeSource
		want   any // nil: the attribute is omitted
	}{
		{"field", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec.clusterIP"}}, "10.96.0.7"},
		{"zero is a value, not missing", AttributeSource{Object: "Deployment/demo-web", Paths: []string{"status.readyReplicas"}, Default: int64(5)}, int64(0)},
		{"list index", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec.ports[1].port"}}, int64(9090)},
		{"list item by field", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec.ports[name=metrics].nodePort"}}, int64(30090)},
		{"no item with that field", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec.ports[name=gone].port"}}, nil},
		{"index past the end", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec.ports[7].port"}}, nil},
		{"first path that is set", AttributeSource{Object: "Service/demo-n2", Paths: []string{"status.loadBalancer.ingress[0].ip", "status.loadBalancer.ingress[0].hostname"}}, "lb.example.com"},
		{"missing field, default", AttributeSource{Object: "Deployment/demo-web", Paths: []string{"status.updatedReplicas"}, Default: int64(0)}, int64(0)},
		{"missing field, no default", AttributeSource{Object: "Deployment/demo-web", Paths: []string{"status.updatedReplicas"}}, nil},
		{"null field counts as missing", AttributeSource{Object: "Deployment/demo-web", Paths: []string{"status.conditions"}, Default: "none"}, "none"},
		{"index out of range", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec.ports[3].port"}}, nil},
		{"path through a scalar", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec.clusterIP.address"}}, nil},
		{"index on a map", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec[0]"}}, nil},
		{"malformed path", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec.ports[x]"}}, nil},
		{"missing object, even with a default", AttributeSource{Object: "Service/other", Paths: []string{"spec.clusterIP"}, Default: "x"}, nil},
		{"keyBy", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec.ports"}, KeyBy: "name", ValueOf: "nodePort"},
			map[string]any{"n2": int64(30412), "metrics": int64(30090)}},
		{"keyBy on a missing list, default", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec.externalIPs"}, KeyBy: "name", ValueOf: "ip", Default: []any{}},
			map[string]any{}},
		{"keyBy on a scalar", AttributeSource{Object: "Service/demo-n2", Paths: []string{"spec.clusterIP"}, KeyBy: "name", ValueOf: "port"}, map[string]any{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := &Node{Name: "n", Attributes: map[string]AttributeSource{"a": c.source}}
			got := node.Observe(live)
			value, ok := got["a"]
			if c.want == nil {
				if ok {
					t.Errorf("observed %#v, want the attribute omitted", value)
				}
				return
			}
			if !ok {
				t.Fatalf("attribute omitted, want %#v", c.want)
			}
			if !reflect.DeepEqual(value, c.want) {
				t.Errorf("observed %#v, want %#v", value, c.want)
			}
		})
	}
}

// TestObserveSeveral reads several attributes of one node at once.
func TestObserveSeveral(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"phase": "Bound"}}}
	node := &Node{Attributes: map[string]AttributeSource{
		"phase":    {Object: "PersistentVolumeClaim/x", Paths: []string{"status.phase"}},
		"capacity": {Object: "PersistentVolumeClaim/x", Paths: []string{"status.capacity.storage"}},
		"other":    {Object: "ConfigMap/y", Paths: []string{"data"}},
	}}
	got := node.Observe(map[string]*unstructured.Unstructured{"PersistentVolumeClaim/x": obj, "ConfigMap/y": nil})
	if want := map[string]any{"phase": "Bound"}; !reflect.DeepEqual(got, want) {
		t.Errorf("observed %#v, want %#v", got, want)
	}
}
