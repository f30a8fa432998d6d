// Package cmmode is Calaf's ConfigMap mode (docs/configmap-mode.md): Services and
// Operations kept as labelled ConfigMaps, for tenants who may not install CRDs. It
// translates between those ConfigMaps and the typed objects the reconcilers know — a
// client and a cache that speak Service and Operation and store ConfigMaps — so that the
// reconcilers run unchanged; it admits a ConfigMap's spec as the API server admits a
// custom resource (Schemas), keeps status, generation and the admitted spec in a
// companion ConfigMap, and says why a spec was refused.
package cmmode

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
)

// The convention: labels and keys of the ConfigMaps of a Service or an Operation.
const (
	// LabelKind says what a ConfigMap stands for: Service or Operation (the spec, written
	// by users), ServiceStatus or OperationStatus (the companion, written by Calaf).
	LabelKind = "calaf.io/kind"
	// LabelVersion is the API version of the spec (v1alpha1).
	LabelVersion = "calaf.io/version"
	// KeySpec holds the whole spec as YAML.
	KeySpec = "spec.yaml"
	// SpecKeyPrefix starts a key holding one value of the spec by its dotted path
	// (spec.suspend, spec.inputs.replicas); it wins over the same field in spec.yaml.
	SpecKeyPrefix = "spec."
	// StatusSuffix ends the name of the companion ConfigMap of a Service or Operation.
	StatusSuffix = ".calaf-status"

	// Keys of the companion ConfigMap.
	KeyStatus     = "status.yaml"   // the status, as the CRD's status subresource holds it
	KeyAdmitted   = "admitted.yaml" // the last spec admitted: what the reconcilers see
	KeyGeneration = "generation"    // moves by one with each admitted change of the spec
	KeySpecHash   = "specHash"      // SHA-256 of the admitted spec
	KeySourceHash = "sourceHash"    // SHA-256 of the spec last looked at, admitted or not
	KeyRefused    = "refused"       // why the spec last looked at was refused ("" if not)

	// ConditionSpecAccepted is False, with reason Invalid and the API server's message,
	// while the spec in the ConfigMap is refused (the admitted one goes on running).
	ConditionSpecAccepted = "SpecAccepted"
	ReasonInvalid         = "Invalid"
)

// kind is one of Calaf's kinds kept as ConfigMaps.
type kind struct {
	name     string // Service
	resource string // services
	newObj   func() client.Object
	newList  func() client.ObjectList
}

// kinds are the kinds ConfigMap mode keeps.
func kinds() map[string]kind {
	return map[string]kind{
		"Service": {name: "Service", resource: "services",
			newObj: func() client.Object { return &v1alpha1.Service{} }, newList: func() client.ObjectList { return &v1alpha1.ServiceList{} }},
		"Operation": {name: "Operation", resource: "operations",
			newObj: func() client.Object { return &v1alpha1.Operation{} }, newList: func() client.ObjectList { return &v1alpha1.OperationList{} }},
	}
}

// statusKind is the LabelKind value of a kind's companion ConfigMap.
func statusKind(kind string) string { return kind + "Status" }

// StatusName is the name of the companion ConfigMap of the object named name.
func StatusName(name string) string { return name + StatusSuffix }

func (k kind) notFound(name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: k.resource}, name)
}

// KindOf returns the kind a ConfigMap stands for ("" when it is none of Calaf's).
func KindOf(cm *corev1.ConfigMap) string {
	if cm.Labels[LabelVersion] != v1alpha1.GroupVersion.Version {
		return ""
	}
	switch k := cm.Labels[LabelKind]; k {
	case "Service", "Operation":
		return k
	}
	return ""
}

// specSource reads the spec a ConfigMap holds: spec.yaml, then each dotted key (in
// order) setting one value, converted to the type the schema gives that field. The
// errors name the key.
func specSource(data map[string]string, root *structuralschema.Structural) (map[string]any, error) {
	spec := map[string]any{}
	if text := data[KeySpec]; strings.TrimSpace(text) != "" {
		raw, err := yaml.YAMLToJSON([]byte(text))
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", KeySpec, err)
		}
		var value any
		if err := utiljson.Unmarshal(raw, &value); err != nil {
			return nil, fmt.Errorf("key %s: %w", KeySpec, err)
		}
		m, ok := value.(map[string]any)
		if !ok && value != nil {
			return nil, fmt.Errorf("key %s: the spec must be a mapping", KeySpec)
		}
		if m != nil {
			spec = m
		}
	}
	var keys []string
	for key := range data {
		if strings.HasPrefix(key, SpecKeyPrefix) && key != KeySpec {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	var specSchema *structuralschema.Structural
	if root != nil {
		s := root.Properties["spec"]
		specSchema = &s
	}
	for _, key := range keys {
		if err := setDotted(spec, strings.Split(strings.TrimPrefix(key, SpecKeyPrefix), "."), data[key], specSchema); err != nil {
			return nil, fmt.Errorf("key %s: %w", key, err)
		}
	}
	return spec, nil
}

// setDotted sets the value at path in obj, typed by the schema s of obj.
func setDotted(obj map[string]any, path []string, text string, s *structuralschema.Structural) error {
	for i, name := range path {
		if name == "" {
			return fmt.Errorf("empty path segment")
		}
		child := fieldSchema(s, name)
		if i == len(path)-1 {
			value, err := typedValue(text, child)
			if err != nil {
				return err
			}
			obj[name] = value
			return nil
		}
		next, ok := obj[name].(map[string]any)
		if !ok {
			if obj[name] != nil {
				return fmt.Errorf("%s is not a mapping in %s", name, KeySpec)
			}
			next = map[string]any{}
			obj[name] = next
		}
		obj, s = next, child
	}
	return nil
}

// fieldSchema is the schema of field name of an object of schema s (nil: unknown, as
// under x-kubernetes-preserve-unknown-fields).
func fieldSchema(s *structuralschema.Structural, name string) *structuralschema.Structural {
	if s == nil {
		return nil
	}
	if p, ok := s.Properties[name]; ok {
		return &p
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		return s.AdditionalProperties.Structural
	}
	return nil
}

// typedValue converts the text of a dotted key to the schema's type: strings stay text,
// integers, numbers and booleans are parsed, anything else is read as YAML.
func typedValue(text string, s *structuralschema.Structural) (any, error) {
	var typ string
	if s != nil {
		typ = s.Type
		if s.XIntOrString {
			typ = "int-or-string"
		}
	}
	switch typ {
	case "string":
		return text, nil
	case "integer":
		return strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	case "number":
		return strconv.ParseFloat(strings.TrimSpace(text), 64)
	case "boolean":
		return strconv.ParseBool(strings.TrimSpace(text))
	case "int-or-string":
		if n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64); err == nil {
			return n, nil
		}
		return text, nil
	}
	raw, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, err
	}
	var value any
	if err := utiljson.Unmarshal(raw, &value); err != nil {
		return nil, err
	}
	return value, nil
}

// hashOf is the SHA-256 of v's JSON (maps sort their keys).
func hashOf(v any) string {
	data, _ := json.Marshal(v)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
