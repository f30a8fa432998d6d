package v1alpha1

// Labels and annotations that tie every object a Service renders to the Service and its
// node template. Calaf's caches, prune and take-over checks select objects by them.
const (
	LabelManagedBy        = "app.kubernetes.io/managed-by"
	ManagedByCalaf        = "calaf"
	LabelService          = "calaf.io/service"
	LabelServiceNamespace = "calaf.io/service-namespace"
	LabelNode             = "calaf.io/node"
	AnnotationNodeType    = "calaf.io/node-type"
)
