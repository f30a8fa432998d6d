package render

import (
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/tosca"
)

// clusterScopedKinds lists the built-in kinds that have no namespace, so that offline
// renders leave them unnamespaced. The operator corrects this with the API's RESTMapper.
var clusterScopedKinds = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "CustomResourceDefinition": true, "StorageClass": true,
	"PriorityClass": true, "MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"APIService": true, "IngressClass": true, "RuntimeClass": true, "CSIDriver": true,
	"CSINode": true, "VolumeAttachment": true, "ValidatingAdmissionPolicy": true,
	"ValidatingAdmissionPolicyBinding": true, "FlowSchema": true, "PriorityLevelConfiguration": true,
}

// IsClusterScoped tells whether a kind is one of the built-in cluster-scoped kinds.
func IsClusterScoped(kind string) bool {
	return clusterScopedKinds[kind]
}

// assemble turns the driver's raw result into a Result: objects validated, namespaced and
// labelled, nodes ordered by their dependencies.
func assemble(raw any, opts Options) (*Result, error) {
	data, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("driver returned %T", raw)
	}
	result := &Result{Outputs: asMap(data["outputs"]), OutputErrors: map[string]string{}}
	for name, message := range asMap(data["outputErrors"]) {
		result.OutputErrors[name] = asString(message)
	}
	seen := map[string]string{} // object ID → the node rendering it
	for _, item := range asList(data["nodes"]) {
		node, err := assembleNode(asMap(item), opts, seen)
		if err != nil {
			return nil, err
		}
		result.Nodes = append(result.Nodes, node)
	}
	sorted, err := sortNodes(result.Nodes)
	if err != nil {
		return nil, err
	}
	result.Nodes = sorted
	for _, node := range sorted {
		result.Objects = append(result.Objects, node.Objects...)
	}
	return result, nil
}

// assembleNode builds one node from the driver's result: its relationships and what it
// depends on, its objects (none rendered by another node too), attributes, artifacts and
// operations.
func assembleNode(n map[string]any, opts Options, seen map[string]string) (*Node, error) {
	node := &Node{
		Name:       asString(n["name"]),
		Type:       asString(n["type"]),
		Types:      asStrings(n["types"]),
		Renderer:   asString(n["renderer"]),
		Properties: asMap(n["properties"]),
		Attributes: map[string]AttributeSource{},
		Artifacts:  map[string]Artifact{},
	}
	addRelationships(node, asList(n["relationships"]))
	for i, o := range asList(n["objects"]) {
		obj, err := newObject(node, i, o, opts)
		if err != nil {
			return nil, err
		}
		id := ObjectID(obj)
		if other, dup := seen[id]; dup {
			return nil, invalidf("node %s renders %s, which node %s renders as well", tosca.Echo(node.Name), objectRef(obj), tosca.Echo(other))
		}
		seen[id] = node.Name
		node.Objects = append(node.Objects, obj)
	}
	for name, a := range asMap(n["attributes"]) {
		source, err := attributeSource(node, name, a)
		if err != nil {
			return nil, err
		}
		node.Attributes[name] = source
	}
	for name, a := range asMap(n["artifacts"]) {
		artifact := asMap(a)
		node.Artifacts[name] = Artifact{
			Type:       asString(artifact["type"]),
			Types:      asStrings(artifact["types"]),
			File:       asString(artifact["file"]),
			Repository: asString(artifact["repository"]),
			Properties: asMap(artifact["properties"]),
		}
	}
	node.Operations = operations(asList(n["operations"]))
	return node, nil
}

// addRelationships records a node's relationships; those that order it make it depend on
// their target.
func addRelationships(node *Node, raw []any) {
	for _, r := range raw {
		rel := asMap(r)
		relationship := Relationship{
			Requirement: asString(rel["requirement"]),
			Type:        asString(rel["type"]),
			Types:       asStrings(rel["types"]),
			Target:      asString(rel["target"]),
		}
		node.Relationships = append(node.Relationships, relationship)
		if orders(relationship.Types) && relationship.Target != node.Name && !slices.Contains(node.DependsOn, relationship.Target) {
			node.DependsOn = append(node.DependsOn, relationship.Target)
		}
	}
	sort.Strings(node.DependsOn)
}

// operations reads a node's operations, sorted by qualified name.
func operations(raw []any) []Operation {
	var ops []Operation
	for _, o := range raw {
		op := asMap(o)
		timeout, _ := op["timeout"].(int64)
		ops = append(ops, Operation{
			Interface:      asString(op["interface"]),
			InterfaceType:  asString(op["interfaceType"]),
			Name:           asString(op["name"]),
			Implementation: asString(op["implementation"]),
			Dependencies:   asStrings(op["dependencies"]),
			Timeout:        timeout,
			Inputs:         asMap(op["inputs"]),
			InputsError:    asString(op["inputsError"]),
		})
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].QualifiedName() < ops[j].QualifiedName() })
	return ops
}

// newObject validates one object a renderer returned, then namespaces and labels it.
func newObject(node *Node, index int, raw any, opts Options) (*unstructured.Unstructured, error) {
	content, ok := raw.(map[string]any)
	if !ok {
		return nil, invalidf("node %s: renderer %s returned objects[%d] as %s, not an object", tosca.Echo(node.Name), node.Renderer, index, describe(raw))
	}
	obj := &unstructured.Unstructured{Object: content}
	if obj.GetAPIVersion() == "" || obj.GetKind() == "" || obj.GetName() == "" {
		return nil, invalidf("node %s: renderer %s returned objects[%d] without apiVersion, kind and metadata.name (text each)", tosca.Echo(node.Name), node.Renderer, index)
	}
	if IsClusterScoped(obj.GetKind()) {
		obj.SetNamespace("")
	} else if ns := obj.GetNamespace(); ns == "" {
		obj.SetNamespace(opts.Namespace)
	} else if ns != opts.Namespace {
		return nil, invalidf("node %s: %s is in namespace %s: objects must be in the Service's namespace %q", tosca.Echo(node.Name), objectRef(obj), tosca.Echo(ns), opts.Namespace)
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByCalaf
	labels[v1alpha1.LabelService] = opts.Service
	labels[v1alpha1.LabelServiceNamespace] = opts.Namespace
	labels[v1alpha1.LabelNode] = LabelValue(node.Name)
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.AnnotationNodeType] = node.Type
	obj.SetAnnotations(annotations)
	return obj, nil
}

// describe words a value a renderer returned (plain data) for a diagnostic.
func describe(value any) string {
	switch v := value.(type) {
	case string:
		return "the string " + tosca.Echo(v)
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case int64, float64:
		return fmt.Sprintf("the number %v", v)
	}
	return tosca.KindOf(value)
}

// objectRef names an object in a diagnostic as `Kind "name"`, both cut to tosca.MaxEcho.
func objectRef(obj *unstructured.Unstructured) string {
	return text.Shorten(obj.GetKind(), tosca.MaxEcho) + " " + tosca.Echo(obj.GetName())
}

func attributeSource(node *Node, name string, raw any) (AttributeSource, error) {
	m := asMap(raw)
	source := AttributeSource{KeyBy: asString(m["keyBy"]), ValueOf: asString(m["valueOf"]), Default: m["default"]}
	switch object := m["object"].(type) {
	case string:
		source.Object = object
	case int64:
		if object < 0 || int(object) >= len(node.Objects) {
			return source, invalidf("node %s: attribute %s refers to object %d, which the renderer did not return", tosca.Echo(node.Name), tosca.Echo(name), object)
		}
		source.Object = node.Objects[object].GetKind() + "/" + node.Objects[object].GetName()
	}
	switch paths := m["path"].(type) {
	case string:
		source.Paths = []string{paths}
	case []any:
		source.Paths = asStrings(paths)
	}
	if source.Object == "" || len(source.Paths) == 0 {
		return source, invalidf("node %s: attribute %s needs an object and a path", tosca.Echo(node.Name), tosca.Echo(name))
	}
	return source, nil
}

func asMap(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return nil
}

func asString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

func asStrings(v any) []string {
	var strings []string
	for _, item := range asList(v) {
		if s, ok := item.(string); ok {
			strings = append(strings, s)
		}
	}
	return strings
}
