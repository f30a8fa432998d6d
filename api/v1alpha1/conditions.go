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
	ConditionConfigured  = "Configured"
)

// Condition reasons.
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
	ReasonApplyFailed          = "ApplyFailed"
	ReasonPruneFailed          = "PruneFailed"
	ReasonHealthCheckFailed    = "HealthCheckFailed"
	ReasonDependencyNotReady   = "DependencyNotReady"
	ReasonOperationFailed      = "OperationFailed"
	ReasonDeleting             = "Deleting"
	ReasonNotFound             = "NotFound"
	ReasonInternalError        = "InternalError"
)
