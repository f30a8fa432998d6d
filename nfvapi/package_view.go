package nfvapi

import (
	"net/http"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/nfvapi/sol013"
)

// VnfPkgInfo is SOL005's VnfPkgInfo: a VnfPackage as the VNF package management
// interface shows it.
type VnfPkgInfo struct {
	ID                              string              `json:"id"`
	VnfdID                          string              `json:"vnfdId,omitempty"`
	VnfProvider                     string              `json:"vnfProvider,omitempty"`
	VnfProductName                  string              `json:"vnfProductName,omitempty"`
	VnfSoftwareVersion              string              `json:"vnfSoftwareVersion,omitempty"`
	VnfdVersion                     string              `json:"vnfdVersion,omitempty"`
	CompatibleSpecificationVersions []string            `json:"compatibleSpecificationVersions,omitempty"`
	Checksum                        *pkgChecksum        `json:"checksum,omitempty"`
	PackageSecurityOption           string              `json:"packageSecurityOption,omitempty"`
	SoftwareImages                  []softwareImageInfo `json:"softwareImages,omitempty"`
	AdditionalArtifacts             []pkgArtifactInfo   `json:"additionalArtifacts,omitempty"`
	OnboardingState                 string              `json:"onboardingState"`
	OperationalState                string              `json:"operationalState"`
	UsageState                      string              `json:"usageState"`
	UserDefinedData                 map[string]string   `json:"userDefinedData,omitempty"`
	OnboardingFailureDetails        *sol013.Problem     `json:"onboardingFailureDetails,omitempty"`
	Links                           vnfPkgLinks         `json:"_links"`
}

type pkgChecksum struct {
	Algorithm string `json:"algorithm"`
	Hash      string `json:"hash"`
}

// softwareImageInfo is SOL005's VnfPackageSoftwareImageInfo.
type softwareImageInfo struct {
	ID              string      `json:"id"`
	Name            string      `json:"name"`
	Provider        string      `json:"provider"`
	Version         string      `json:"version"`
	Checksum        pkgChecksum `json:"checksum"`
	ContainerFormat string      `json:"containerFormat"`
	DiskFormat      string      `json:"diskFormat"`
	Size            int64       `json:"size"`
	ImagePath       string      `json:"imagePath"`
}

// pkgArtifactInfo is SOL005's VnfPackageArtifactInfo.
type pkgArtifactInfo struct {
	ArtifactPath         string      `json:"artifactPath"`
	Checksum             pkgChecksum `json:"checksum"`
	NonManoArtifactSetID string      `json:"nonManoArtifactSetId,omitempty"`
}

type vnfPkgLinks struct {
	Self           Link  `json:"self"`
	Vnfd           *Link `json:"vnfd,omitempty"`
	PackageContent Link  `json:"packageContent"`
}

// packageShape is VnfPkgInfo to the SOL013 selectors: the complex attributes SOL005
// leaves out by default.
var packageShape = shapeOf(VnfPkgInfo{}, []string{"id", "onboardingState", "operationalState", "usageState", "_links"},
	[]string{"softwareImages", "additionalArtifacts", "userDefinedData", "checksum", "onboardingFailureDetails"})

// packagesPath is where the VNF packages are served.
const packagesPath = "/vnfpkgm/v1/vnf_packages"

// packageView shows a VnfPackage. A package that is not ONBOARDED is DISABLED whatever
// its spec says (SOL005: only an onboarded package may be enabled).
func packageView(base string, pkg *v1alpha1.VnfPackage) VnfPkgInfo {
	st := &pkg.Status
	self := base + packagesPath + "/" + pkg.Name
	view := VnfPkgInfo{ID: pkg.Name, VnfdID: st.VnfdID, VnfProvider: st.VnfProvider, VnfProductName: st.VnfProductName,
		VnfSoftwareVersion: st.VnfSoftwareVersion, VnfdVersion: st.VnfdVersion, CompatibleSpecificationVersions: st.CompatibleSpecificationVersions,
		PackageSecurityOption: st.PackageSecurityOption, OnboardingState: string(onboardingState(pkg)),
		OperationalState: string(operationalState(pkg)), UsageState: string(v1alpha1.PackageNotInUse), UserDefinedData: pkg.Spec.UserDefinedData,
		Links: vnfPkgLinks{Self: Link{Href: self}, PackageContent: Link{Href: self + "/package_content"}}}
	if st.UsageState != "" {
		view.UsageState = string(st.UsageState)
	}
	if st.Checksum != nil {
		view.Checksum = &pkgChecksum{Algorithm: st.Checksum.Algorithm, Hash: st.Checksum.Hash}
	}
	for _, image := range st.SoftwareImages {
		view.SoftwareImages = append(view.SoftwareImages, softwareImageInfo{ID: image.ID, Name: image.Name, Provider: image.Provider,
			Version: image.Version, Checksum: checksumView(image.Checksum), ContainerFormat: image.ContainerFormat,
			DiskFormat: image.DiskFormat, Size: image.Size, ImagePath: image.ImagePath})
	}
	for _, a := range st.AdditionalArtifacts {
		view.AdditionalArtifacts = append(view.AdditionalArtifacts, pkgArtifactInfo{ArtifactPath: a.ArtifactPath,
			Checksum: checksumView(a.Checksum), NonManoArtifactSetID: a.NonManoArtifactSetID})
	}
	if view.OnboardingState == string(v1alpha1.OnboardingOnboarded) {
		view.Links.Vnfd = &Link{Href: self + "/vnfd"}
	}
	if view.OnboardingState == string(v1alpha1.OnboardingError) {
		view.OnboardingFailureDetails = &sol013.Problem{Status: http.StatusUnprocessableEntity, Title: "Onboarding failed", Detail: st.OnboardingFailure}
	}
	return view
}

func checksumView(c *v1alpha1.PackageChecksum) pkgChecksum {
	if c == nil {
		return pkgChecksum{}
	}
	return pkgChecksum{Algorithm: c.Algorithm, Hash: c.Hash}
}

// onboardingState is the package's onboarding state as SOL005 says it: the operator's,
// and before the operator looked at it, CREATED until it has content, then UPLOADING.
func onboardingState(pkg *v1alpha1.VnfPackage) v1alpha1.OnboardingState {
	switch st := pkg.Status.OnboardingState; {
	case st != "" && st != v1alpha1.OnboardingCreated:
		return st
	case pkg.Spec.Source != nil:
		return v1alpha1.OnboardingUploading
	}
	return v1alpha1.OnboardingCreated
}

// operationalState is the package's operational state: DISABLED until it is onboarded.
func operationalState(pkg *v1alpha1.VnfPackage) v1alpha1.PackageOperationalState {
	if pkg.Status.OnboardingState != v1alpha1.OnboardingOnboarded || pkg.Spec.OperationalState == v1alpha1.PackageDisabled {
		return v1alpha1.PackageDisabled
	}
	return v1alpha1.PackageEnabled
}
