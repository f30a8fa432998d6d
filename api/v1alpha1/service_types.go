package v1alpha1

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ServiceKind is the kind of Service.
	ServiceKind = "Service"
	// ServiceFinalizer lets the operator tear a Service's objects down before it goes.
	ServiceFinalizer = "calaf.io/finalizer"
	// ReconcileRequestAnnotation asks for an immediate reconcile when its value changes.
	ReconcileRequestAnnotation = "calaf.io/reconcile-requested-at"

	// DefaultInterval is the interval of a Service that sets none (the CRD's default).
	DefaultInterval = 10 * time.Minute
	// DefaultTimeout is the timeout of a Service that sets none (the CRD's default).
	DefaultTimeout = 5 * time.Minute
)

// DeletionPolicy says what happens to a Service's objects when the Service is deleted.
// +kubebuilder:validation:Enum=Delete;Orphan
type DeletionPolicy string

const (
	// DeletionPolicyDelete removes the objects, dependents before their dependencies.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyOrphan leaves the objects running, without Calaf's labels.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
)

// ServiceSpec says which TOSCA package to deploy, with which inputs, and how.
type ServiceSpec struct {
	// Source of the TOSCA package (a CSAR, a directory in git, an OCI artifact).
	Source Source `json:"source"`

	// Inputs of the service template, by name. Values are any JSON; TOSCA validates them
	// against the template's input definitions.
	// +optional
	Inputs map[string]apiextensionsv1.JSON `json:"inputs,omitempty"`

	// InputsFrom reads inputs from Secrets and ConfigMaps in the Service's namespace: every
	// key becomes an input (its value parsed as YAML). Inputs override them. Values from a
	// Secret are treated as secret: never written to status, events or logs.
	// +optional
	InputsFrom []InputsReference `json:"inputsFrom,omitempty"`

	// Interval between reconciles: the package is fetched again, drift is repaired.
	// +kubebuilder:default="10m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// RetryInterval is the wait after a failure; defaults to Interval.
	// +optional
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`

	// Timeout for the objects of a new revision to become healthy before the Service is
	// reported as failed (it keeps trying).
	// +kubebuilder:default="5m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Suspend stops reconciling; nothing is applied, pruned or deleted while suspended.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// DeletionPolicy says what happens to the objects when the Service is deleted.
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// RetainVolumes keeps the claims StatefulSets made from their volumeClaimTemplates when
	// the Service is deleted (without Calaf's labels, so nothing manages them any more); by
	// default DeletionPolicy Delete deletes them with the Service.
	// +optional
	RetainVolumes bool `json:"retainVolumes,omitempty"`

	// ServiceAccountName is impersonated to apply, prune and delete the objects, so a
	// Service can do no more than that account may. The account must be one the
	// operator may impersonate and, unless the operator runs in lockdown mode, carry the
	// label calaf.io/usable-by-services=true (its namespace's admin offers it to
	// Services); otherwise the Service stalls with AccessDenied.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Force recreates objects whose immutable fields changed (e.g. a selector).
	// +optional
	Force bool `json:"force,omitempty"`

	// Verify checks the package's ETSI SOL004 signature — a signed manifest (option 1) or
	// a signed CSAR (option 2) — against trust anchors before anything of it is used. The
	// operator may impose a mode and anchors on every Service (--verify-mode,
	// --verify-anchors); a Service can make the mode stricter, never weaker.
	// +optional
	Verify *VerifySpec `json:"verify,omitempty"`

	// Instantiate is the ETSI SOL003 InstantiateVnfRequest of an ETSI SOL001 VNF package:
	// its deployment flavour, instantiation level and additionalParams (docs/etsi.md).
	// +optional
	Instantiate *InstantiateRequest `json:"instantiate,omitempty"`

	// Scale is the scale level of each scaling aspect, as SCALE and SCALE_TO_LEVEL
	// occurrences left it (docs/lifecycle.md): the aspects' workloads run the replicas of
	// these levels, which drift repair and redeploys keep.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=aspectId
	// +optional
	Scale []ScaleInfo `json:"scale,omitempty"`

	// Stopped (an OPERATE occurrence) scales every Deployment, StatefulSet and ReplicaSet
	// to zero, keeping the objects and their volumes.
	// +optional
	Stopped bool `json:"stopped,omitempty"`

	// Rollback says what a lifecycle change that fails does: Manual (the default) waits in
	// FAILED_TEMP for a retry, rollback or fail; Auto rolls back at once.
	// +optional
	Rollback RollbackPolicy `json:"rollback,omitempty"`

	// Template is the service template of the package to deploy instead of its entry: a
	// file of the package whose topology substitutes a node type (TOSCA
	// substitution_mappings). Calaf sets it on the Services it makes of the node templates
	// such a template substitutes (docs/multicluster.md).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Template string `json:"template,omitempty"`

	// KubeConfig, when set, deploys the Service into another cluster: everything it does
	// to objects and pods — the take-over check, apply, prune, drift repair, health, the
	// operations run in its pods, the lifecycle occurrences, deletion and orphaning —
	// happens in the cluster of the kubeconfig, as the identity it grants, in the namespace
	// of the Service's name. The Secret is read as the Service acts (spec.serviceAccountName);
	// a kubeconfig that runs commands (exec, auth-provider), names files or skips TLS
	// verification is refused, and its API server must be on a network the operator's
	// admin allows (docs/multicluster.md).
	// +optional
	KubeConfig *KubeConfigReference `json:"kubeConfig,omitempty"`

	// InstantiationState: INSTANTIATED (the default) deploys the package; NOT_INSTANTIATED
	// deploys nothing — what runs is torn down as on deletion and the Service stays, holding
	// the VNF instance's identity and package (SOL003: a VNF instance before its INSTANTIATE
	// and after its TERMINATE). INSTANTIATE and TERMINATE occurrences move it.
	// +optional
	InstantiationState InstantiationState `json:"instantiationState,omitempty"`
}

// KubeConfigReference names the kubeconfig of the cluster a Service deploys into, as
// Flux's kubeConfig does.
type KubeConfigReference struct {
	// SecretRef names a Secret of the Service's namespace holding a kubeconfig: in Key,
	// else in "value" or "value.yaml" (Flux's layout; Cluster API's <cluster>-kubeconfig
	// Secrets hold it in "value").
	SecretRef SecretKeyReference `json:"secretRef"`
	// Delegate hands the Service to the Calaf operator serving that cluster instead of
	// applying its objects there: a copy of the Service (and of the package and inputs it
	// reads in its namespace) is applied there, that operator deploys it, repairs its drift
	// and runs its Day-2 operations — also while this one cannot reach it — and this
	// Service follows its status.
	// +optional
	Delegate bool `json:"delegate,omitempty"`
}

// SecretKeyReference names a Secret of the Service's namespace, and optionally a key of it.
type SecretKeyReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key of the Secret's data; empty: "value", else "value.yaml".
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// InstantiationState is SOL003's instantiationState of a VNF instance.
// +kubebuilder:validation:Enum=INSTANTIATED;NOT_INSTANTIATED
type InstantiationState string

const (
	// Instantiated: the package is deployed.
	Instantiated InstantiationState = "INSTANTIATED"
	// NotInstantiated: nothing is deployed; the Service holds the instance's identity.
	NotInstantiated InstantiationState = "NOT_INSTANTIATED"
)

// VerifyMode says what a package that fails verification does.
// +kubebuilder:validation:Enum=Enforce;Warn
type VerifyMode string

const (
	// VerifyEnforce refuses a package not signed by a certificate chaining to an anchor
	// (IntegrityFailed); what already runs keeps running.
	VerifyEnforce VerifyMode = "Enforce"
	// VerifyWarn verifies as Enforce does, deploys anyway, and reports why in
	// status.package.verification.
	VerifyWarn VerifyMode = "Warn"
)

// VerifySpec is how the signature of a Service's package is verified.
type VerifySpec struct {
	// Mode: Enforce (the default) or Warn.
	// +kubebuilder:default=Enforce
	// +optional
	Mode VerifyMode `json:"mode,omitempty"`

	// Anchors names a Secret or ConfigMap of the Service's namespace holding the PEM
	// certificates of the CAs trusted to vouch for package signers.
	// +optional
	Anchors *AnchorsReference `json:"anchors,omitempty"`
}

// AnchorsReference names a PEM bundle of trust anchors in a Secret or ConfigMap.
type AnchorsReference struct {
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	Kind string `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key holding the bundle; defaults to "ca.crt".
	// +optional
	Key string `json:"key,omitempty"`
}

// InstantiateRequest is a SOL003 InstantiateVnfRequest, as the parameter files of an NFVO
// or a VNFM (Tacker) write it.
type InstantiateRequest struct {
	// FlavourID selects the deployment flavour; empty selects the package's only one.
	// +optional
	FlavourID string `json:"flavourId,omitempty"`

	// InstantiationLevelID selects the instantiation level; empty selects the flavour's
	// default level.
	// +optional
	InstantiationLevelID string `json:"instantiationLevelId,omitempty"`

	// AdditionalParams are free-form; Calaf reads lcm-kubernetes-def-files, namespace,
	// helm_chart_path, helm_value_names and helm_parameters.
	// +optional
	AdditionalParams map[string]apiextensionsv1.JSON `json:"additionalParams,omitempty"`

	// ExtVirtualLinks are accepted and ignored on Kubernetes, with a warning.
	// +optional
	ExtVirtualLinks []apiextensionsv1.JSON `json:"extVirtualLinks,omitempty"`
}

// Source locates a TOSCA package. Exactly one member is set.
// +kubebuilder:validation:XValidation:rule="[has(self.url), has(self.upload), has(self.git), has(self.oci), has(self.vnfPackage)].filter(x, x).size() == 1",message="exactly one of url, upload, git, oci and vnfPackage must be set"
type Source struct {
	// URL of a CSAR (zip) or tar(.gz) package over http or https.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	URL string `json:"url,omitempty"`

	// SHA256 of the package at URL, in hex; a download that does not match is refused, and
	// a known digest is never downloaded twice.
	// +kubebuilder:validation:Pattern=`^[a-f0-9]{64}$`
	// +optional
	SHA256 string `json:"sha256,omitempty"`

	// SecretRef names a Secret with credentials for URL: "username" and "password", or
	// "token" (a bearer token); and "ca.crt", a CA bundle to trust.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// Upload is a package uploaded by `calaf deploy` from local files.
	// +optional
	Upload *UploadSource `json:"upload,omitempty"`

	// Git is a package in a git repository.
	// +optional
	Git *GitSource `json:"git,omitempty"`

	// OCI is a package stored as an artifact in an OCI registry.
	// +optional
	OCI *OCISource `json:"oci,omitempty"`

	// VnfPackage is an onboarded VNF package of the Service's namespace (a VnfPackage
	// resource), named by the VNFD id it holds: what the package's own source says is
	// fetched, at the revision its onboarding verified.
	// +optional
	VnfPackage *VnfPackageSource `json:"vnfPackage,omitempty"`
}

// VnfPackageSource names an onboarded VNF package by its VNFD id (SOL003 vnfdId).
type VnfPackageSource struct {
	// VnfdID is the VNFD id (descriptor_id) of an ONBOARDED, ENABLED VnfPackage of the
	// namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	VnfdID string `json:"vnfdId"`
}

// UploadSource is a package archive stored in a ConfigMap of the Service's namespace.
type UploadSource struct {
	// ConfigMapName names the ConfigMap whose binaryData "package.tar.gz" is the package.
	// +kubebuilder:validation:MinLength=1
	ConfigMapName string `json:"configMapName"`

	// SHA256 of the archive, in hex. The operator refuses an archive that does not match;
	// uploading new content changes it, and so triggers a reconcile.
	// +kubebuilder:validation:Pattern=`^[a-f0-9]{64}$`
	SHA256 string `json:"sha256"`
}

// GitSource is a package in a git repository, at a branch, tag or commit.
type GitSource struct {
	// URL of the repository: https://, http:// or ssh://.
	// +kubebuilder:validation:Pattern=`^(https?|ssh)://`
	URL string `json:"url"`

	// Ref to check out; defaults to the branch "main".
	// +optional
	Ref *GitRef `json:"ref,omitempty"`

	// Path of the package in the repository: a directory or a .csar file; defaults to the root.
	// +optional
	Path string `json:"path,omitempty"`

	// SecretRef names a Secret with credentials: "username" and "password" (or a token as
	// password) for HTTPS; "identity" (a private key) and "known_hosts" for SSH.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// GitRef selects a commit: by branch (followed), by tag, or a fixed commit.
// +kubebuilder:validation:XValidation:rule="[has(self.branch), has(self.tag), has(self.commit)].filter(x, x).size() <= 1",message="set at most one of branch, tag and commit"
type GitRef struct {
	// +optional
	Branch string `json:"branch,omitempty"`
	// +optional
	Tag string `json:"tag,omitempty"`
	// +kubebuilder:validation:Pattern=`^[a-f0-9]{40}$`
	// +optional
	Commit string `json:"commit,omitempty"`
}

// OCISource is a package stored as an OCI artifact (see `calaf package push`).
type OCISource struct {
	// URL of the repository, oci://host/repository.
	// +kubebuilder:validation:Pattern=`^oci://`
	URL string `json:"url"`

	// Tag to pull; defaults to "latest". Ignored when Digest is set.
	// +optional
	Tag string `json:"tag,omitempty"`

	// Digest pins the artifact ("sha256:...").
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +optional
	Digest string `json:"digest,omitempty"`

	// SecretRef names a Secret of type kubernetes.io/dockerconfigjson with registry credentials.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// Insecure allows a plain-HTTP registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// LocalObjectReference names an object in the Service's namespace.
type LocalObjectReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// InputsReference names a Secret or ConfigMap holding inputs.
type InputsReference struct {
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	Kind string `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Optional allows the object to be missing.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// NodePhase is where a node template stands.
type NodePhase string

const (
	// NodePending waits for the nodes it depends on.
	NodePending NodePhase = "Pending"
	// NodeProgressing has its objects applied and waits for them to become healthy.
	NodeProgressing NodePhase = "Progressing"
	// NodeConfiguring runs its lifecycle operations.
	NodeConfiguring NodePhase = "Configuring"
	// NodeReady has healthy objects and ran its operations.
	NodeReady NodePhase = "Ready"
	// NodeFailed could not be applied, its objects failed, or an operation failed.
	NodeFailed NodePhase = "Failed"
)

// NodeStatus is the state of one node template.
type NodeStatus struct {
	// Name of the node template.
	Name string `json:"name"`
	// Type of the node template (most derived).
	Type string `json:"type"`
	// Phase of the node.
	Phase NodePhase `json:"phase"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// Reason is the machine-readable cause of a Failed phase when one is known:
	// FailedCreate (admission refused the workload's pods: Pod Security, a quota, a missing
	// service account), ErrImagePull, ImagePullBackOff, CrashLoopBackOff,
	// CreateContainerConfigError, OperationFailed, …
	// +optional
	Reason string `json:"reason,omitempty"`
	// Objects of the node, as Kind/name.
	// +optional
	Objects []string `json:"objects,omitempty"`
	// WaitingFor names what the node waits for: a node ("node db") or an object.
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`
	// DependsOn names the nodes this node waits for.
	// +optional
	DependsOn []string `json:"dependsOn,omitempty"`
	// Attributes observed on the node's objects or set by its operations.
	// +optional
	Attributes map[string]apiextensionsv1.JSON `json:"attributes,omitempty"`
	// Operations run on the node.
	// +optional
	Operations []NodeOperationStatus `json:"operations,omitempty"`
	// Service is the Service a node template substituted by a service template of the
	// package is deployed as (in the Service's namespace).
	// +optional
	Service string `json:"service,omitempty"`
}

// NodeOperationStatus is the last run of a lifecycle operation on a node.
type NodeOperationStatus struct {
	// Name is "Interface.operation".
	Name string `json:"name"`
	// Phase: Pending, Running, Succeeded or Failed (the phases of an Operation).
	Phase OperationPhase `json:"phase"`
	// Fingerprint of what the operation ran with: artifact, inputs, package revision.
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`
	// Pods the operation succeeded in, for this fingerprint.
	// +optional
	Pods []string `json:"pods,omitempty"`
	// Attempts of the current fingerprint: the runs started with it.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// Failures in a row with the current fingerprint; the operation is retried, with
	// backoff, while they do not exceed its artifact's retries.
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// Message of the last run: the error and the tail of its stderr when it failed.
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	LastRunTime *metav1.Time `json:"lastRunTime,omitempty"`
	// Attributes the operation set (calaf.setAttribute); they are the node's TOSCA
	// attributes too, ahead of those observed on its objects.
	// +optional
	Attributes map[string]apiextensionsv1.JSON `json:"attributes,omitempty"`
}

// PackageStatus describes the package a Service last fetched.
type PackageStatus struct {
	// Revision: "sha256:<hex>" for archives, "<branch>@sha1:<commit>" for git,
	// "<tag>@sha256:<digest>" for OCI.
	Revision string `json:"revision"`
	// Digest of the package's files (sha256 over paths and contents).
	Digest string `json:"digest"`
	// Entry is the entry service template in the package.
	// +optional
	Entry string `json:"entry,omitempty"`
	// Template name and version from the template's metadata.
	// +optional
	TemplateName string `json:"templateName,omitempty"`
	// +optional
	TemplateVersion string `json:"templateVersion,omitempty"`
	// Signer is the certificate that signed the package, when its signature verified.
	// +optional
	Signer *PackageSigner `json:"signer,omitempty"`
	// Verification says how the package's signature was verified.
	// +optional
	Verification *PackageVerification `json:"verification,omitempty"`
}

// PackageSigner describes the certificate that signed a package.
type PackageSigner struct {
	// Subject and Issuer are distinguished names as in RFC 2253 ("CN=...,O=...").
	Subject string `json:"subject"`
	Issuer  string `json:"issuer"`
	// Serial number, in hex as openssl prints it.
	Serial string `json:"serial"`
	// NotAfter is when the certificate expires: from then on, the package is refused.
	NotAfter metav1.Time `json:"notAfter"`
	// Anchor is the subject of the trust anchor the chain ends at.
	// +optional
	Anchor string `json:"anchor,omitempty"`
}

// PackageVerification says how a package's signature was verified.
type PackageVerification struct {
	// Mode of the policy applied: Enforce, Warn, or Off (no policy: signatures not checked).
	Mode string `json:"mode"`
	// Method: SignedManifest (SOL004 option 1), SignedCSAR (option 2) or Unsigned.
	Method string `json:"method"`
	// Verified tells whether every signature chains to an anchor and nothing was refused.
	Verified bool `json:"verified"`
	// SignedArtifacts counts the artifacts whose own signatures were verified.
	// +optional
	SignedArtifacts int32 `json:"signedArtifacts,omitempty"`
	// Message says what was verified, or (Warn) why verification failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// InventoryEntry is an object the Service applied.
type InventoryEntry struct {
	// ID is "<namespace>_<name>_<group>_<kind>".
	ID string `json:"id"`
	// Version is the API version the object was applied with.
	Version string `json:"v"`
	// Applied identifies what was last applied and the operator's fields the API server
	// then held (a short hash), so that an operator that restarts skips the applies that
	// would change nothing.
	// +optional
	Applied string `json:"h,omitempty"`
}

// ServiceStatus is the observed state of a Service.
type ServiceStatus struct {
	// ObservedGeneration is the last generation reconciled to Ready.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Package last fetched.
	// +optional
	Package *PackageStatus `json:"package,omitempty"`
	// LastAppliedRevision is the revision whose objects were last applied successfully.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`
	// ShortRevision is LastAppliedRevision with its digest cut to 12 hex digits, for
	// `kubectl get csvc` (main@sha1:2f6c0a1b3c4d).
	// +optional
	ShortRevision string `json:"shortRevision,omitempty"`
	// LastAttemptedRevision is the revision last tried.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`
	// Outputs of the service template, evaluated from live attributes.
	// +optional
	Outputs map[string]apiextensionsv1.JSON `json:"outputs,omitempty"`
	// PendingOutputs says why an output has no value yet.
	// +optional
	PendingOutputs map[string]string `json:"pendingOutputs,omitempty"`
	// Nodes is the state of each node template, in deployment order.
	// +optional
	Nodes []NodeStatus `json:"nodes,omitempty"`
	// Inventory lists the objects the Service applied, in deployment order.
	// +optional
	Inventory []InventoryEntry `json:"inventory,omitempty"`
	// LastHandledReconcileAt is the last value of the reconcile-request annotation handled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// VNF is the state of an ETSI SOL001 VNF: its flavour and level, each VDU's replicas,
	// each scaling aspect's level.
	// +optional
	VNF *VNFStatus `json:"vnf,omitempty"`
	// Warnings of the last render: the real-world idioms the package relies on that were
	// tolerated, and what was adjusted (at most 20, located in the package).
	// +optional
	Warnings []string `json:"warnings,omitempty"`
	// Lifecycle is what lifecycle operations read of the package: its scaling aspects and
	// their levels, the hooks of its nodes, its alert rules.
	// +optional
	Lifecycle *LifecycleStatus `json:"lifecycle,omitempty"`
	// InstantiationState is INSTANTIATED once the Service deploys its package, and
	// NOT_INSTANTIATED once a Service whose spec says NOT_INSTANTIATED has nothing left
	// running.
	// +optional
	InstantiationState InstantiationState `json:"instantiationState,omitempty"`
	// Cluster is the API server of the cluster the objects of the inventory are in (the
	// server of spec.kubeConfig's kubeconfig); empty for the operator's own cluster.
	// +optional
	Cluster string `json:"cluster,omitempty"`
}

// VNFStatus is the instantiated state of an ETSI SOL001 VNF.
type VNFStatus struct {
	// FlavourID is the deployment flavour deployed.
	FlavourID string `json:"flavourId"`
	// Flavours are every deployment flavour of the package (what a CHANGE_FLAVOUR may
	// move to).
	// +optional
	Flavours []string `json:"flavours,omitempty"`
	// VnfdID, VnfProvider, VnfProductName, VnfSoftwareVersion and VnfdVersion are the VNF
	// node's descriptor_id, provider, product_name, software_version and
	// descriptor_version (SOL003 names).
	// +optional
	VnfdID string `json:"vnfdId,omitempty"`
	// +optional
	VnfProvider string `json:"vnfProvider,omitempty"`
	// +optional
	VnfProductName string `json:"vnfProductName,omitempty"`
	// +optional
	VnfSoftwareVersion string `json:"vnfSoftwareVersion,omitempty"`
	// +optional
	VnfdVersion string `json:"vnfdVersion,omitempty"`
	// InstantiationLevelID is the instantiation level deployed ("" when the flavour has none).
	// +optional
	InstantiationLevelID string `json:"instantiationLevelId,omitempty"`
	// VDUs lists each VDU with its workload and replicas.
	// +optional
	VDUs []VDUStatus `json:"vdus,omitempty"`
	// ScaleStatus is the scale level of each scaling aspect (SOL003 scaleStatus).
	// +optional
	ScaleStatus []ScaleInfo `json:"scaleStatus,omitempty"`
	// MaxScaleLevels is the highest scale level of each scaling aspect.
	// +optional
	MaxScaleLevels []ScaleInfo `json:"maxScaleLevels,omitempty"`
}

// VDUStatus is a VDU and the workload realizing it.
type VDUStatus struct {
	// VduID is the VDU's node template.
	VduID string `json:"vduId"`
	// Workload is the "Kind/name" of the workload.
	Workload string `json:"workload"`
	// DesiredReplicas is the number of instances of the instantiation level.
	DesiredReplicas int32 `json:"desiredReplicas"`
	// ReadyReplicas is the number of ready pods observed.
	ReadyReplicas int32 `json:"readyReplicas"`
}

// ScaleInfo is the scale level of a scaling aspect.
type ScaleInfo struct {
	// +kubebuilder:validation:MinLength=1
	AspectID string `json:"aspectId"`
	// +kubebuilder:validation:Minimum=0
	ScaleLevel int32 `json:"scaleLevel"`
}

// Service is a network service described in TOSCA, deployed and run by Calaf.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=csvc,categories=calaf
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.shortRevision`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.instantiationState`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type Service struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ServiceSpec `json:"spec,omitempty"`
	// +optional
	Status ServiceStatus `json:"status,omitempty"`
}

// ServiceList is a list of Services.
// +kubebuilder:object:root=true
type ServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Service `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Service{}, &ServiceList{})
}
