package onboarding

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// setOnboarded records what onboarding found (SOL005 VnfPkgInfo): the content's revision,
// checksum and size, how its signature was verified, and the VNFD's identity, flavours,
// software images and artifacts.
func setOnboarded(pkg *v1alpha1.VnfPackage, artifact *source.Artifact, vnfd *tosca.PackageVNFD) {
	id := vnfd.Identity
	st := v1alpha1.VnfPackageStatus{
		ObservedGeneration: pkg.Generation, OnboardingState: v1alpha1.OnboardingOnboarded, UsageState: pkg.Status.UsageState,
		Revision: artifact.Revision, Conditions: pkg.Status.Conditions,
		OnboardedSource: pkg.Status.OnboardedSource, OnboardedVerify: pkg.Status.OnboardedVerify,
		VnfdID: id.DescriptorID, VnfProvider: id.Provider, VnfProductName: id.ProductName,
		VnfSoftwareVersion: id.SoftwareVersion, VnfdVersion: id.DescriptorVersion,
		Flavours: vnfd.Flavours, CompatibleSpecificationVersions: vnfd.CompatibleSpecificationVersions,
		Signer: artifact.Signer, Verification: artifact.Verification,
	}
	if a := artifact.Archive; a != nil {
		st.Checksum, st.Size = &v1alpha1.PackageChecksum{Algorithm: "SHA-256", Hash: a.SHA256}, a.Size
	} else {
		for _, f := range artifact.Package.Files {
			st.Size += f.Size
		}
	}
	if v := artifact.Verification; v != nil {
		switch v.Method {
		case "SignedManifest":
			st.PackageSecurityOption = "OPTION_1"
		case "SignedCSAR":
			st.PackageSecurityOption = "OPTION_2"
		}
	}
	for _, image := range vnfd.SoftwareImages {
		st.SoftwareImages = append(st.SoftwareImages, v1alpha1.PackageSoftwareImage{ID: image.ID, Name: image.Name, Version: image.Version,
			ContainerFormat: image.ContainerFormat, DiskFormat: image.DiskFormat, Provider: image.Provider, Size: image.Size,
			ImagePath: image.ImagePath, Checksum: checksum(image.Checksum)})
	}
	for _, a := range vnfd.Artifacts {
		st.AdditionalArtifacts = append(st.AdditionalArtifacts, v1alpha1.PackageArtifact{ArtifactPath: a.Path, Checksum: checksum(a.Checksum),
			NonManoArtifactSetID: a.NonManoArtifactSetID})
	}
	pkg.Status = st
	setReady(pkg, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "onboarded "+describe(pkg))
}

func checksum(c *tosca.Checksum) *v1alpha1.PackageChecksum {
	if c == nil {
		return nil
	}
	return &v1alpha1.PackageChecksum{Algorithm: c.Algorithm, Hash: c.Hash}
}
