package controller

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/redact"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// A node template whose type a service template of the package substitutes (TOSCA
// substitution_mappings) is deployed as a Service of its own — its child: compiled from
// that template (spec.template) of the same package, its inputs the node's properties,
// its outputs the node's attributes. The child is the node's one object: applied in the
// operator's cluster beside its parent (whatever cluster the parent's objects are in),
// healthy when it is Ready, deleted with its parent, in the parent's order of nodes.

// serviceGVK is the kind of Calaf's Services.
var serviceGVK = v1alpha1.GroupVersion.WithKind(v1alpha1.ServiceKind)

// isCalafService tells whether a kind is Calaf's Service.
func isCalafService(gvk schema.GroupVersionKind) bool {
	return gvk.Group == serviceGVK.Group && gvk.Kind == serviceGVK.Kind
}

// maxNesting bounds how deep Services nest (a template substituting a type whose
// substituting template substitutes another...).
const maxNesting = 4

// AnnotationNesting counts, on a child Service, the parents above it.
const AnnotationNesting = "calaf.io/nesting"

// substitute returns the render with the children of its substituted nodes: a copy,
// the render being shared by the cache.
func (r *ServiceReconciler) substitute(s *scope, result *render.Result) (*render.Result, error) {
	if s.facts.substituteErr != "" {
		return nil, stalled(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidPackage, "%s", s.facts.substituteErr)
	}
	if err := misplaced(result, s.facts.substitutes); err != nil {
		return nil, err
	}
	if len(s.facts.substitutes) == 0 {
		return result, nil
	}
	copied := *result
	copied.Nodes, copied.Objects = make([]*render.Node, len(result.Nodes)), nil
	for i, node := range result.Nodes {
		copied.Nodes[i] = node
		if sub, ok := substituteOf(node, s.facts.substitutes); ok {
			child, err := r.childNode(s, node, sub)
			if err != nil {
				return nil, err
			}
			copied.Nodes[i] = child
		}
		copied.Objects = append(copied.Objects, copied.Nodes[i].Objects...)
	}
	return &copied, nil
}

// misplaced refuses a placement policy that targets a node no template substitutes: only
// a nested Service can be placed in another cluster.
func misplaced(result *render.Result, subs []tosca.Substitute) error {
	for _, node := range result.Nodes {
		if _, ok := substituteOf(node, subs); !ok && node.Placement != nil {
			return stalled(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidPackage,
				"node %s: placed by policy %q, but no service template of the package substitutes its type %s", node.Name, node.Placement.Policy, node.Type)
		}
	}
	return nil
}

// substituteOf finds the template substituting one of a node's types.
func substituteOf(node *render.Node, subs []tosca.Substitute) (tosca.Substitute, bool) {
	for _, sub := range subs {
		if sub.NodeType == node.Type || slices.Contains(node.Types, sub.NodeType) {
			return sub, true
		}
	}
	return tosca.Substitute{}, false
}

// childNode is a substituted node with its child Service as its object and the child's
// outputs (and the attributes its attribute mappings name) as its attributes.
func (r *ServiceReconciler) childNode(s *scope, node *render.Node, sub tosca.Substitute) (*render.Node, error) {
	parent := s.Service
	if len(node.Objects) > 0 {
		return nil, stalled(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidPackage,
			"node %s: its type %s is substituted by %s, and renders objects of its own too", node.Name, sub.NodeType, sub.File)
	}
	depth, _ := strconv.Atoi(parent.Annotations[AnnotationNesting])
	if depth >= maxNesting {
		return nil, stalled(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidPackage,
			"node %s: Services nest at most %d deep (%s substitutes %s under %d parents)", node.Name, maxNesting, sub.File, sub.NodeType, depth)
	}
	if property, ok := secretProperty(node, sub, s.Redact); ok {
		return nil, stalled(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidInputs,
			"node %s: property %s holds a value read from a Secret, and would be written in the spec of the Service %s substitutes it with", node.Name, property, sub.File)
	}
	child, err := childService(parent, node, sub, depth+1)
	if err != nil {
		return nil, newPhaseError(v1alpha1.ConditionApplied, v1alpha1.ReasonInternalError, retry, err)
	}
	copied := *node
	copied.Objects = []*unstructured.Unstructured{child}
	ref := v1alpha1.ServiceKind + "/" + child.GetName()
	copied.Attributes = map[string]render.AttributeSource{}
	for _, output := range sub.Outputs {
		copied.Attributes[output] = render.AttributeSource{Object: ref, Paths: []string{"status.outputs." + output}}
	}
	for attribute, target := range sub.Attributes {
		copied.Attributes[attribute] = render.AttributeSource{Object: ref,
			Paths: []string{fmt.Sprintf("status.nodes[name=%s].attributes.%s", target[0], target[1])}}
	}
	return &copied, nil
}

// childService is the Service a substituted node is deployed as: named after the parent
// and the node, with the parent's package, settings and labels, the template that
// substitutes the node, the node's properties as its inputs, and where the node's
// placement says (else where its parent deploys).
func childService(parent *v1alpha1.Service, node *render.Node, sub tosca.Substitute, depth int) (*unstructured.Unstructured, error) {
	spec := v1alpha1.ServiceSpec{
		Source: parent.Spec.Source, Template: sub.File, Interval: parent.Spec.Interval, RetryInterval: parent.Spec.RetryInterval,
		Timeout: parent.Spec.Timeout, DeletionPolicy: parent.Spec.DeletionPolicy, RetainVolumes: parent.Spec.RetainVolumes,
		ServiceAccountName: parent.Spec.ServiceAccountName, Verify: parent.Spec.Verify, KubeConfig: parent.Spec.KubeConfig,
	}
	if p := node.Placement; p != nil {
		spec.KubeConfig = &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: p.KubeconfigSecret}, Delegate: p.Delegate}
	}
	inputs, err := childInputs(node, sub)
	if err != nil {
		return nil, err
	}
	spec.Inputs = inputs
	labels := map[string]string{}
	for key, value := range parent.Labels { // the parent's shard selects its children too
		labels[key] = value
	}
	labels[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByCalaf
	labels[v1alpha1.LabelService], labels[v1alpha1.LabelServiceNamespace] = parent.Name, parent.Namespace
	labels[v1alpha1.LabelNode], labels[v1alpha1.LabelParent] = render.LabelValue(node.Name), parent.Name
	child := &v1alpha1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.ServiceKind},
		ObjectMeta: metav1.ObjectMeta{Name: render.ObjectName(parent.Name, node.Name), Namespace: parent.Namespace, Labels: labels,
			Annotations:     map[string]string{v1alpha1.AnnotationNodeType: node.Type, AnnotationNesting: strconv.Itoa(depth)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.ServiceKind, Name: parent.Name, UID: parent.UID}}},
		Spec: spec,
	}
	return toApply(child)
}

// childInputs are the inputs a substituted node's properties feed (its property
// mappings, and the properties named as the template's inputs).
func childInputs(node *render.Node, sub tosca.Substitute) (map[string]apiextensionsv1.JSON, error) {
	inputs := map[string]apiextensionsv1.JSON{}
	for property, value := range node.Properties {
		input, ok := sub.Inputs[property]
		if !ok || value == nil {
			continue
		}
		data, err := json.Marshal(value)
		if err != nil {
			return nil, fmt.Errorf("node %s, property %s: %w", node.Name, property, err)
		}
		inputs[input] = apiextensionsv1.JSON{Raw: data}
	}
	if len(inputs) == 0 {
		return nil, nil
	}
	return inputs, nil
}

// secretProperty names a property of the node that feeds the child's inputs with a value
// read from one of the parent's inputsFrom Secrets: the child's inputs are in its spec.
func secretProperty(node *render.Node, sub tosca.Substitute, secrets *redact.Secrets) (string, bool) {
	if secrets == nil {
		return "", false
	}
	for property, value := range node.Properties {
		if _, fed := sub.Inputs[property]; fed && secrets.Touches(value) {
			return property, true
		}
	}
	return "", false
}

// useTemplate makes the Service's spec.template the package's entry for this reconcile
// (the artifact is shared: it gets a copy), and the compile's option that keeps its
// compiles apart from the entry's.
func (s *scope) useTemplate(opts *tosca.CompileOptions) error {
	template := s.Service.Spec.Template
	if template == "" {
		return nil
	}
	pkg, err := s.Artifact.Package.WithEntry(template)
	if err != nil {
		return stalled(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidPackage, "spec.template: %v", err)
	}
	artifact := *s.Artifact
	artifact.Package = pkg
	s.Artifact, opts.Entry = &artifact, pkg.Entry
	return nil
}
