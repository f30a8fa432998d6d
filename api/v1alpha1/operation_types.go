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

// OperationSpec is the request of an operation occurrence: a CUSTOM operation of a node
// (node, operation, inputs), or a SOL003 lifecycle operation (the member named like its
// type). The request cannot change after creation (to do it again, create another
// Operation); only retries and resolution move, and only in FAILED_TEMP.
// +kubebuilder:validation:XValidation:rule="self.serviceName == oldSelf.serviceName && self.type == oldSelf.type && has(self.node) == has(oldSelf.node) && (!has(self.node) || self.node == oldSelf.node) && has(self.operation) == has(oldSelf.operation) && (!has(self.operation) || self.operation == oldSelf.operation) && has(self.instantiate) == has(oldSelf.instantiate) && (!has(self.instantiate) || self.instantiate == oldSelf.instantiate) && has(self.changeFlavour) == has(oldSelf.changeFlavour) && (!has(self.changeFlavour) || self.changeFlavour == oldSelf.changeFlavour) && has(self.scale) == has(oldSelf.scale) && (!has(self.scale) || self.scale == oldSelf.scale) && has(self.scaleToLevel) == has(oldSelf.scaleToLevel) && (!has(self.scaleToLevel) || self.scaleToLevel == oldSelf.scaleToLevel) && has(self.heal) == has(oldSelf.heal) && (!has(self.heal) || self.heal == oldSelf.heal) && has(self.changePackage) == has(oldSelf.changePackage) && (!has(self.changePackage) || self.changePackage == oldSelf.changePackage) && has(self.modify) == has(oldSelf.modify) && (!has(self.modify) || self.modify == oldSelf.modify) && has(self.operate) == has(oldSelf.operate) && (!has(self.operate) || self.operate == oldSelf.operate) && has(self.terminate) == has(oldSelf.terminate) && (!has(self.terminate) || self.terminate == oldSelf.terminate) && has(self.timeout) == has(oldSelf.timeout) && (!has(self.timeout) || self.timeout == oldSelf.timeout) && has(self.rollback) == has(oldSelf.rollback) && (!has(self.rollback) || self.rollback == oldSelf.rollback) && has(self.triggeredBy) == has(oldSelf.triggeredBy) && (!has(self.triggeredBy) || self.triggeredBy == oldSelf.triggeredBy)",message="the request of an Operation cannot be changed (only retries and resolution can); create a new one"
// +kubebuilder:validation:XValidation:rule="self.type != 'CUSTOM' || (has(self.node) && has(self.operation))",message="a CUSTOM operation names a node and an operation"
// +kubebuilder:validation:XValidation:rule="self.type == 'CUSTOM' || (!has(self.node) && !has(self.operation))",message="node and operation belong to CUSTOM operations"
// +kubebuilder:validation:XValidation:rule="has(self.scale) == (self.type == 'SCALE') && has(self.scaleToLevel) == (self.type == 'SCALE_TO_LEVEL') && has(self.changePackage) == (self.type == 'CHANGE_PACKAGE') && has(self.modify) == (self.type == 'MODIFY') && has(self.operate) == (self.type == 'OPERATE') && has(self.changeFlavour) == (self.type == 'CHANGE_FLAVOUR') && (!has(self.instantiate) || self.type == 'INSTANTIATE') && (!has(self.heal) || self.type == 'HEAL') && (!has(self.terminate) || self.type == 'TERMINATE')",message="the request must be the member of its type: instantiate (INSTANTIATE), changeFlavour (CHANGE_FLAVOUR), scale (SCALE), scaleToLevel (SCALE_TO_LEVEL), heal (HEAL), changePackage (CHANGE_PACKAGE), modify (MODIFY), operate (OPERATE), terminate (TERMINATE)"
// +kubebuilder:validation:XValidation:rule="!has(self.resolution) || self.resolution != 'Rollback' || self.type in ['INSTANTIATE', 'SCALE', 'SCALE_TO_LEVEL', 'CHANGE_FLAVOUR', 'CHANGE_PACKAGE', 'MODIFY', 'OPERATE']",message="only INSTANTIATE, SCALE, SCALE_TO_LEVEL, CHANGE_FLAVOUR, CHANGE_PACKAGE, MODIFY and OPERATE occurrences can be rolled back"
type OperationSpec struct {
	// ServiceName is the Service, in the same namespace.
	// +kubebuilder:validation:MinLength=1
	ServiceName string `json:"serviceName"`
	// Type of the operation; CUSTOM (the default) runs the interface operation of a node.
	// +kubebuilder:default=CUSTOM
	// +optional
	Type OperationType `json:"type,omitempty"`
	// Node is the node template a CUSTOM operation belongs to.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Node string `json:"node,omitempty"`
	// Operation is "Interface.operation", e.g. "Standard.configure" or "admin.rotate".
	// +kubebuilder:validation:Pattern=`^[^.]+\.[^.]+$`
	// +optional
	Operation string `json:"operation,omitempty"`
	// Inputs override or add to the operation's inputs (CUSTOM). They are read when the
	// operation runs (Kubernetes' CEL cannot see free-form JSON to keep them from changing).
	// +optional
	Inputs map[string]apiextensionsv1.JSON `json:"inputs,omitempty"`

	// Instantiate is the InstantiateVnfRequest of an INSTANTIATE occurrence: the Service,
	// NOT_INSTANTIATED, deploys its package with it.
	// +optional
	Instantiate *InstantiateRequest `json:"instantiate,omitempty"`
	// +optional
	ChangeFlavour *ChangeFlavourRequest `json:"changeFlavour,omitempty"`
	// +optional
	Scale *ScaleRequest `json:"scale,omitempty"`
	// +optional
	ScaleToLevel *ScaleToLevelRequest `json:"scaleToLevel,omitempty"`
	// +optional
	Heal *HealRequest `json:"heal,omitempty"`
	// +optional
	ChangePackage *ChangePackageRequest `json:"changePackage,omitempty"`
	// +optional
	Modify *ModifyRequest `json:"modify,omitempty"`
	// +optional
	Operate *OperateRequest `json:"operate,omitempty"`
	// +optional
	Terminate *TerminateRequest `json:"terminate,omitempty"`

	// Timeout bounds the wait for the Service to be healthy after a change, and for a hook
	// to end; defaults to the Service's timeout.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Rollback, when set, overrides the Service's rollback policy for this occurrence.
	// +optional
	Rollback RollbackPolicy `json:"rollback,omitempty"`
	// TriggeredBy is the alert that created the occurrence (set by the alert webhook).
	// +optional
	TriggeredBy *AlertTrigger `json:"triggeredBy,omitempty"`

	// Retries asks for a retry of an occurrence in FAILED_TEMP: raise it by one (SOL003
	// retry). The steps that succeeded do not run again.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Retries int32 `json:"retries,omitempty"`
	// Resolution of an occurrence in FAILED_TEMP: Rollback or Fail (SOL003 rollback, fail).
	// +optional
	Resolution Resolution `json:"resolution,omitempty"`
	// Cancel asks a STARTING, PROCESSING or ROLLING_BACK occurrence to stop (SOL003
	// cancel): one still STARTING ends ROLLED_BACK having done nothing; one running goes
	// FAILED_TEMP, after its running step (GRACEFUL) or at once (FORCEFUL).
	// +optional
	Cancel CancelMode `json:"cancel,omitempty"`
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

// ChangeType is how an occurrence changed a pod (SOL003 ChangeType of an affected VNFC).
type ChangeType string

const (
	ChangeAdded    ChangeType = "ADDED"
	ChangeRemoved  ChangeType = "REMOVED"
	ChangeModified ChangeType = "MODIFIED"
)

// AffectedPod is a pod an occurrence changed.
type AffectedPod struct {
	// Pod name (the VNFC instance id).
	Pod string `json:"pod"`
	// UID of the pod.
	// +optional
	UID string `json:"uid,omitempty"`
	// Node is the node template (VDU) the pod belongs to.
	// +optional
	Node string `json:"node,omitempty"`
	// ChangeType: ADDED, REMOVED or MODIFIED.
	ChangeType ChangeType `json:"changeType"`
}

// OperationStatus is where an occurrence stands and what it did.
type OperationStatus struct {
	// OperationState is the SOL003 state of the occurrence.
	// +optional
	OperationState OperationState `json:"operationState,omitempty"`
	// Phase is the run of a node operation (a CUSTOM occurrence, or a hook run for an
	// occurrence): Pending, Running, Succeeded or Failed.
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
	// Steps the occurrence took, in order.
	// +optional
	Steps []OperationStep `json:"steps,omitempty"`
	// Transitions are the states the occurrence entered, in order.
	// +optional
	Transitions []StateTransition `json:"transitions,omitempty"`
	// Retries handled (spec.retries once the last retry started).
	// +optional
	Retries int32 `json:"retries,omitempty"`
	// GrantID is the grant the NFVO gave before the occurrence acted (SOL003 direct mode).
	// +optional
	GrantID string `json:"grantId,omitempty"`
	// Previous is what the Service ran before the occurrence changed it.
	// +optional
	Previous *ServiceSnapshot `json:"previous,omitempty"`
	// AffectedPods are the pods (SOL003 VNFC instances) the occurrence added, removed or
	// replaced, set when it ends (SOL003 resourceChanges.affectedVnfcs).
	// +kubebuilder:validation:MaxItems=256
	// +optional
	AffectedPods []AffectedPod `json:"affectedPods,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Operation is an operation occurrence of a Service: a SOL003 lifecycle operation (scale,
// heal, change package, modify, operate, terminate) or an interface operation of a node
// run once on demand (CUSTOM). Occurrences of a Service run one at a time, in creation
// order; each goes STARTING → PROCESSING → COMPLETED, or FAILED_TEMP, from which
// spec.retries, or spec.resolution (Rollback: ROLLING_BACK → ROLLED_BACK; Fail: FAILED)
// move it on (docs/lifecycle.md).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cop,categories=calaf
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec.resolution) || (has(self.spec.resolution) && self.spec.resolution == oldSelf.spec.resolution)",message="a resolution cannot be changed"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.resolution) || has(oldSelf.spec.resolution) || (has(oldSelf.status) && has(oldSelf.status.operationState) && oldSelf.status.operationState == 'FAILED_TEMP')",message="rollback and fail are allowed only while the occurrence is FAILED_TEMP"
// +kubebuilder:validation:XValidation:rule="(has(self.spec.retries) ? self.spec.retries : 0) == (has(oldSelf.spec.retries) ? oldSelf.spec.retries : 0) || ((has(self.spec.retries) ? self.spec.retries : 0) == (has(oldSelf.spec.retries) ? oldSelf.spec.retries : 0) + 1 && !has(self.spec.resolution) && has(oldSelf.status) && has(oldSelf.status.operationState) && oldSelf.status.operationState == 'FAILED_TEMP')",message="retry is allowed only while the occurrence is FAILED_TEMP, one retry at a time"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec.cancel) || (has(self.spec.cancel) && self.spec.cancel == oldSelf.spec.cancel)",message="a cancel cannot be changed or withdrawn"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.cancel) || has(oldSelf.spec.cancel) || !has(oldSelf.status) || !has(oldSelf.status.operationState) || oldSelf.status.operationState in ['STARTING', 'PROCESSING', 'ROLLING_BACK']",message="cancel is allowed only while the occurrence is STARTING, PROCESSING or ROLLING_BACK"
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.serviceName`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.operationState`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.node`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.spec.operation`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,priority=1
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
