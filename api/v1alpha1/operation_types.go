package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OperationPhase is where an Operation run stands.
type OperationPhase string

const (
	OperationPending   OperationPhase = "Pending"
	OperationRunning   OperationPhase = "Running"
	OperationSucceeded OperationPhase = "Succeeded"
	OperationFailed    OperationPhase = "Failed"
)

// OperationSpec names the operation to run, once. It cannot change after creation: to run
// an operation again, create another Operation.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an Operation cannot be changed; create a new one"
type OperationSpec struct {
	// ServiceName is the Service, in the same namespace.
	// +kubebuilder:validation:MinLength=1
	ServiceName string `json:"serviceName"`
	// Node is the node template the operation belongs to.
	// +kubebuilder:validation:MinLength=1
	Node string `json:"node"`
	// Operation is "Interface.operation", e.g. "Standard.configure" or "admin.rotate".
	// +kubebuilder:validation:Pattern=`^[^.]+\.[^.]+$`
	Operation string `json:"operation"`
	// Inputs override or add to the operation's inputs.
	// +optional
	Inputs map[string]apiextensionsv1.JSON `json:"inputs,omitempty"`
}

// PodResult is the outcome of the operation in one pod.
type PodResult struct {
	Pod string `json:"pod"`
	// Succeeded tells whether the run ended without error.
	Succeeded bool `json:"succeeded"`
	// Message is the error, or what the artifact logged last.
	// +optional
	Message string `json:"message,omitempty"`
	// Attributes the artifact set.
	// +optional
	Attributes map[string]apiextensionsv1.JSON `json:"attributes,omitempty"`
	// Outputs the artifact set (TOSCA operation outputs).
	// +optional
	Outputs map[string]apiextensionsv1.JSON `json:"outputs,omitempty"`
	// Log is the tail of what the artifact logged (bounded).
	// +optional
	Log string `json:"log,omitempty"`
	// Stderr is the tail of the failing command's standard error.
	// +optional
	Stderr string `json:"stderr,omitempty"`
	// DurationMillis of the run in the pod, transfer included.
	// +optional
	DurationMillis int64 `json:"durationMillis,omitempty"`
}

// OperationStatus is the result of the run.
type OperationStatus struct {
	// +optional
	Phase OperationPhase `json:"phase,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Results, one per pod the operation ran in.
	// +optional
	Results []PodResult `json:"results,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Operation runs an interface operation of a Service's node template once, on demand
// (Day-2), and records its result.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cop,categories=calaf
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.serviceName`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.node`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.spec.operation`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Operation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec OperationSpec `json:"spec"`
	// +optional
	Status OperationStatus `json:"status,omitempty"`
}

// OperationList is a list of Operations.
// +kubebuilder:object:root=true
type OperationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Operation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Operation{}, &OperationList{})
}
