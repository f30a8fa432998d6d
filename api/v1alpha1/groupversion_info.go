// Package v1alpha1 holds the types of the calaf.io/v1alpha1 API: Service, a TOSCA network
// service deployed and run by the Calaf operator, and Operation, a Day-2 operation run on
// one of its node templates.
// +kubebuilder:object:generate=true
// +groupName=calaf.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "calaf.io", Version: "v1alpha1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
