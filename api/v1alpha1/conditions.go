package v1alpha1

// Condition types of a Service. Ready, Reconciling and Stalled follow kstatus; the others
// say which stage of the pipeline passed.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
	ConditionSourceReady = "SourceReady"
	ConditionCompiled    = "Compiled"
	ConditionApplied     = "Applied"
	ConditionHealthy     = "Healthy"
)

// Condition reasons; docs/operator.md has a row for each (test/docs checks it).
const (
	ReasonSucceeded       = "Succeeded"
	ReasonProgressing     = "Progressing"
	ReasonSuspended       = "Suspended"
	ReasonFetchFailed     = "FetchFailed"
	ReasonInvalidSource   = "InvalidSource"
	ReasonIntegrityFailed = "IntegrityFailed"
	// ReasonAuthenticationFailed: the source refused the credentials (or needs some).
	ReasonAuthenticationFailed = "AuthenticationFailed"
	ReasonInvalidPackage       = "InvalidPackage"
	ReasonInvalidInputs        = "InvalidInputs"
	ReasonRenderFailed         = "RenderFailed"
	// ReasonPolicyViolation: the render policy the cluster admin set refuses an object the
	// package renders; nothing of that render was sent to the API server.
	ReasonPolicyViolation   = "PolicyViolation"
	ReasonApplyFailed       = "ApplyFailed"
	ReasonPruneFailed       = "PruneFailed"
	ReasonHealthCheckFailed = "HealthCheckFailed"
	ReasonOperationFailed   = "OperationFailed"
	ReasonDeleting          = "Deleting"
	ReasonInternalError     = "InternalError"
	// ReasonNotReached: an earlier stage failed for this generation, so this one is not
	// known (status Unknown) — what runs is still an earlier revision's.
	ReasonNotReached = "NotReached"
)
