package cmmode

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"calaf.io/calaf/api/v1alpha1"
)

// ToConfigMap turns a Service or Operation custom resource (as read from a manifest) into
// the ConfigMap that stands for it: its name, namespace, labels and annotations, the
// convention's labels, and the whole spec under spec.yaml. It is admitted first, so that
// a custom resource the API server would refuse is refused here with its message.
func (s *Schemas) ToConfigMap(ctx context.Context, obj *unstructured.Unstructured) (*corev1.ConfigMap, error) {
	k, err := calafKind(obj)
	if err != nil {
		return nil, err
	}
	spec, _, _ := unstructured.NestedFieldCopy(obj.Object, "spec")
	candidate := admissionObject(k, obj, runtime.DeepCopyJSONValue(spec), nil)
	if err := s.Admit(ctx, k.name, candidate, nil); err != nil {
		return nil, err
	}
	text, err := specYAML(spec) // as written, without the defaults: the source of truth stays the user's
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace(),
			Labels: withModeLabels(obj.GetLabels(), k.name), Annotations: obj.GetAnnotations()},
		Data: map[string]string{KeySpec: text},
	}
	return cm, nil
}

// FromConfigMap turns a ConfigMap standing for a Service or an Operation into the custom
// resource: the spec of spec.yaml with its dotted keys folded in, admitted (refused with
// the API server's message, as that custom resource would be), without the defaults.
func (s *Schemas) FromConfigMap(ctx context.Context, cm *corev1.ConfigMap) (*unstructured.Unstructured, error) {
	k, ok := kinds()[KindOf(cm)]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s is labelled neither %s=Service nor %s=Operation with %s=%s", cm.Name, LabelKind, LabelKind, LabelVersion, v1alpha1.GroupVersion.Version)
	}
	spec, err := specSource(cm.Data, s.structural(k.name))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("ConfigMap %s: %v", cm.Name, err))
	}
	written := runtime.DeepCopyJSON(spec)
	if err := s.Admit(ctx, k.name, admissionObject(k, cm, spec, nil), nil); err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": written}}
	obj.SetAPIVersion(v1alpha1.GroupVersion.String())
	obj.SetKind(k.name)
	obj.SetName(cm.Name)
	obj.SetNamespace(cm.Namespace)
	obj.SetLabels(withoutModeLabels(cm.Labels))
	obj.SetAnnotations(cm.Annotations)
	return obj, nil
}

// calafKind is the ConfigMap mode's kind of a custom resource.
func calafKind(obj *unstructured.Unstructured) (kind, error) {
	gvk := obj.GroupVersionKind()
	k, ok := kinds()[gvk.Kind]
	if !ok || gvk.GroupVersion() != v1alpha1.GroupVersion {
		return kind{}, fmt.Errorf("%s %s is not a Service or an Operation of %s", gvk.Kind, obj.GetName(), v1alpha1.GroupVersion)
	}
	return k, nil
}
