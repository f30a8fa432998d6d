// Package jsonvalue converts the JSON-like values of TOSCA (attributes, outputs, inputs)
// to and from the apiextensions JSON that Calaf's status fields hold.
package jsonvalue

import (
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Encode returns value as JSON; a value that cannot be encoded becomes the text of the
// error (a status field never fails to be written for it).
func Encode(value any) apiextensionsv1.JSON {
	data, err := json.Marshal(value)
	if err != nil {
		data, _ = json.Marshal(err.Error())
	}
	return apiextensionsv1.JSON{Raw: data}
}

// Decode returns the value of raw JSON; nil when it is not valid JSON.
func Decode(raw apiextensionsv1.JSON) any {
	var value any
	if err := json.Unmarshal(raw.Raw, &value); err != nil {
		return nil
	}
	return value
}

// Map encodes values, each passed through redact first; nil when there are none.
func Map(redact func(any) any, values map[string]any) map[string]apiextensionsv1.JSON {
	if len(values) == 0 {
		return nil
	}
	out := make(map[string]apiextensionsv1.JSON, len(values))
	for name, value := range values {
		out[name] = Encode(redact(value))
	}
	return out
}
