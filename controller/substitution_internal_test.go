package controller

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/redact"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// A substituted node's attributes are its child's outputs and, for its attribute
// mappings, attributes of the child's nodes: read from the child's status as it is.
func TestChildAttributes(t *testing.T) {
	parent := &v1alpha1.Service{}
	parent.Name, parent.Namespace, parent.UID = "core", "tenant", "uid-1"
	node := &render.Node{Name: "db", Type: "example.nodes.Database", Properties: map[string]any{"name": "orders", "size": int64(3), "unmapped": "x"}}
	sub := tosca.Substitute{File: "database.yaml", NodeType: "example.nodes.Database", Inputs: map[string]string{"name": "name", "size": "replicas"},
		Outputs: []string{"url"}, Attributes: map[string][2]string{"leader": {"postgres", "pod_ip"}}}
	s := &scope{Service: parent}
	child, err := (&ServiceReconciler{}).childNode(s, node, sub)
	if err != nil {
		t.Fatal(err)
	}
	live := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
		"outputs": map[string]any{"url": "postgres://orders:5432"},
		"nodes": []any{
			map[string]any{"name": "schema", "attributes": map[string]any{"pod_ip": "10.0.0.1"}},
			map[string]any{"name": "postgres", "attributes": map[string]any{"pod_ip": "10.0.0.9"}},
		},
	}}}
	got := child.Observe(map[string]*unstructured.Unstructured{"Service/core-db": live})
	if got["url"] != "postgres://orders:5432" || got["leader"] != "10.0.0.9" || len(got) != 2 {
		t.Errorf("attributes = %v", got)
	}
	spec, _, _ := unstructured.NestedMap(child.Objects[0].Object, "spec", "inputs")
	if len(spec) != 2 || spec["name"] != "orders" || spec["replicas"] != int64(3) {
		t.Errorf("inputs = %v: the mapped properties, by the inputs they feed", spec)
	}
}

// A placement policy may place only a node some template substitutes: placing another is
// the package's mistake, said with the node and the policy.
func TestPlacementOfANodeNotSubstituted(t *testing.T) {
	placed := &render.Node{Name: "app", Type: "calaf.nodes.ConfigMap", Placement: &render.Placement{Policy: "app_at_site_a", KubeconfigSecret: "site-a"}}
	db := &render.Node{Name: "db", Type: "example.nodes.Database", Placement: &render.Placement{Policy: "db_at_site_a", KubeconfigSecret: "site-a"}}
	subs := []tosca.Substitute{{File: "database.yaml", NodeType: "example.nodes.Database"}}
	if err := misplaced(&render.Result{Nodes: []*render.Node{db}}, subs); err != nil {
		t.Errorf("a substituted node placed: %v", err)
	}
	err := misplaced(&render.Result{Nodes: []*render.Node{db, placed}}, subs)
	var pe *phaseError
	if !errors.As(err, &pe) || pe.reason != v1alpha1.ReasonInvalidPackage || !strings.Contains(err.Error(), `node app: placed by policy "app_at_site_a"`) {
		t.Errorf("a node no template substitutes, placed: %v", err)
	}
}

// A property that feeds the child's inputs with a value read from one of the parent's
// inputsFrom Secrets is refused: the child's inputs are in its spec, for all to read. A
// property that feeds nothing is not the child's business.
func TestChildInputsFromASecretRefused(t *testing.T) {
	parent := &v1alpha1.Service{}
	parent.Name, parent.Namespace = "core", "tenant"
	secrets := redact.New()
	secrets.Add("s3cret-Pa55word")
	sub := tosca.Substitute{File: "database.yaml", NodeType: "example.nodes.Database", Inputs: map[string]string{"name": "name", "password": "password"}}
	s := &scope{Service: parent, Redact: secrets}
	unfed := &render.Node{Name: "db", Type: sub.NodeType, Properties: map[string]any{"name": "orders", "note": "s3cret-Pa55word"}}
	if _, err := (&ServiceReconciler{}).childNode(s, unfed, sub); err != nil {
		t.Errorf("a secret in a property that feeds no input: %v", err)
	}
	fed := &render.Node{Name: "db", Type: sub.NodeType, Properties: map[string]any{"name": "orders", "password": "s3cret-Pa55word"}}
	_, err := (&ServiceReconciler{}).childNode(s, fed, sub)
	var pe *phaseError
	if !errors.As(err, &pe) || pe.reason != v1alpha1.ReasonInvalidInputs || !strings.Contains(err.Error(), "property password") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a secret fed to the child's inputs: %v", err)
	}
}
