package cmmode

import (
	"context"
	"fmt"
	"io/fs"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/deploy/crd"
)

// Schemas validates objects of Calaf's kinds as the API server validates the custom
// resources of deploy/crd: unknown fields refused (kubectl's strict field validation),
// defaults applied, the OpenAPI schema, list types and the CEL rules checked, with
// Kubernetes' own code and so with the API server's messages.
type Schemas struct {
	kinds map[string]*kindSchema
}

// kindSchema is what the API server builds from one version of a CRD.
type kindSchema struct {
	gk         schema.GroupKind
	structural *structuralschema.Structural // defaults pruned, as the API server keeps it
	openAPI    apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// NewSchemas reads the CRDs of Calaf's kinds (Service, Operation) from deploy/crd.
func NewSchemas() (*Schemas, error) {
	s := &Schemas{kinds: map[string]*kindSchema{}}
	for kind, file := range map[string]string{"Service": "calaf.io_services.yaml", "Operation": "calaf.io_operations.yaml"} {
		data, err := fs.ReadFile(crd.Files(), file)
		if err != nil {
			return nil, err
		}
		ks, err := newKindSchema(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		s.kinds[kind] = ks
	}
	return s, nil
}

// newKindSchema builds the validators of a CRD's served version, as the API server's
// custom resource handler does.
func newKindSchema(data []byte) (*kindSchema, error) {
	def := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, def); err != nil {
		return nil, err
	}
	var version *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range def.Spec.Versions {
		if def.Spec.Versions[i].Name == v1alpha1.GroupVersion.Version {
			version = &def.Spec.Versions[i]
		}
	}
	if version == nil || version.Schema == nil {
		return nil, fmt.Errorf("no schema of version %s", v1alpha1.GroupVersion.Version)
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(version.Schema, internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	openAPI, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	ks := &kindSchema{gk: schema.GroupKind{Group: def.Spec.Group, Kind: def.Spec.Names.Kind}, openAPI: openAPI}
	ks.cel = cel.NewValidator(structural, true, celconfig.PerCallLimit)
	ks.structural = structural.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(ks.structural); err != nil {
		return nil, err
	}
	return ks, nil
}

// Admit takes obj (apiVersion, kind, metadata, spec and, for an update, old as stored)
// through what the API server does to a custom resource before storing it: unknown fields
// refused, null fields without defaults dropped, defaults applied, then validated. It
// changes obj in place (defaults) and returns the API server's error when it would refuse
// it: the same status, reason and message.
func (s *Schemas) Admit(ctx context.Context, kind string, obj, old map[string]any) error {
	ks := s.kinds[kind]
	if ks == nil {
		return fmt.Errorf("no schema for kind %q", kind)
	}
	name, _, _ := unstructuredString(obj, "metadata", "name")
	pruneOpts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}
	if unknown := structuralpruning.PruneWithOptions(obj, ks.structural, true, pruneOpts); len(unknown) > 0 {
		fields := make([]error, 0, len(unknown))
		for _, path := range unknown {
			fields = append(fields, fmt.Errorf(`unknown field "%s"`, path))
		}
		strict := runtime.NewStrictDecodingError(fields)
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", kind, v1alpha1.GroupVersion.Version, kind, strict))
	}
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, ks.structural)
	structuraldefaulting.Default(obj, ks.structural)
	if errs := ks.validate(ctx, obj, old); len(errs) > 0 {
		return apierrors.NewInvalid(ks.gk, name, errs)
	}
	return nil
}

// structural is the structural schema of kind (nil for another kind).
func (s *Schemas) structural(kind string) *structuralschema.Structural {
	if ks := s.kinds[kind]; ks != nil {
		return ks.structural
	}
	return nil
}

// validate is the custom resource strategy's Validate (old nil) or ValidateUpdate.
func (ks *kindSchema) validate(ctx context.Context, obj, old map[string]any) field.ErrorList {
	var errs field.ErrorList
	var celOptions []cel.Option
	if old == nil {
		errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, ks.openAPI)...)
	} else {
		// Ratcheting, on by default in the API server: what an update leaves as it was is
		// not refused again.
		correlated := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: ks.structural})
		celOptions = append(celOptions, cel.WithRatcheting(correlated))
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, ks.openAPI, apiservervalidation.WithRatcheting(correlated))...)
	}
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, obj, ks.structural, false)...)
	if old == nil || len(structurallisttype.ValidateListSetsAndMaps(nil, ks.structural, old)) == 0 {
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, ks.structural, obj)...)
	}
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			// The API server skips the CEL rules after such errors (they would fail to
			// evaluate) and says so.
			return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		}
	}
	var oldObj any
	if old != nil {
		oldObj = old
	}
	celErrs, _ := ks.cel.Validate(ctx, nil, ks.structural, obj, oldObj, celconfig.RuntimeCELCostBudget, celOptions...)
	return append(errs, celErrs...)
}

// unstructuredString reads a string at path of obj.
func unstructuredString(obj map[string]any, path ...string) (string, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[p]
	}
	s, ok := cur.(string)
	return s, ok, nil
}
