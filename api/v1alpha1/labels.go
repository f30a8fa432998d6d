package v1alpha1

// Labels and annotations that tie every object a Service renders to the Service and its
// node template. Calaf's caches, prune and take-over checks select objects by them.
const (
	LabelManagedBy        = "app.kubernetes.io/managed-by"
	ManagedByCalaf        = "calaf"
	LabelService          = "calaf.io/service"
	LabelServiceNamespace = "calaf.io/service-namespace"
	LabelNode             = "calaf.io/node"
	// LabelParent names, on a Service made of a substituted node template, the Service
	// whose node it is.
	LabelParent        = "calaf.io/parent"
	AnnotationNodeType = "calaf.io/node-type"
)

// A Service as a SOL003 VNF instance: what SOL003 says of an instance that Kubernetes has no
// field for is kept in annotations of the Service (set by the NFV API's create and by MODIFY
// occurrences), so every VNF instance stays a Service and nothing else.
const (
	// AnnotationVnfInstanceName is the instance's vnfInstanceName.
	AnnotationVnfInstanceName = "calaf.io/vnf-instance-name"
	// AnnotationVnfInstanceDescription is its vnfInstanceDescription.
	AnnotationVnfInstanceDescription = "calaf.io/vnf-instance-description"
	// AnnotationVnfMetadata is its metadata: a JSON object (at most 16 KiB).
	AnnotationVnfMetadata = "calaf.io/vnf-metadata"
	// LabelVnfInstance marks a Service created through the NFV API ("true").
	LabelVnfInstance = "calaf.io/vnf-instance"
)

// LabelUsableByServices, set to "true" on a ServiceAccount by its namespace's admin,
// marks an account a Service may name in spec.serviceAccountName (and act as) in the
// installs where the operator could act as any account: a tenant who may create Services
// acts as no account that was not offered to Services.
const LabelUsableByServices = "calaf.io/usable-by-services"
