// Package examples_test pins what Calaf renders from each example package (golden files
// under testdata/, rewritten with -update) and checks on a real kube-apiserver that the
// rendered objects are accepted (server-side dry-run apply).
package examples_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The Service every example is rendered for.
const (
	goldenService   = "golden"
	goldenNamespace = "calaf-examples"
)

// exampleNames lists the example packages: every directory here but testdata.
func exampleNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" {
			names = append(names, e.Name())
		}
	}
	if len(names) < 3 {
		t.Fatalf("found only %d examples: %v", len(names), names)
	}
	return names
}

// fixtures are test packages that are not examples: they cover what the examples leave out
// (every node type of the profile, its less common properties).
var fixtures = []string{"testdata/profile-types"}

// packageDirs lists the examples and the fixtures.
func packageDirs(t *testing.T) []string {
	return append(exampleNames(t), fixtures...)
}

// renderExample compiles an example (or fixture) directory with its default inputs and renders it for the golden
// Service, with live attribute values when attributes is not nil.
func renderExample(t *testing.T, name string, attributes map[string]map[string]any) *render.Result {
	t.Helper()
	pkg, err := tosca.Open(name, tosca.DefaultLimits())
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { pkg.Close() })
	ctx := context.Background()
	compiled, err := tosca.NewCompiler(1).Compile(ctx, pkg, nil)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	result, err := render.NewRenderer(1).Render(ctx, compiled, render.Options{Service: goldenService, Namespace: goldenNamespace, Attributes: attributes})
	if err != nil {
		t.Fatalf("render %s: %v", name, err)
	}
	return result
}

// TestGolden renders every example and compares the objects and the plan with the golden
// files. The plan file also pins the outputs and operation inputs once live attributes
// (from simulated cluster state read through each node's attribute mapping) are known.
func TestGolden(t *testing.T) {
	for _, dir := range packageDirs(t) {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			result := renderExample(t, dir, nil)
			checkInvariants(t, result)
			observed := observe(result)
			again := renderExample(t, dir, observed)

			compareGolden(t, filepath.Join("testdata", name+".objects.yaml"), objectsYAML(t, result))
			compareGolden(t, filepath.Join("testdata", name+".plan.yaml"), planYAML(t, result, observed, again))
		})
	}
}

// checkInvariants checks what must hold for every render, whatever the golden files say.
func checkInvariants(t *testing.T, result *render.Result) {
	t.Helper()
	position := map[string]int{}
	for i, node := range result.Nodes {
		position[node.Name] = i
	}
	count := 0
	for _, node := range result.Nodes {
		for _, dependency := range node.DependsOn {
			if position[dependency] >= position[node.Name] {
				t.Errorf("node %s comes before its dependency %s", node.Name, dependency)
			}
		}
		for _, obj := range node.Objects {
			count++
			labels := obj.GetLabels()
			if labels[v1alpha1.LabelService] != goldenService || labels[v1alpha1.LabelServiceNamespace] != goldenNamespace ||
				labels[v1alpha1.LabelNode] != render.LabelValue(node.Name) || labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByCalaf {
				t.Errorf("%s/%s of node %s is not labelled for its Service and node: %v", obj.GetKind(), obj.GetName(), node.Name, labels)
			}
			if obj.GetAnnotations()[v1alpha1.AnnotationNodeType] != node.Type {
				t.Errorf("%s/%s does not carry its node type", obj.GetKind(), obj.GetName())
			}
			if obj.GetNamespace() != goldenNamespace {
				t.Errorf("%s/%s is in namespace %q", obj.GetKind(), obj.GetName(), obj.GetNamespace())
			}
		}
		for attribute, source := range node.Attributes {
			if !hasObject(node, source.Object) {
				t.Errorf("attribute %s.%s reads %s, which the node does not render", node.Name, attribute, source.Object)
			}
		}
	}
	if count != len(result.Objects) {
		t.Errorf("result has %d objects, its nodes %d", len(result.Objects), count)
	}
}

func hasObject(node *render.Node, ref string) bool {
	for _, obj := range node.Objects {
		if obj.GetKind()+"/"+obj.GetName() == ref {
			return true
		}
	}
	return false
}

// observe simulates the cluster state of every rendered object — what the API server and
// the controllers would fill in — and reads the nodes' attributes from it.
func observe(result *render.Result) map[string]map[string]any {
	attributes := map[string]map[string]any{}
	serviceIndex := 0
	for _, node := range result.Nodes {
		live := map[string]*unstructured.Unstructured{}
		for _, obj := range node.Objects {
			obj = obj.DeepCopy()
			replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
			if !found {
				replicas = 1
			}
			switch obj.GetKind() {
			case "Service":
				serviceIndex++
				if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip == "" {
					_ = unstructured.SetNestedField(obj.Object, fmt.Sprintf("10.96.0.%d", 10+serviceIndex), "spec", "clusterIP")
				}
				ports, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ports")
				kind, _, _ := unstructured.NestedString(obj.Object, "spec", "type")
				if kind == "NodePort" || kind == "LoadBalancer" {
					for i := range ports {
						if _, set := ports[i].(map[string]any)["nodePort"]; !set {
							ports[i].(map[string]any)["nodePort"] = int64(30000 + 100*serviceIndex + i)
						}
					}
					_ = unstructured.SetNestedSlice(obj.Object, ports, "spec", "ports")
				}
				if kind == "LoadBalancer" {
					ingress := []any{map[string]any{"ip": fmt.Sprintf("192.0.2.%d", serviceIndex)}}
					_ = unstructured.SetNestedSlice(obj.Object, ingress, "status", "loadBalancer", "ingress")
				}
			case "Deployment", "StatefulSet":
				_ = unstructured.SetNestedField(obj.Object, replicas, "status", "replicas")
				_ = unstructured.SetNestedField(obj.Object, replicas, "status", "readyReplicas")
			case "DaemonSet":
				_ = unstructured.SetNestedField(obj.Object, int64(1), "status", "desiredNumberScheduled")
				_ = unstructured.SetNestedField(obj.Object, int64(1), "status", "numberReady")
			case "Job":
				_ = unstructured.SetNestedField(obj.Object, int64(1), "status", "succeeded")
			case "PersistentVolumeClaim":
				_ = unstructured.SetNestedField(obj.Object, "Bound", "status", "phase")
			case "PodDisruptionBudget":
				_ = unstructured.SetNestedField(obj.Object, int64(1), "status", "disruptionsAllowed")
			}
			live[obj.GetKind()+"/"+obj.GetName()] = obj
		}
		// Attributes that operations set (as the orchestration would) are simulated too.
		values := node.Observe(live)
		if node.Type == "mini5gc.nodes.SMF" {
			values["registration"] = "registered"
		}
		if len(values) > 0 {
			attributes[node.Name] = values
		}
	}
	return attributes
}

// objectsYAML prints the rendered objects in plan order, each preceded by its node.
func objectsYAML(t *testing.T, result *render.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, node := range result.Nodes {
		for _, obj := range node.Objects {
			data, err := yaml.Marshal(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "---\n# node: %s (%s)\n%s", node.Name, node.Type, data)
		}
	}
	return b.Bytes()
}

type planNode struct {
	Name          string                            `json:"name"`
	Type          string                            `json:"type"`
	Types         []string                          `json:"types"`
	Renderer      string                            `json:"renderer,omitempty"`
	DependsOn     []string                          `json:"dependsOn,omitempty"`
	Relationships []string                          `json:"relationships,omitempty"`
	Objects       []string                          `json:"objects,omitempty"`
	Attributes    map[string]render.AttributeSource `json:"attributes,omitempty"`
	Operations    []planOperation                   `json:"operations,omitempty"`
	Artifacts     map[string]planArtifact           `json:"artifacts,omitempty"`
}

type planOperation struct {
	Name           string         `json:"name"`
	InterfaceType  string         `json:"interfaceType,omitempty"`
	Implementation string         `json:"implementation"`
	Timeout        int64          `json:"timeout,omitempty"`
	Inputs         map[string]any `json:"inputs,omitempty"`
	InputsError    string         `json:"inputsError,omitempty"`
}

type planArtifact struct {
	Type       string         `json:"type"`
	File       string         `json:"file"`
	Properties map[string]any `json:"properties,omitempty"`
}

type observedPlan struct {
	Attributes   map[string]map[string]any  `json:"attributes"`
	Outputs      map[string]any             `json:"outputs"`
	OutputErrors map[string]string          `json:"outputErrors,omitempty"`
	Operations   map[string][]planOperation `json:"operations,omitempty"`
}

// planYAML prints the plan: the nodes in order, and the outputs before and after the live
// attributes were observed.
func planYAML(t *testing.T, result *render.Result, observed map[string]map[string]any, again *render.Result) []byte {
	t.Helper()
	plan := struct {
		Nodes        []planNode        `json:"nodes"`
		Outputs      map[string]any    `json:"outputs"`
		OutputErrors map[string]string `json:"outputErrors,omitempty"`
		Observed     observedPlan      `json:"observed"`
	}{Outputs: result.Outputs, OutputErrors: result.OutputErrors}
	for _, node := range result.Nodes {
		p := planNode{Name: node.Name, Type: node.Type, Types: node.Types, Renderer: node.Renderer, DependsOn: node.DependsOn, Attributes: node.Attributes, Operations: operations(node)}
		for _, r := range node.Relationships {
			p.Relationships = append(p.Relationships, fmt.Sprintf("%s → %s (%s)", r.Requirement, r.Target, r.Type))
		}
		for _, obj := range node.Objects {
			p.Objects = append(p.Objects, obj.GetKind()+"/"+obj.GetName())
		}
		for name, a := range node.Artifacts {
			if p.Artifacts == nil {
				p.Artifacts = map[string]planArtifact{}
			}
			p.Artifacts[name] = planArtifact{Type: a.Type, File: a.File, Properties: a.Properties}
		}
		plan.Nodes = append(plan.Nodes, p)
	}
	plan.Observed = observedPlan{Attributes: observed, Outputs: again.Outputs, OutputErrors: again.OutputErrors, Operations: map[string][]planOperation{}}
	for _, node := range again.Nodes {
		if ops := operations(node); len(ops) > 0 {
			plan.Observed.Operations[node.Name] = ops
		}
	}
	data, err := yaml.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func operations(node *render.Node) []planOperation {
	var ops []planOperation
	for _, op := range node.Operations {
		ops = append(ops, planOperation{Name: op.QualifiedName(), InterfaceType: op.InterfaceType, Implementation: op.Implementation,
			Timeout: op.Timeout, Inputs: op.Inputs, InputsError: op.InputsError})
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	return ops
}

// compareGolden compares got with the golden file, or rewrites it with -update.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./examples/ -run TestGolden -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the render (go test ./examples/ -run TestGolden -update rewrites it):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// lineDiff shows the first lines where two texts differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  golden: %s\n  render: %s\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
