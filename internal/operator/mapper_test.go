package operator

import (
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper answers for Deployments only, counting the lookups it gets.
type countingMapper struct {
	apimeta.RESTMapper
	lookups int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*apimeta.RESTMapping, error) {
	m.lookups++
	if gk.Kind != "Deployment" {
		return nil, &apimeta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return &apimeta.RESTMapping{Resource: schema.GroupVersionResource{Group: gk.Group, Version: "v1", Resource: "deployments"}, Scope: apimeta.RESTScopeNamespace}, nil
}

// TestVersionMapperRemembers asks the operator's mapper the same questions twice: a kind
// at one version reaches the dynamic mapper once, failures and version-less lookups every
// time.
func TestVersionMapperRemembers(t *testing.T) {
	inner := &countingMapper{}
	mapper := &versionMapper{RESTMapper: inner}
	deployments := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	missing := schema.GroupKind{Group: "example.com", Kind: "Gone"}
	steps := []struct {
		gk       schema.GroupKind
		versions []string
		lookups  int // of the inner mapper, after the step
		fails    bool
	}{
		{deployments, []string{"v1"}, 1, false},
		{deployments, []string{"v1"}, 1, false},
		{deployments, nil, 2, false},
		{deployments, nil, 3, false},
		{missing, []string{"v1"}, 4, true},
		{missing, []string{"v1"}, 5, true},
		{deployments, []string{"v1beta2"}, 6, false},
		{deployments, []string{"v1beta2"}, 6, false},
	}
	for i, step := range steps {
		mapping, err := mapper.RESTMapping(step.gk, step.versions...)
		if (err != nil) != step.fails {
			t.Fatalf("step %d: error %v", i, err)
		}
		if !step.fails && mapping.Resource.Resource != "deployments" {
			t.Errorf("step %d: mapping %v", i, mapping)
		}
		if inner.lookups != step.lookups {
			t.Errorf("step %d: the dynamic mapper was asked %d times, want %d", i, inner.lookups, step.lookups)
		}
	}
}
