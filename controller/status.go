package controller

import (
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
)

// setCondition sets a condition stamped with the Service's generation; its transition
// time moves only when its status changes.
func setCondition(svc *v1alpha1.Service, conditionType string, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&svc.Status.Conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: svc.Generation,
	})
}

func removeCondition(svc *v1alpha1.Service, conditionType string) {
	apimeta.RemoveStatusCondition(&svc.Status.Conditions, conditionType)
}

func toJSON(value any) apiextensionsv1.JSON {
	data, err := json.Marshal(value)
	if err != nil {
		data, _ = json.Marshal(err.Error())
	}
	return apiextensionsv1.JSON{Raw: data}
}

func fromJSON(raw apiextensionsv1.JSON) any {
	var value any
	if err := json.Unmarshal(raw.Raw, &value); err != nil {
		return nil
	}
	return value
}

func toJSONMap(redact *redactor, values map[string]any) map[string]apiextensionsv1.JSON {
	if len(values) == 0 {
		return nil
	}
	out := make(map[string]apiextensionsv1.JSON, len(values))
	for name, value := range values {
		out[name] = toJSON(redact.Value(value))
	}
	return out
}
