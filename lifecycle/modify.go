package lifecycle

import (
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"calaf.io/calaf/api/v1alpha1"
)

// A MODIFY is SOL003's VnfInfoModificationRequest: the inputs of the Service (its
// configurable properties), and what SOL003 says of the instance — its name, description
// and metadata, kept in annotations of the Service — and the VNF package it names by VNFD
// id.

// maxMetadataBytes bounds the instance's metadata (the calaf.io/vnf-metadata annotation).
const maxMetadataBytes = 16 << 10

// instanceAnnotationKeys are the annotations that hold what SOL003 says of an instance.
var instanceAnnotationKeys = []string{
	v1alpha1.AnnotationVnfInstanceName, v1alpha1.AnnotationVnfInstanceDescription, v1alpha1.AnnotationVnfMetadata,
}

// applyModify sets the inputs of the request over those the Service had (null removes
// one), the instance's name and description (empty removes them), merges its metadata,
// and moves a vnfPackage source to the VNFD id asked for.
func applyModify(rn *run, svc *v1alpha1.Service) error {
	req, prev := rn.op.Spec.Modify, rn.op.Status.Previous
	if req.Inputs != nil {
		svc.Spec.Inputs = mergedInputs(prev.Inputs, req.Inputs)
	}
	setAnnotation(svc, v1alpha1.AnnotationVnfInstanceName, req.VnfInstanceName)
	setAnnotation(svc, v1alpha1.AnnotationVnfInstanceDescription, req.VnfInstanceDescription)
	if req.Metadata != nil {
		merged, err := mergedMetadata(prev.Annotations[v1alpha1.AnnotationVnfMetadata], req.Metadata)
		if err != nil {
			return err
		}
		setAnnotation(svc, v1alpha1.AnnotationVnfMetadata, &merged)
	}
	if req.VnfdID != "" {
		if svc.Spec.Source.VnfPackage == nil {
			return fmt.Errorf("the Service's source is not a vnfPackage: vnfdId cannot change it")
		}
		svc.Spec.Source.VnfPackage.VnfdID = req.VnfdID
	}
	return nil
}

// mergedInputs sets inputs over those a Service had; a null value removes one.
func mergedInputs(had, set map[string]apiextensionsv1.JSON) map[string]apiextensionsv1.JSON {
	inputs := cloneInputs(had)
	if inputs == nil {
		inputs = map[string]apiextensionsv1.JSON{}
	}
	for name, value := range set {
		if string(value.Raw) == "null" {
			delete(inputs, name)
			continue
		}
		inputs[name] = *value.DeepCopy()
	}
	return inputs
}

// setAnnotation sets an annotation to a value, removes it for "", leaves it for nil.
func setAnnotation(svc *v1alpha1.Service, key string, value *string) {
	switch {
	case value == nil:
	case *value == "":
		delete(svc.Annotations, key)
	default:
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[key] = *value
	}
}

// mergedMetadata merges a metadata patch into an instance's metadata as a JSON merge
// patch (RFC 7396: null removes a key); the result is a JSON object of at most
// maxMetadataBytes.
func mergedMetadata(had string, patch map[string]apiextensionsv1.JSON) (string, error) {
	if had == "" {
		had = "{}"
	}
	var object map[string]json.RawMessage
	if err := json.Unmarshal([]byte(had), &object); err != nil || object == nil {
		return "", fmt.Errorf("the annotation %s is not a JSON object", v1alpha1.AnnotationVnfMetadata)
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return "", err
	}
	merged, err := jsonpatch.MergePatch([]byte(had), data)
	if err != nil {
		return "", fmt.Errorf("merging the metadata: %v", err)
	}
	// The merge writes keys in no set order: written again with sorted keys, the same
	// metadata is always the same annotation.
	var value any
	if err := json.Unmarshal(merged, &value); err != nil {
		return "", err
	}
	if merged, err = json.Marshal(value); err != nil {
		return "", err
	}
	if len(merged) > maxMetadataBytes {
		return "", fmt.Errorf("the metadata would be %d bytes, more than %d", len(merged), maxMetadataBytes)
	}
	return string(merged), nil
}

// instanceAnnotations returns the annotations that hold what SOL003 says of the instance.
func instanceAnnotations(svc *v1alpha1.Service) map[string]string {
	var out map[string]string
	for _, key := range instanceAnnotationKeys {
		if value, ok := svc.Annotations[key]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[key] = value
		}
	}
	return out
}

// restoreInstanceAnnotations puts back the annotations that held what SOL003 says of the
// instance (those it did not have go).
func restoreInstanceAnnotations(svc *v1alpha1.Service, had map[string]string) {
	for _, key := range instanceAnnotationKeys {
		value, ok := had[key]
		switch {
		case ok && svc.Annotations == nil:
			svc.Annotations = map[string]string{key: value}
		case ok:
			svc.Annotations[key] = value
		default:
			delete(svc.Annotations, key)
		}
	}
}

// validateModify refuses a vnfdId for a Service whose source names no VNF package, and
// metadata that cannot be merged or would be too large.
func validateModify(req *v1alpha1.ModifyRequest, svc *v1alpha1.Service) error {
	if req.VnfdID != "" && svc.Spec.Source.VnfPackage == nil {
		return refusef("Service %s does not name its package by VNFD id (spec.source.vnfPackage): vnfdId cannot change it (change its package with CHANGE_PACKAGE)", svc.Name)
	}
	if req.Metadata != nil {
		if _, err := mergedMetadata(svc.Annotations[v1alpha1.AnnotationVnfMetadata], req.Metadata); err != nil {
			return refusef("metadata of Service %s: %v", svc.Name, err)
		}
	}
	return nil
}
