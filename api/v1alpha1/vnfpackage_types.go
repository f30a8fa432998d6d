package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VNF package management (SOL005 / SOL003 VNF package management): a VnfPackage is an
// onboarded ETSI VNF package of a namespace. Its content (a SOL004 CSAR, possibly hundreds
// of MB with charts and images) is not in the resource: spec.source says where it is (an
// OCI artifact by digest, an upload ConfigMap for small packages, or a URL); the operator
// onboards it — fetches it, makes the SOL004 checks under the trust policy, reads the VNFD
// — and records what it found in the status. Services name it by VNFD id
// (spec.source.vnfPackage).

// OnboardingState is SOL005's PackageOnboardingStateType.
type OnboardingState string

const (
	// OnboardingCreated: the package exists, no content yet.
	OnboardingCreated OnboardingState = "CREATED"
	// OnboardingUploading: content is being uploaded.
	OnboardingUploading OnboardingState = "UPLOADING"
	// OnboardingProcessing: the content is fetched and checked.
	OnboardingProcessing OnboardingState = "PROCESSING"
	// OnboardingOnboarded: checked and usable.
	OnboardingOnboarded OnboardingState = "ONBOARDED"
	// OnboardingError: the content was refused (status.onboardingFailure says why).
	OnboardingError OnboardingState = "ERROR"
)

// PackageOperationalState is SOL005's PackageOperationalStateType.
// +kubebuilder:validation:Enum=ENABLED;DISABLED
type PackageOperationalState string

const (
	PackageEnabled  PackageOperationalState = "ENABLED"
	PackageDisabled PackageOperationalState = "DISABLED"
)

// PackageUsageState is SOL005's PackageUsageStateType.
type PackageUsageState string

const (
	PackageInUse    PackageUsageState = "IN_USE"
	PackageNotInUse PackageUsageState = "NOT_IN_USE"
)

// VnfPackageSpec says where a package's content is and whether it may be used.
// +kubebuilder:validation:XValidation:rule="!has(self.source) || !has(self.source.vnfPackage)",message="a VnfPackage's source cannot be another VnfPackage"
type VnfPackageSpec struct {
	// Source of the content: an OCI artifact (by digest), an upload ConfigMap, or a URL
	// (SOL005 upload from URI). Empty until content is uploaded. Every member of a
	// Service's source may be used, but vnfPackage.
	// +optional
	Source *Source `json:"source,omitempty"`

	// OperationalState: ENABLED packages may be instantiated; DISABLED ones may not (and
	// only DISABLED packages that no Service uses may be deleted). Defaults to ENABLED.
	// +kubebuilder:default=ENABLED
	// +optional
	OperationalState PackageOperationalState `json:"operationalState,omitempty"`

	// UserDefinedData is free-form data of the owner (SOL005 KeyValuePairs, string values).
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	UserDefinedData map[string]string `json:"userDefinedData,omitempty"`

	// Verify overrides how the package's signature is verified, as on a Service.
	// +optional
	Verify *VerifySpec `json:"verify,omitempty"`
}

// PackageChecksum is a digest of a package or an artifact.
type PackageChecksum struct {
	// Algorithm, as SOL005 names it: SHA-256, SHA-512.
	Algorithm string `json:"algorithm"`
	// Hash in hex.
	Hash string `json:"hash"`
}

// PackageSoftwareImage is a software image a VNFD declares (SOL005
// VnfPackageSoftwareImageInfo, the fields a container package has).
type PackageSoftwareImage struct {
	// ID is the VDU's or the artifact's name.
	ID string `json:"id"`
	// Name and Version of the image (sw_image_data, or the artifact's properties).
	Name string `json:"name"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	ContainerFormat string `json:"containerFormat,omitempty"`
	// +optional
	DiskFormat string `json:"diskFormat,omitempty"`
	// +optional
	Provider string `json:"provider,omitempty"`
	// +optional
	Size int64 `json:"size,omitempty"`
	// ImagePath in the package, or the image reference.
	// +optional
	ImagePath string `json:"imagePath,omitempty"`
	// +optional
	Checksum *PackageChecksum `json:"checksum,omitempty"`
}

// PackageArtifact is a file of the package that is no VNFD nor manifest (SOL005
// VnfPackageArtifactInfo).
type PackageArtifact struct {
	// ArtifactPath in the package.
	ArtifactPath string `json:"artifactPath"`
	// +optional
	Checksum *PackageChecksum `json:"checksum,omitempty"`
	// NonManoArtifactSetID, when the manifest groups it into a non-MANO set.
	// +optional
	NonManoArtifactSetID string `json:"nonManoArtifactSetId,omitempty"`
}

// VnfPackageStatus is what onboarding found.
type VnfPackageStatus struct {
	// ObservedGeneration is the generation the operator last looked at.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// OnboardingState: CREATED, UPLOADING, PROCESSING, ONBOARDED or ERROR.
	// +optional
	OnboardingState OnboardingState `json:"onboardingState,omitempty"`
	// UsageState: IN_USE while a Service names the package's VNFD id.
	// +optional
	UsageState PackageUsageState `json:"usageState,omitempty"`
	// Revision of the content onboarded, as a Service's status.package.revision says it;
	// Services using the package fetch exactly it.
	// +optional
	Revision string `json:"revision,omitempty"`
	// OnboardedSource and OnboardedVerify are the spec.source and spec.verify that the
	// onboarding this status describes read: onboarding runs again when either changes,
	// not when the operational state or the user's data do.
	// +optional
	OnboardedSource *Source `json:"onboardedSource,omitempty"`
	// +optional
	OnboardedVerify *VerifySpec `json:"onboardedVerify,omitempty"`
	// Checksum of the package's content as uploaded.
	// +optional
	Checksum *PackageChecksum `json:"checksum,omitempty"`
	// Size of the content in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`

	// VnfdID and the VNF's identity, read from the VNFD's VNF node.
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
	// Flavours are the VNFD's deployment flavours.
	// +optional
	Flavours []string `json:"flavours,omitempty"`
	// CompatibleSpecificationVersions of the VNFD (SOL001 versions).
	// +optional
	CompatibleSpecificationVersions []string `json:"compatibleSpecificationVersions,omitempty"`
	// PackageSecurityOption: OPTION_1 (signed manifest) or OPTION_2 (signed CSAR), when
	// signed.
	// +optional
	PackageSecurityOption string `json:"packageSecurityOption,omitempty"`
	// Signer is the certificate that signed the package, when its signature verified.
	// +optional
	Signer *PackageSigner `json:"signer,omitempty"`
	// Verification says how the package's signature was verified.
	// +optional
	Verification *PackageVerification `json:"verification,omitempty"`
	// SoftwareImages the VNFD declares.
	// +kubebuilder:validation:MaxItems=256
	// +optional
	SoftwareImages []PackageSoftwareImage `json:"softwareImages,omitempty"`
	// AdditionalArtifacts of the package.
	// +kubebuilder:validation:MaxItems=1024
	// +optional
	AdditionalArtifacts []PackageArtifact `json:"additionalArtifacts,omitempty"`
	// OnboardingFailure says why the content was refused (ERROR).
	// +optional
	OnboardingFailure string `json:"onboardingFailure,omitempty"`

	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VnfPackage is an ETSI VNF package of a namespace: where its content is, and what its
// onboarding found (SOL005 VnfPkgInfo).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vnfpkg,categories=calaf
// +kubebuilder:printcolumn:name="VNFD",type=string,JSONPath=`.status.vnfdId`
// +kubebuilder:printcolumn:name="Onboarding",type=string,JSONPath=`.status.onboardingState`
// +kubebuilder:printcolumn:name="Operational",type=string,JSONPath=`.spec.operationalState`
// +kubebuilder:printcolumn:name="Usage",type=string,JSONPath=`.status.usageState`
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.status.vnfProvider`,priority=1
// +kubebuilder:printcolumn:name="Product",type=string,JSONPath=`.status.vnfProductName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VnfPackage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VnfPackageSpec `json:"spec,omitempty"`
	// +optional
	Status VnfPackageStatus `json:"status,omitempty"`
}

// VnfPackageList is a list of VnfPackages.
// +kubebuilder:object:root=true
type VnfPackageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VnfPackage `json:"items"`
}

// VNF package labels and finalizer.
const (
	// LabelVnfdID on a Service names the VNFD id of the VnfPackage it uses (set by the
	// operator), so that a package's users are found by a label selector: the VNFD id
	// itself when it is a valid label value, else "sha256-" and the first 40 hex digits of
	// its SHA-256.
	LabelVnfdID = "calaf.io/vnfd-id"
	// VnfPackageFinalizer keeps a VnfPackage that a Service uses from going.
	VnfPackageFinalizer = "calaf.io/vnf-package-in-use"
)

func init() {
	SchemeBuilder.Register(&VnfPackage{}, &VnfPackageList{})
}
