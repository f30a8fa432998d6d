package render

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi"
	"calaf.io/calaf/tosca"
)

// Result is a rendered package: its objects, the plan of its node templates, and its
// outputs. Results are shared by the cache and must not be changed.
type Result struct {
	// Key identifies the compile and the options of this render.
	Key string
	// Objects lists every object, the nodes in plan order.
	Objects []*unstructured.Unstructured
	// Nodes lists the node templates in plan order: each after those it depends on.
	Nodes []*Node
	// Outputs are the evaluated outputs of the service template.
	Outputs map[string]any
	// OutputErrors says why an output could not be evaluated (yet), by output name;
	// typically it reads an attribute that has not been observed.
	OutputErrors map[string]string
	// OutputDefinitions are what the outputs declare besides their values (the inputs
	// they read, their metadata), by output name; nil when none declares anything.
	OutputDefinitions map[string]OutputDefinition
	// Warnings are what the compile and the render tolerated or adjusted, located.
	Warnings []tosca.Diagnostic
	// VNF describes the instance of an ETSI SOL001 VNF package (nil for other packages).
	VNF *etsi.VNF
	// Lifecycle is what lifecycle operations read: scaling aspects and their levels, the
	// nodes' hooks, the alert rules.
	Lifecycle *v1alpha1.LifecycleStatus
	// ReadsAttributes says that the render may have read live attribute values: the
	// package calls get_attribute or a function that may read them (mayReadAttributes),
	// or a renderer read a view's attributes. A render that did not is the same for any
	// attribute values, and is cached regardless of them.
	ReadsAttributes bool
}

// Node is the plan of one node template.
type Node struct {
	Name     string
	Type     string
	Types    []string
	Renderer string
	// Properties are the node template's evaluated properties (operations see them).
	Properties map[string]any
	// Objects are the node's objects, in the order its renderer returned them.
	Objects []*unstructured.Unstructured
	// DependsOn names the nodes that must be healthy before this one is applied.
	DependsOn     []string
	Relationships []Relationship
	// Attributes says where each attribute's live value is read from.
	Attributes map[string]AttributeSource
	Operations []Operation
	Artifacts  map[string]Artifact
	// Placement, set by a calaf.policies.Placement policy, says where the Service of a
	// substituted node template runs; nil: where the Service itself does.
	Placement *Placement `json:",omitempty"`
}

// Relationship is a resolved requirement of a node.
type Relationship struct {
	Requirement string
	Type        string
	Types       []string
	Target      string
}

// AttributeSource locates the live value of an attribute in one of the node's objects:
// the first of Paths that is set, or Default. With KeyBy, the path holds a list turned
// into a map from each item's KeyBy field to its ValueOf field.
type AttributeSource struct {
	Object  string   `json:"object"` // "Kind/name" of one of the node's objects
	Paths   []string `json:"paths"`
	KeyBy   string   `json:"keyBy,omitempty"`
	ValueOf string   `json:"valueOf,omitempty"`
	Default any      `json:"default,omitempty"`
}

// Operation is an interface operation of a node template with an implementation.
type Operation struct {
	Interface      string
	InterfaceType  string
	Name           string
	Implementation string
	// File is the package file that implements it, as the render resolved it (an
	// artifact's file, or the path Implementation names).
	File         string `json:",omitempty"`
	Dependencies []string
	// Timeout in seconds, as the template says; 0 or less means the default.
	Timeout int64
	// Inputs are the evaluated inputs of the interface and the operation. InputsError says
	// why they could not be evaluated yet (e.g. an attribute not observed yet).
	Inputs      map[string]any
	InputsError string
}

// QualifiedName returns "Interface.operation".
func (o Operation) QualifiedName() string {
	return o.Interface + "." + o.Name
}

// Artifact is an artifact of a node template. File is package-relative.
type Artifact struct {
	Type       string
	Types      []string
	File       string
	Repository string
	Properties map[string]any
}

// Node returns the plan of a node template by name.
func (r *Result) Node(name string) *Node {
	for _, node := range r.Nodes {
		if node.Name == name {
			return node
		}
	}
	return nil
}

// Artifact returns the artifact that implements an operation: an artifact of the node by
// that name, or else an artifact whose file is the implementation path.
func (n *Node) Artifact(implementation string) (string, Artifact, bool) {
	if artifact, ok := n.Artifacts[implementation]; ok {
		return implementation, artifact, true
	}
	for name, artifact := range n.Artifacts {
		if artifact.File == implementation {
			return name, artifact, true
		}
	}
	return "", Artifact{}, false
}

// orderingRelationships are the relationship types that make a node wait for its target.
var orderingRelationships = map[string]bool{
	"tosca::DependsOn": true, "tosca::HostedOn": true, "tosca::ConnectsTo": true,
	"tosca.relationships.DependsOn": true, "tosca.relationships.HostedOn": true, "tosca.relationships.ConnectsTo": true,
}

func orders(types []string) bool {
	for _, t := range types {
		if orderingRelationships[t] {
			return true
		}
	}
	return false
}

// sortNodes orders nodes so that each follows those it depends on (ties by name) and
// reports a dependency cycle as an invalid package.
func sortNodes(nodes []*Node) ([]*Node, error) {
	byName := make(map[string]*Node, len(nodes))
	for _, node := range nodes {
		byName[node.Name] = node
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var sorted []*Node
	var visit func(node *Node, path []string) error
	visit = func(node *Node, path []string) error {
		switch state[node.Name] {
		case done:
			return nil
		case visiting:
			return invalidf("dependency cycle: %s", strings.Join(append(path, node.Name), " → "))
		}
		state[node.Name] = visiting
		for _, dependency := range node.DependsOn {
			if err := visit(byName[dependency], append(path, node.Name)); err != nil {
				return err
			}
		}
		state[node.Name] = done
		sorted = append(sorted, node)
		return nil
	}
	names := make([]string, 0, len(nodes))
	for _, node := range nodes {
		names = append(names, node.Name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := visit(byName[name], nil); err != nil {
			return nil, err
		}
	}
	return sorted, nil
}

// ObjectID identifies an object as "namespace_name_group_kind", the inventory format of
// Flux, so IDs of different kinds never collide.
func ObjectID(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	return fmt.Sprintf("%s_%s_%s_%s", obj.GetNamespace(), obj.GetName(), gvk.Group, gvk.Kind)
}
