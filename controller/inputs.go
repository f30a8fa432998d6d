package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/redact"
)

// resolveInputs merges the inputs of a Service: inputsFrom in order, then spec.inputs.
// Values read from Secrets are registered with secrets by their structure (every leaf,
// every line); fromSecrets names the inputs whose value came from a Secret.
func (r *ServiceReconciler) resolveInputs(ctx context.Context, reader client.Reader, svc *v1alpha1.Service, secrets *redact.Secrets) (inputs map[string]any, fromSecrets map[string]bool, err error) {
	inputs, fromSecrets = map[string]any{}, map[string]bool{}
	for _, ref := range svc.Spec.InputsFrom {
		data, secret, err := readInputsObject(ctx, reader, svc.Namespace, ref)
		if err != nil {
			return nil, nil, err
		}
		for key, text := range data {
			if secret {
				secrets.Add(text)
			}
			var value any
			if err := yaml.Unmarshal([]byte(text), &value); err != nil || value == nil {
				value = text
			}
			inputs[key], fromSecrets[key] = value, secret
		}
	}
	for name, raw := range svc.Spec.Inputs {
		decoder := json.NewDecoder(bytes.NewReader(raw.Raw))
		decoder.UseNumber()
		var value any
		if err := decoder.Decode(&value); err != nil {
			return nil, nil, stalled(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidInputs, "input %q is not valid JSON: %v", name, err)
		}
		inputs[name], fromSecrets[name] = value, false
	}
	return inputs, fromSecrets, nil
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
