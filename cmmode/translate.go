package cmmode

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
)

// pair is the two ConfigMaps of one object: the spec users write, the companion Calaf
// writes (nil until the first spec was looked at).
type pair struct {
	spec, status *corev1.ConfigMap
}

// admitted tells whether the pair holds an admitted spec (the object exists).
func (p pair) admitted() bool {
	return p.status != nil && p.status.Data[KeyAdmitted] != "" && metav1.IsControlledBy(p.status, p.spec)
}

// resourceVersion is the object's version: that of both ConfigMaps, so that a write of
// either is a change of the object (optimistic locks).
func (p pair) resourceVersion() string {
	if p.status == nil {
		return p.spec.ResourceVersion
	}
	return p.spec.ResourceVersion + "." + p.status.ResourceVersion
}

// generation reads the companion's generation (0 before the first admission), one more
// once the object is being deleted, as the API server counts a custom resource's.
func (p pair) generation() int64 {
	if p.status == nil {
		return 0
	}
	g, _ := strconv.ParseInt(p.status.Data[KeyGeneration], 10, 64)
	if p.spec.DeletionTimestamp != nil {
		g++
	}
	return g
}

// object is the typed object of a pair: the spec ConfigMap's metadata (without the mode's
// labels), the admitted spec, the status and generation of the companion, and the
// condition SpecAccepted when the ConfigMap's spec is refused. owners says the kind of
// each ConfigMap that owns it (so an Operation's owner reads as its Service).
func (p pair) object(k kind, owners func(name string) string) (client.Object, error) {
	meta := *p.spec.ObjectMeta.DeepCopy()
	meta.Labels = withoutModeLabels(meta.Labels)
	meta.ResourceVersion, meta.Generation = p.resourceVersion(), p.generation()
	meta.ManagedFields = nil
	meta.OwnerReferences = readOwners(meta.OwnerReferences, owners)
	status := json.RawMessage("{}")
	if text := p.status.Data[KeyStatus]; text != "" {
		raw, err := yaml.YAMLToJSON([]byte(text))
		if err != nil {
			return nil, fmt.Errorf("ConfigMap %s key %s: %w", p.status.Name, KeyStatus, err)
		}
		status = raw
	}
	spec, err := yaml.YAMLToJSON([]byte(p.status.Data[KeyAdmitted]))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s key %s: %w", p.status.Name, KeyAdmitted, err)
	}
	doc, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": k.name, "metadata": meta,
		"spec": json.RawMessage(spec), "status": status,
	})
	if err != nil {
		return nil, err
	}
	obj := k.newObj()
	if err := json.Unmarshal(doc, obj); err != nil {
		return nil, fmt.Errorf("ConfigMaps of %s %s: %w", k.name, p.spec.Name, err)
	}
	if refused := p.status.Data[KeyRefused]; refused != "" {
		if conditions := conditionsOf(obj); conditions != nil {
			apimeta.SetStatusCondition(conditions, metav1.Condition{Type: ConditionSpecAccepted, Status: metav1.ConditionFalse,
				Reason: ReasonInvalid, Message: refused, ObservedGeneration: meta.Generation, LastTransitionTime: p.status.CreationTimestamp})
		}
	}
	return obj, nil
}

// conditionsOf returns the conditions of a Service's or Operation's status.
func conditionsOf(obj client.Object) *[]metav1.Condition {
	switch o := obj.(type) {
	case *v1alpha1.Service:
		return &o.Status.Conditions
	case *v1alpha1.Operation:
		return &o.Status.Conditions
	}
	return nil
}

// withoutModeLabels returns labels less the convention's.
func withoutModeLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if k != LabelKind && k != LabelVersion {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// withModeLabels returns labels with the convention's for kind.
func withModeLabels(labels map[string]string, kind string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		out[k] = v
	}
	out[LabelKind], out[LabelVersion] = kind, v1alpha1.GroupVersion.Version
	return out
}

// readOwners turns references to ConfigMaps standing for Calaf's objects into references
// to those objects.
func readOwners(refs []metav1.OwnerReference, owners func(name string) string) []metav1.OwnerReference {
	if len(refs) == 0 {
		return nil
	}
	out := make([]metav1.OwnerReference, 0, len(refs))
	for _, ref := range refs {
		if ref.APIVersion == "v1" && ref.Kind == "ConfigMap" && owners != nil {
			if kind := owners(ref.Name); kind != "" {
				ref.APIVersion, ref.Kind = v1alpha1.GroupVersion.String(), kind
			}
		}
		out = append(out, ref)
	}
	return out
}

// writeOwners turns references to Calaf's objects into references to the ConfigMaps that
// stand for them (same name and UID), so that the garbage collector, which knows no
// calaf.io kind here, follows them; references to one owner twice become one.
func writeOwners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, ref := range refs {
		if ref.APIVersion == v1alpha1.GroupVersion.String() && (ref.Kind == "Service" || ref.Kind == "Operation") {
			ref.APIVersion, ref.Kind = "v1", "ConfigMap"
		}
		merged := false
		for i := range out {
			if out[i].UID == ref.UID {
				if ref.Controller != nil && *ref.Controller {
					out[i].Controller = ref.Controller
				}
				if ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
					out[i].BlockOwnerDeletion = ref.BlockOwnerDeletion
				}
				merged = true
			}
		}
		if !merged {
			out = append(out, ref)
		}
	}
	return out
}

// RewriteOwners makes obj's references to Calaf's objects references to their ConfigMaps
// (writeOwners).
func RewriteOwners(obj client.Object) {
	refs := obj.GetOwnerReferences()
	for _, ref := range refs {
		if ref.APIVersion == v1alpha1.GroupVersion.String() {
			obj.SetOwnerReferences(writeOwners(refs))
			return
		}
	}
}

// toMap is obj as the API server decodes it (numbers int64 or float64).
func toMap(obj client.Object) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// admissionObject is what Schemas.Admit checks of obj: its type, the metadata a custom
// resource is validated with, and spec (and status, for the old object of an update).
func admissionObject(k kind, meta metav1.Object, spec, status any) map[string]any {
	metadata := map[string]any{"name": meta.GetName(), "namespace": meta.GetNamespace()}
	if meta.GetName() == "" && meta.GetGenerateName() != "" {
		metadata["name"] = meta.GetGenerateName() + "xxxxx"
	}
	if labels := withoutModeLabels(meta.GetLabels()); len(labels) > 0 {
		metadata["labels"] = toAnyMap(labels)
	}
	if annotations := meta.GetAnnotations(); len(annotations) > 0 {
		metadata["annotations"] = toAnyMap(annotations)
	}
	obj := map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": k.name, "metadata": metadata}
	if spec != nil {
		obj["spec"] = spec
	}
	if status != nil {
		obj["status"] = status
	}
	return obj
}

func toAnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// specYAML writes a spec as the YAML of key spec.yaml.
func specYAML(spec any) (string, error) {
	data, err := yaml.Marshal(spec)
	return string(data), err
}

// ownerKinds says, by name, the kind of the ConfigMaps of namespace that stand for
// Calaf's objects, read through reader.
func ownerKinds(ctx context.Context, reader client.Reader, namespace string) func(name string) string {
	return func(name string) string {
		if strings.HasSuffix(name, StatusSuffix) {
			return ""
		}
		cm := &corev1.ConfigMap{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
			return ""
		}
		return KindOf(cm)
	}
}
