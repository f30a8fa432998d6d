package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Lifecycle management: every operation of a Service — a custom operation of a node, or a
// SOL003 lifecycle operation (scale, heal, change package, …) — is an operation
// occurrence, an Operation resource with the SOL003 state machine (docs/lifecycle.md).

// OperationType is what an occurrence does: a SOL003 LCM operation, or CUSTOM (an
// interface operation of one node template, run on demand).
// +kubebuilder:validation:Enum=CUSTOM;INSTANTIATE;SCALE;SCALE_TO_LEVEL;CHANGE_FLAVOUR;HEAL;CHANGE_PACKAGE;MODIFY;OPERATE;TERMINATE
type OperationType string

const (
	OperationCustom        OperationType = "CUSTOM"
	OperationInstantiate   OperationType = "INSTANTIATE"
	OperationChangeFlavour OperationType = "CHANGE_FLAVOUR"
	OperationScale         OperationType = "SCALE"
	OperationScaleToLevel  OperationType = "SCALE_TO_LEVEL"
	OperationHeal          OperationType = "HEAL"
	OperationChangePackage OperationType = "CHANGE_PACKAGE"
	OperationModify        OperationType = "MODIFY"
	OperationOperate       OperationType = "OPERATE"
	OperationTerminate     OperationType = "TERMINATE"
)

// OperationState is the SOL003 state of an operation occurrence (LcmOperationStateType).
type OperationState string

const (
	// StateStarting: created, waiting for its turn (one occurrence at a time per Service).
	StateStarting OperationState = "STARTING"
	// StateProcessing: running its steps.
	StateProcessing OperationState = "PROCESSING"
	// StateCompleted: done (final).
	StateCompleted OperationState = "COMPLETED"
	// StateFailedTemp: a step failed; waits for retry, rollback or fail.
	StateFailedTemp OperationState = "FAILED_TEMP"
	// StateFailed: given up after FAILED_TEMP (final).
	StateFailed OperationState = "FAILED"
	// StateRollingBack: restoring what the Service ran before the occurrence.
	StateRollingBack OperationState = "ROLLING_BACK"
	// StateRolledBack: restored (final).
	StateRolledBack OperationState = "ROLLED_BACK"
)

// Final tells whether a state ends an occurrence.
func (s OperationState) Final() bool {
	return s == StateCompleted || s == StateFailed || s == StateRolledBack
}

// Resolution is the decision taken on an occurrence in FAILED_TEMP.
// +kubebuilder:validation:Enum=Rollback;Fail
type Resolution string

const (
	// ResolutionRollback restores what ran before the occurrence (SOL003 rollback).
	ResolutionRollback Resolution = "Rollback"
	// ResolutionFail gives up, leaving things as they are (SOL003 fail).
	ResolutionFail Resolution = "Fail"
)

// RollbackPolicy says whether a change that fails rolls back by itself.
// +kubebuilder:validation:Enum=Manual;Auto
type RollbackPolicy string

const (
	// RollbackManual leaves a failed change in FAILED_TEMP for a decision.
	RollbackManual RollbackPolicy = "Manual"
	// RollbackAuto rolls a failed change back at once (FAILED_TEMP → ROLLING_BACK).
	RollbackAuto RollbackPolicy = "Auto"
)

// ScaleDirection is SOL003's ScaleVnfRequest type.
// +kubebuilder:validation:Enum=SCALE_OUT;SCALE_IN
type ScaleDirection string

const (
	ScaleOut ScaleDirection = "SCALE_OUT"
	ScaleIn  ScaleDirection = "SCALE_IN"
)

// ScaleRequest is a SOL003 ScaleVnfRequest: some steps of one scaling aspect.
type ScaleRequest struct {
	// AspectID is the scaling aspect (status.lifecycle.aspects lists them).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	AspectID string `json:"aspectId"`
	// Type: SCALE_OUT or SCALE_IN.
	// +kubebuilder:default=SCALE_OUT
	// +optional
	Type ScaleDirection `json:"type,omitempty"`
	// NumberOfSteps to scale by; defaults to 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=1
	// +optional
	NumberOfSteps int32 `json:"numberOfSteps,omitempty"`
	// AdditionalParams are handed to the scale hooks as inputs.
	// +optional
	AdditionalParams map[string]apiextensionsv1.JSON `json:"additionalParams,omitempty"`
}

// ScaleToLevelRequest is a SOL003 ScaleVnfToLevelRequest: an instantiation level (ETSI
// packages), or a scale level per aspect.
// +kubebuilder:validation:XValidation:rule="has(self.instantiationLevelId) != has(self.scaleInfo)",message="set either instantiationLevelId or scaleInfo"
type ScaleToLevelRequest struct {
	// +kubebuilder:validation:MinLength=1
	// +optional
	InstantiationLevelID string `json:"instantiationLevelId,omitempty"`
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=aspectId
	// +optional
	ScaleInfo []ScaleInfo `json:"scaleInfo,omitempty"`
	// +optional
	AdditionalParams map[string]apiextensionsv1.JSON `json:"additionalParams,omitempty"`
}

// HealRequest is a SOL003 HealVnfRequest: one pod (a VNFC instance), the pods of node
// templates (VDUs), or, with neither, every pod of the Service. Healed pods are recreated
// and run their Standard operations again.
// +kubebuilder:validation:XValidation:rule="!(has(self.pods) && has(self.nodes))",message="set pods or nodes, not both"
type HealRequest struct {
	// Pods to recreate (vnfcInstanceId), by name; they must belong to the Service.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Pods []string `json:"pods,omitempty"`
	// Nodes whose pods are recreated (VDUs).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Nodes []string `json:"nodes,omitempty"`
	// Cause, for the record and the hooks.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Cause string `json:"cause,omitempty"`
	// +optional
	AdditionalParams map[string]apiextensionsv1.JSON `json:"additionalParams,omitempty"`
}

// ChangePackageRequest is a SOL003 ChangeCurrentVnfPkgRequest: the Service moves to
// another package, node by node in dependency order, each node health-gated.
type ChangePackageRequest struct {
	// Source of the new package.
	Source Source `json:"source"`
	// Inputs, when set, replace the Service's inputs.
	// +optional
	Inputs map[string]apiextensionsv1.JSON `json:"inputs,omitempty"`
	// Instantiate, when set, replaces the Service's instantiate request (ETSI packages).
	// +optional
	Instantiate *InstantiateRequest `json:"instantiate,omitempty"`
	// +optional
	AdditionalParams map[string]apiextensionsv1.JSON `json:"additionalParams,omitempty"`
}

// ModifyRequest is a SOL003 VnfInfoModificationRequest: inputs of the Service (its
// configurable properties), and what SOL003 says of the instance — its name, description
// and metadata (annotations of the Service), the package it names by VNFD id.
// +kubebuilder:validation:MinProperties=1
type ModifyRequest struct {
	// Inputs to set; a null value removes the input.
	// +optional
	Inputs map[string]apiextensionsv1.JSON `json:"inputs,omitempty"`
	// VnfInstanceName, when set, replaces the instance's name.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	VnfInstanceName *string `json:"vnfInstanceName,omitempty"`
	// VnfInstanceDescription, when set, replaces the instance's description.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	VnfInstanceDescription *string `json:"vnfInstanceDescription,omitempty"`
	// Metadata is merged into the instance's metadata as a JSON merge patch (RFC 7396: a
	// null removes a key).
	// +optional
	Metadata map[string]apiextensionsv1.JSON `json:"metadata,omitempty"`
	// VnfdID moves a Service whose source is a VnfPackage to the package of this VNFD id
	// (SOL003: a change of package that changes nothing but the package's identity).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	VnfdID string `json:"vnfdId,omitempty"`
}

// ChangeStateTo is where OPERATE takes the Service.
// +kubebuilder:validation:Enum=STARTED;STOPPED
type ChangeStateTo string

const (
	ChangeStateStarted ChangeStateTo = "STARTED"
	ChangeStateStopped ChangeStateTo = "STOPPED"
)

// OperateRequest is a SOL003 OperateVnfRequest: STOPPED scales every workload to zero,
// keeping objects and volumes; STARTED brings them back.
type OperateRequest struct {
	ChangeStateTo ChangeStateTo `json:"changeStateTo"`
}

// TerminationType is SOL003's terminationType.
// +kubebuilder:validation:Enum=GRACEFUL;FORCEFUL
type TerminationType string

const (
	TerminationGraceful TerminationType = "GRACEFUL"
	TerminationForceful TerminationType = "FORCEFUL"
)

// ChangeFlavourRequest is a SOL003 ChangeVnfFlavourRequest: an ETSI package's Service
// moves to another deployment flavour (and instantiation level).
type ChangeFlavourRequest struct {
	// NewFlavourID is the deployment flavour to move to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	NewFlavourID string `json:"newFlavourId"`
	// InstantiationLevelID of the new flavour; empty selects its default level.
	// +optional
	InstantiationLevelID string `json:"instantiationLevelId,omitempty"`
	// +optional
	AdditionalParams map[string]apiextensionsv1.JSON `json:"additionalParams,omitempty"`
}

// CancelMode is SOL003's CancelModeType.
// +kubebuilder:validation:Enum=GRACEFUL;FORCEFUL
type CancelMode string

const (
	// CancelGraceful lets the running step end, then stops (FAILED_TEMP).
	CancelGraceful CancelMode = "GRACEFUL"
	// CancelForceful stops at once (FAILED_TEMP), leaving the running step where it is.
	CancelForceful CancelMode = "FORCEFUL"
)

// TerminateRequest is a SOL003 TerminateVnfRequest: everything the Service runs goes.
// GRACEFUL runs the terminate_start hooks and the nodes' Standard stop and delete
// operations first, for at most gracefulTerminationTimeout; FORCEFUL runs nothing.
type TerminateRequest struct {
	// KeepInstance leaves the Service NOT_INSTANTIATED (its objects gone, the Service
	// kept until it is deleted), as SOL003 terminates a VNF instance; otherwise the
	// Service is deleted.
	// +optional
	KeepInstance bool `json:"keepInstance,omitempty"`
	// +kubebuilder:default=GRACEFUL
	// +optional
	TerminationType TerminationType `json:"terminationType,omitempty"`
	// GracefulTerminationTimeout bounds the graceful part, in seconds (default 300).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	GracefulTerminationTimeout int32 `json:"gracefulTerminationTimeout,omitempty"`
}

// AlertTrigger says which alert created an occurrence (closed loop).
type AlertTrigger struct {
	// Rule is the alert rule of the package (a calaf.policies.AlertRule policy).
	Rule string `json:"rule"`
	// AlertName is the alert's alertname label.
	AlertName string `json:"alertName"`
	// Fingerprint of the alert, as Alertmanager computes it.
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`
	// StartsAt is when the alert started firing.
	// +optional
	StartsAt *metav1.Time `json:"startsAt,omitempty"`
	// Labels of the alert (at most 32).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// StepPhase is where a step of an occurrence stands.
type StepPhase string

const (
	StepRunning   StepPhase = "Running"
	StepSucceeded StepPhase = "Succeeded"
	StepFailed    StepPhase = "Failed"
	StepSkipped   StepPhase = "Skipped"
)

// OperationStep is one step an occurrence took; a step recorded Succeeded never runs
// again, not after a retry, not after an operator restart.
type OperationStep struct {
	// Name says what the step does: "hook Lifecycle.scale_start on smf", "apply", "wait", …
	Name  string    `json:"name"`
	Phase StepPhase `json:"phase"`
	// Rollback tells whether the step belongs to the rollback.
	// +optional
	Rollback bool `json:"rollback,omitempty"`
	// Attempt is the retry the step ran in (0: the first run).
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// Operation is the Operation that ran a hook in the node's pods.
	// +optional
	Operation string `json:"operation,omitempty"`
	// Outputs the hook set (TOSCA operation outputs), by name.
	// +optional
	Outputs map[string]apiextensionsv1.JSON `json:"outputs,omitempty"`
	// Generation of the Service the step's change produced (or waits for).
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// Pods the step acted on ("name/uid"): the pods a heal recreates, the stuck pods a retry
	// restarted; for the step that records the pods an occurrence started with,
	// "name/uid/node" (what status.affectedPods is computed from).
	// +optional
	Pods []string `json:"pods,omitempty"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// StateTransition is one state an occurrence entered; subscribers are notified of each.
type StateTransition struct {
	State OperationState   `json:"state"`
	Time  metav1.MicroTime `json:"time"`
	// Sequence numbers the occurrence's transitions from 1, in order; it goes on when
	// the oldest transitions are dropped from the list (subscriptions and notification
	// ids count on it). Absent on transitions recorded before it existed, which are
	// numbered by their position.
	// +optional
	Sequence int64 `json:"sequence,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// ServiceSnapshot is what a Service ran before an occurrence changed it: what a rollback
// restores.
type ServiceSnapshot struct {
	Source Source `json:"source"`
	// +optional
	Inputs map[string]apiextensionsv1.JSON `json:"inputs,omitempty"`
	// +optional
	InputsFrom []InputsReference `json:"inputsFrom,omitempty"`
	// +optional
	Instantiate *InstantiateRequest `json:"instantiate,omitempty"`
	// +optional
	Scale []ScaleInfo `json:"scale,omitempty"`
	// Levels are the scale levels every aspect had (spec.scale, or the instantiation
	// level's): what a SCALE counts its steps from.
	// +optional
	Levels []ScaleInfo `json:"levels,omitempty"`
	// +optional
	Stopped bool `json:"stopped,omitempty"`
	// Revision the Service ran.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Generation of the Service the snapshot was taken at.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// StateSecret is the copy of the Service's compiled package at that revision (a Secret
	// the occurrence owns); a rollback puts it back, so nothing is compiled again.
	// +optional
	StateSecret string `json:"stateSecret,omitempty"`
	// Annotations are what SOL003 says of the instance that a MODIFY changes and a
	// rollback puts back: its name, description and metadata (calaf.io/vnf-instance-name,
	// calaf.io/vnf-instance-description, calaf.io/vnf-metadata), those the Service had.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// LifecycleStatus is what lifecycle operations need to know of a Service's package: its
// scaling aspects, the hooks its nodes declare and its alert rules.
type LifecycleStatus struct {
	// Aspects are the scaling aspects, with their current level (SOL003 scaleStatus).
	// +optional
	Aspects []AspectStatus `json:"aspects,omitempty"`
	// InstantiationLevels of an ETSI package's flavour.
	// +optional
	InstantiationLevels []string `json:"instantiationLevels,omitempty"`
	// Hooks are the lifecycle operations each node declares (Vnflcm or Lifecycle
	// interface), run by the occurrences.
	// +optional
	Hooks []NodeHooks `json:"hooks,omitempty"`
	// AlertRules turn alerts into occurrences (closed loop).
	// +optional
	AlertRules []AlertRule `json:"alertRules,omitempty"`
}

// AspectStatus is a scaling aspect and where it stands.
type AspectStatus struct {
	AspectID string `json:"aspectId"`
	// ScaleLevel is the current level (0 is the instantiated size).
	ScaleLevel int32 `json:"scaleLevel"`
	// MaxScaleLevel is the highest level that may be reached (the aspect's
	// max_scale_level, lowered when a VDU's vdu_profile or the policy's max_instances
	// allows fewer instances).
	MaxScaleLevel int32 `json:"maxScaleLevel"`
	// Bound says what sets MaxScaleLevel.
	// +optional
	Bound string `json:"bound,omitempty"`
	// Nodes are the node templates (VDUs) whose workloads the aspect scales.
	// +optional
	Nodes []string `json:"nodes,omitempty"`
}

// NodeHooks are the lifecycle hooks of a node template ("Interface.operation").
type NodeHooks struct {
	Node       string   `json:"node"`
	Operations []string `json:"operations"`
}

// AlertRule turns matching alerts into an occurrence of a Service (a
// calaf.policies.AlertRule policy of the package).
type AlertRule struct {
	Name string `json:"name"`
	// AlertName is the alertname the rule matches.
	AlertName string `json:"alertName"`
	// Labels the alert must carry, with these values.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Operation: HEAL or SCALE.
	Operation OperationType `json:"operation"`
	// Nodes healed (HEAL); empty heals the pod the alert's "pod" label names.
	// +optional
	Nodes []string `json:"nodes,omitempty"`
	// AspectID, Direction and Steps of a SCALE.
	// +optional
	AspectID string `json:"aspectId,omitempty"`
	// +optional
	Direction ScaleDirection `json:"direction,omitempty"`
	// +optional
	Steps int32 `json:"steps,omitempty"`
	// CooldownSeconds: alerts within this time after an occurrence of the rule are
	// ignored.
	CooldownSeconds int32 `json:"cooldownSeconds"`
	// MaxPerHour bounds the occurrences the rule creates in any hour.
	MaxPerHour int32 `json:"maxPerHour"`
}

// Lifecycle labels and annotations.
const (
	// LabelOccurrence marks an Operation that runs a step (a hook) of an occurrence, with
	// the occurrence's name.
	LabelOccurrence = "calaf.io/occurrence"
	// AnnotationTeardown set to "skip" makes a deleted Service go without running its
	// nodes' stop and delete operations (a FORCEFUL termination).
	AnnotationTeardown = "calaf.io/teardown"
	// TeardownSkip is the value of AnnotationTeardown that skips the teardown operations.
	TeardownSkip = "skip"
	// StateSecretSuffix names a Service's state Secret ("<service><suffix>"): its
	// compiled package, kept so that a restart does not compile again.
	StateSecretSuffix = ".calaf-state"
	// StateKeyAnnotation on a state Secret holds the compile key of what it holds.
	StateKeyAnnotation = "calaf.io/compile-key"
)

// Condition reasons of an occurrence, one per state and the causes of its refusal;
// docs/lifecycle.md has a row for each (test/docs checks it).
const (
	OccurrenceQueued      = "Queued"
	OccurrenceProcessing  = "Processing"
	OccurrenceCompleted   = "Completed"
	OccurrenceFailedTemp  = "FailedTemp"
	OccurrenceFailed      = "Failed"
	OccurrenceRollingBack = "RollingBack"
	OccurrenceRolledBack  = "RolledBack"
	// OccurrenceRefused: the request cannot be carried out (an unknown aspect, a level
	// past the maximum, a pod the Service does not own); the occurrence ends FAILED.
	OccurrenceRefused = "Refused"
	// OccurrenceGrantRefused: the NFVO refused the grant asked for before the occurrence
	// acted (SOL003 direct mode); the occurrence ends ROLLED_BACK having done nothing.
	OccurrenceGrantRefused = "GrantRefused"
	// OccurrenceCancelled: spec.cancel stopped the occurrence — ROLLED_BACK before it
	// started, FAILED_TEMP once it had.
	OccurrenceCancelled = "Cancelled"
)

// ConditionCancelled is True on an occurrence once its cancel was carried out (a cancel
// is carried out once: a retry after it runs to its end).
const ConditionCancelled = "Cancelled"

// LifecycleSubscriptionSpec says where to send the notifications of which occurrences.
type LifecycleSubscriptionSpec struct {
	// CallbackURI receives a POST of a SOL003 VnfLcmOperationOccurrenceNotification (JSON)
	// for every state an occurrence of the namespace enters.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=2048
	CallbackURI string `json:"callbackUri"`
	// Filter selects the occurrences; empty selects all of the namespace.
	// +optional
	Filter *SubscriptionFilter `json:"filter,omitempty"`
	// SecretRef names a Secret with credentials: "username" and "password" (basic), or
	// "token" (bearer); and "ca.crt" to trust. It is read as the subscription acts: in
	// lockdown mode as the namespace's tenant service account; otherwise only a Secret
	// labelled calaf.io/use=lifecycle-subscriptions is read (docs/security.md).
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// NotificationTypes selects what is sent (SOL003 notificationTypes); empty sends
	// VnfLcmOperationOccurrenceNotifications only.
	// +kubebuilder:validation:MaxItems=3
	// +optional
	NotificationTypes []NotificationType `json:"notificationTypes,omitempty"`
	// Authentication says how notifications authenticate to the endpoint; unset, the
	// Secret's "token" is sent as a bearer token, or its "username" and "password" as
	// basic credentials, or nothing.
	// +optional
	Authentication *SubscriptionAuthentication `json:"authentication,omitempty"`
	// APIRoot, when set, makes notifications speak of resources as the NFV API does (ids
	// are names; links are the API's, under this root); set by calaf nfv-api.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	APIRoot string `json:"apiRoot,omitempty"`
	// Verbosity of the occurrence notifications: FULL (the default) or SHORT (SOL003
	// LcmOpOccNotificationVerbosityType; SHORT leaves out the affected VNFCs).
	// +kubebuilder:validation:Enum=FULL;SHORT
	// +optional
	Verbosity string `json:"verbosity,omitempty"`
}

// NotificationType is a kind of SOL003 VNF LCM notification.
// +kubebuilder:validation:Enum=VnfLcmOperationOccurrenceNotification;VnfIdentifierCreationNotification;VnfIdentifierDeletionNotification
type NotificationType string

const (
	NotificationOccurrence NotificationType = "VnfLcmOperationOccurrenceNotification"
	NotificationCreation   NotificationType = "VnfIdentifierCreationNotification"
	NotificationDeletion   NotificationType = "VnfIdentifierDeletionNotification"
)

// AuthType is how notifications authenticate (SOL013 authType).
// +kubebuilder:validation:Enum=BASIC;OAUTH2_CLIENT_CREDENTIALS
type AuthType string

const (
	AuthBasic  AuthType = "BASIC"
	AuthOAuth2 AuthType = "OAUTH2_CLIENT_CREDENTIALS"
)

// SubscriptionAuthentication is a subscription's SOL013 authentication: BASIC with the
// Secret's "username" and "password"; OAUTH2_CLIENT_CREDENTIALS with a token the
// endpoint's authorization server grants for the Secret's "clientId" and "clientSecret"
// (RFC 6749 client credentials), sent as a bearer token.
// +kubebuilder:validation:XValidation:rule="self.type != 'OAUTH2_CLIENT_CREDENTIALS' || has(self.tokenEndpoint)",message="OAUTH2_CLIENT_CREDENTIALS needs a tokenEndpoint"
type SubscriptionAuthentication struct {
	Type AuthType `json:"type"`
	// TokenEndpoint of the authorization server (OAUTH2_CLIENT_CREDENTIALS).
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	TokenEndpoint string `json:"tokenEndpoint,omitempty"`
}

// SubscriptionFilter selects occurrences by Service, type and state (each list: any of).
type SubscriptionFilter struct {
	// +optional
	ServiceNames []string `json:"serviceNames,omitempty"`
	// VnfdIDs selects the Services of these VNFD ids (status.vnf.vnfdId, or the VnfPackage
	// their source names).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	VnfdIDs []string `json:"vnfdIds,omitempty"`
	// VnfInstanceNames selects the Services of these vnfInstanceNames (the annotation
	// calaf.io/vnf-instance-name).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	VnfInstanceNames []string `json:"vnfInstanceNames,omitempty"`
	// +optional
	OperationTypes []OperationType `json:"operationTypes,omitempty"`
	// +optional
	OperationStates []OperationState `json:"operationStates,omitempty"`
}

// DeliveryCursor is where delivery stands for an occurrence, or, named "service/NAME", for
// the identifier notifications of a Service (1: its creation delivered or passed over, 2:
// its deletion).
type DeliveryCursor struct {
	Operation string `json:"operation"`
	// Delivered is the sequence number of the last transition delivered or passed over
	// (StateTransition.Sequence).
	Delivered int32 `json:"delivered"`
}

// Reasons of a LifecycleSubscription's Ready condition.
const (
	// SubscriptionDelivering: every notification so far was delivered.
	SubscriptionDelivering = "Delivering"
	// SubscriptionDeliveryFailed: the endpoint did not take the next notification (an
	// error, an answer other than 2xx, or its circuit open); retried with backoff.
	SubscriptionDeliveryFailed = "DeliveryFailed"
	// SubscriptionCallbackRefused: the callback's address is one the outbound policy
	// refuses (docs/security.md); retried with backoff, as the policy or the name's
	// address may change.
	SubscriptionCallbackRefused = "CallbackRefused"
	// SubscriptionCredentialsRefused: the Secret of secretRef cannot be read as the
	// subscription acts (not labelled for subscriptions, or not readable by the tenant
	// account); nothing is sent without it.
	SubscriptionCredentialsRefused = "CredentialsRefused"
)

// Secrets a LifecycleSubscription may read in an install that is not in lockdown mode
// carry this label with this value: the Secret's owner lets subscriptions of its
// namespace send it.
const (
	LabelSecretUse         = "calaf.io/use"
	SecretUseSubscriptions = "lifecycle-subscriptions"
)

// FinalizerVnfIdentifier keeps a deleted Service until every subscription of its namespace
// that asks for VnfIdentifierDeletionNotifications has been sent its deletion (or gave up:
// an endpoint failing for an hour). The NFV API puts it on the Services it creates.
const FinalizerVnfIdentifier = "calaf.io/vnf-identifier"

// LifecycleSubscriptionStatus says what was delivered.
type LifecycleSubscriptionStatus struct {
	// Delivered counts the notifications the endpoint accepted.
	// +optional
	Delivered int64 `json:"delivered,omitempty"`
	// Pending counts the notifications waiting to be delivered.
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// Failures in a row delivering the next notification.
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// LastError of a delivery.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// LastDelivered is the id of the last notification delivered.
	// +optional
	LastDelivered string `json:"lastDelivered,omitempty"`
	// +optional
	LastDeliveryTime *metav1.Time `json:"lastDeliveryTime,omitempty"`
	// NextAttemptTime is when a failed delivery is tried again (the backoff of Failures);
	// no notification is sent before, whatever happens meanwhile, unless the spec changes.
	// +optional
	NextAttemptTime *metav1.Time `json:"nextAttemptTime,omitempty"`
	// Cursors: per occurrence, how many of its transitions were delivered.
	// +optional
	Cursors []DeliveryCursor `json:"cursors,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// LifecycleSubscription sends the state changes of the namespace's operation
// occurrences to an HTTP endpoint (SOL003 LccnSubscription), in order, retrying with
// backoff until the endpoint accepts them.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=clsub,categories=calaf
// +kubebuilder:printcolumn:name="Callback",type=string,JSONPath=`.spec.callbackUri`
// +kubebuilder:printcolumn:name="Delivered",type=integer,JSONPath=`.status.delivered`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pending`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LifecycleSubscription struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec LifecycleSubscriptionSpec `json:"spec"`
	// +optional
	Status LifecycleSubscriptionStatus `json:"status,omitempty"`
}

// LifecycleSubscriptionList is a list of LifecycleSubscriptions.
// +kubebuilder:object:root=true
type LifecycleSubscriptionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LifecycleSubscription `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LifecycleSubscription{}, &LifecycleSubscriptionList{})
}
