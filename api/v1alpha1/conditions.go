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

// ReasonAccessDenied: the Service may not act as the service account it names (not
// marked usable by Services, or one the operator may not impersonate: SourceReady), or the
// identity it acts as may not use what its package refers to — a Secret a pod mounts or
// reads, a service account a pod runs as — or, in lockdown mode, the package names
// another namespace (Applied); nothing was applied.
const ReasonAccessDenied = "AccessDenied"

// ReasonNotInstantiated: spec.instantiationState is NOT_INSTANTIATED — what ran is being
// torn down (Ready False), or nothing is deployed (Ready True).
const ReasonNotInstantiated = "NotInstantiated"

// ReasonClusterUnreachable: the API server of the cluster the Service deploys into
// (spec.kubeConfig) does not answer, or refuses the kubeconfig's credentials (Applied);
// retried with backoff, and at once when the cluster answers again.
const ReasonClusterUnreachable = "ClusterUnreachable"

// ReasonKubeConfigInvalid: the kubeconfig Secret of spec.kubeConfig cannot be used —
// missing, unreadable as the Service's identity, not a kubeconfig, or refused (it runs
// commands, names files, skips TLS verification, or its API server is on a network the
// admin does not allow) (Applied); nothing of the render was sent.
const ReasonKubeConfigInvalid = "KubeConfigInvalid"

// ReasonRolloutStopped: a site of a ServiceSet failed with the change it took, and the
// rollout gives it to no further site until the ServiceSet changes (Ready, Stalled).
const ReasonRolloutStopped = "RolloutStopped"

// ReasonDeselected: a site of a ServiceSet is no longer selected, and its Service is
// kept (deselectedSites: Keep); said of the site, in the ServiceSet's status.
const ReasonDeselected = "Deselected"

// ReasonSelectionFailed: a ServiceSet's clusters cannot be selected — its selector is
// invalid, two clusters are one site, Cluster API is not installed (Ready, Stalled).
const ReasonSelectionFailed = "SelectionFailed"

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
	// ReasonVnfPackageNotFound: no VnfPackage of the namespace holds the VNFD id the
	// Service names (spec.source.vnfPackage).
	ReasonVnfPackageNotFound = "VnfPackageNotFound"
	// ReasonVnfPackageNotReady: the VnfPackage is being onboarded (the Service waits), was
	// refused, or is being deleted.
	ReasonVnfPackageNotReady = "VnfPackageNotReady"
	// ReasonVnfPackageDisabled: the VnfPackage is DISABLED, and the Service does not run it
	// yet: a disabled package is not newly instantiated.
	ReasonVnfPackageDisabled = "VnfPackageDisabled"
	// ReasonNotReached: an earlier stage failed for this generation, so this one is not
	// known (status Unknown) — what runs is still an earlier revision's.
	ReasonNotReached = "NotReached"
)

// StuckPodReasons are the waiting reasons of a pod's containers that do not go away
// without a change of the package, its inputs or the namespace (until the kubelet's next
// attempt after such a change): a node failing for one of them stalls its Service.
var StuckPodReasons = []string{
	"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName",
	"CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
}

// Reasons of a VnfPackage's Ready condition besides those of a Service's source
// (Succeeded, Progressing, FetchFailed, InvalidSource, IntegrityFailed,
// AuthenticationFailed, InvalidPackage, InternalError).
const (
	// ReasonNoContent: the package has no content yet (spec.source).
	ReasonNoContent = "NoContent"
	// ReasonDuplicateVnfdID: another package of the namespace holds the VNFD id already.
	ReasonDuplicateVnfdID = "DuplicateVnfdId"
)
