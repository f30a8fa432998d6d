package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// minSecretLength is the shortest secret value that is redacted (shorter strings would
// mangle unrelated text).
const minSecretLength = 4

// redactor replaces secret values in text that goes to status, events and logs.
type redactor struct {
	secrets []string
}

// add records a secret value.
func (r *redactor) add(value string) {
	if len(value) >= minSecretLength {
		r.secrets = append(r.secrets, value)
		sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	}
}

// String returns text with every secret value replaced.
func (r *redactor) String(text string) string {
	if r == nil {
		return text
	}
	for _, secret := range r.secrets {
		text = strings.ReplaceAll(text, secret, "*****")
	}
	return text
}

// Value redacts the strings of a JSON-like value; ok is false when it changed anything.
func (r *redactor) Value(value any) any {
	if r == nil || len(r.secrets) == 0 {
		return value
	}
	data, err := json.Marshal(value)
	if err != nil {
		return value
	}
	redacted := r.String(string(data))
	if redacted == string(data) {
		return value
	}
	var out any
	if json.Unmarshal([]byte(redacted), &out) != nil {
		return "*****"
	}
	return out
}

// resolveInputs merges the inputs of a Service: inputsFrom in order, then spec.inputs.
// Values read from Secrets are registered with the redactor.
func (r *ServiceReconciler) resolveInputs(ctx context.Context, reader client.Reader, svc *v1alpha1.Service, redact *redactor) (map[string]any, error) {
	inputs := map[string]any{}
	for _, ref := range svc.Spec.InputsFrom {
		data, secret, err := readInputsObject(ctx, reader, svc.Namespace, ref)
		if err != nil {
			return nil, err
		}
		for key, text := range data {
			if secret {
				redact.add(text)
			}
			var value any
			if err := yaml.Unmarshal([]byte(text), &value); err != nil || value == nil {
				value = text
			}
			if secret {
				if s, ok := value.(string); ok {
					redact.add(s)
				}
			}
			inputs[key] = value
		}
	}
	for name, raw := range svc.Spec.Inputs {
		decoder := json.NewDecoder(bytes.NewReader(raw.Raw))
		decoder.UseNumber()
		var value any
		if err := decoder.Decode(&value); err != nil {
			return nil, stalled(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidInputs, "input %q is not valid JSON: %v", name, err)
		}
		inputs[name] = value
	}
	return inputs, nil
}

// readInputsObject reads the data of an inputsFrom Secret or ConfigMap with reader (the
// Service's identity); secret tells whether it is a Secret's.
func readInputsObject(ctx context.Context, reader client.Reader, namespace string, ref v1alpha1.InputsReference) (map[string]string, bool, error) {
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	notFound := func(err error) (map[string]string, bool, error) {
		if apierrors.IsNotFound(err) {
			if ref.Optional {
				return nil, ref.Kind == "Secret", nil
			}
			return nil, false, newPhaseError(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidInputs, retry, fmt.Errorf("inputs %s %q not found", ref.Kind, ref.Name))
		}
		return nil, false, newPhaseError(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidInputs, retry, fmt.Errorf("reading inputs %s %q: %w", ref.Kind, ref.Name, err))
	}
	switch ref.Kind {
	case "Secret":
		var secret corev1.Secret
		if err := reader.Get(ctx, key, &secret); err != nil {
			return notFound(err)
		}
		data := make(map[string]string, len(secret.Data))
		for k, v := range secret.Data {
			data[k] = string(v)
		}
		return data, true, nil
	default:
		var cm corev1.ConfigMap
		if err := reader.Get(ctx, key, &cm); err != nil {
			return notFound(err)
		}
		return cm.Data, false, nil
	}
}
