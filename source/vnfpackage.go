package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// VnfdLabel is the value of the label calaf.io/vnfd-id for a VNFD id: the id itself when
// it is a valid label value, else "sha256-" and the first 40 hex digits of its SHA-256.
func VnfdLabel(vnfdID string) string {
	if len(validation.IsValidLabelValue(vnfdID)) == 0 {
		return vnfdID
	}
	sum := sha256.Sum256([]byte(vnfdID))
	return "sha256-" + hex.EncodeToString(sum[:])[:40]
}

// FetchPackage fetches the content of a VnfPackage, as a Service of its namespace whose
// source and verification are the package's would be fetched (with the identity such a
// Service acts with), and verifies it under the operator's policy made stricter by the
// package's spec.verify. The artifact says the archive's digest and size when its source
// is an archive.
func (f *Fetcher) FetchPackage(ctx context.Context, pkg *v1alpha1.VnfPackage) (*Artifact, error) {
	src := pkg.Spec.Source
	switch {
	case src == nil:
		return nil, permanent(v1alpha1.ReasonInvalidSource, "the package has no content yet (spec.source)")
	case src.VnfPackage != nil:
		return nil, permanent(v1alpha1.ReasonInvalidSource, "a VnfPackage's source cannot be another VnfPackage")
	}
	svc := &v1alpha1.Service{}
	svc.Namespace, svc.Name, svc.UID = pkg.Namespace, pkg.Name, pkg.UID
	svc.Spec.Source, svc.Spec.Verify = *src, pkg.Spec.Verify
	return f.Fetch(ctx, svc)
}

// fetchVnfPackage fetches the package of a Service that names a VnfPackage by VNFD id:
// the namespace's VnfPackage of that id, read as the identity the Service acts with, from
// the source and at the revision its onboarding verified — if the Service may use it
// (usable).
func (f *Fetcher) fetchVnfPackage(ctx context.Context, svc *v1alpha1.Service) (*Artifact, error) {
	reader, err := readerOf(f.ReaderFor, f.Reader, svc)
	if err != nil {
		return nil, err
	}
	pkg, err := ResolveVnfPackage(ctx, reader, svc.Namespace, svc.Spec.Source.VnfPackage.VnfdID)
	if notFound(err) && f.NFVO != nil {
		return f.fetchFromNFVO(ctx, svc.Spec.Source.VnfPackage.VnfdID)
	}
	if err != nil {
		return nil, err
	}
	if err := usable(pkg, svc); err != nil {
		return nil, err
	}
	pinned, err := PinSource(*pkg.Status.OnboardedSource, pkg.Status.Revision)
	if err != nil {
		return nil, permanent(v1alpha1.ReasonInvalidSource, "VnfPackage %s: %v", pkg.Name, err)
	}
	at := svc.DeepCopy()
	at.Spec.Source = pinned
	return f.fetch(ctx, at)
}

// ResolveVnfPackage returns the VnfPackage of a namespace that holds a VNFD id: among
// those labelled with it (VnfdLabel) whose status says that id, an ONBOARDED one (the
// oldest if several), else the one whose onboarding is under way or failed. Nothing
// found is a VnfPackageNotFound error; a refused read an AccessDenied one.
func ResolveVnfPackage(ctx context.Context, reader client.Reader, namespace, vnfdID string) (*v1alpha1.VnfPackage, error) {
	list := &v1alpha1.VnfPackageList{}
	err := reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{v1alpha1.LabelVnfdID: VnfdLabel(vnfdID)})
	switch {
	case apierrors.IsForbidden(err):
		return nil, permanent(v1alpha1.ReasonAccessDenied, "reading the VnfPackages of namespace %s: %v", namespace, err)
	case err != nil:
		return nil, transient(v1alpha1.ReasonFetchFailed, "reading the VnfPackages of namespace %s: %v", namespace, err)
	}
	var found []v1alpha1.VnfPackage
	for _, pkg := range list.Items {
		if pkg.Status.VnfdID == vnfdID {
			found = append(found, pkg)
		}
	}
	if len(found) == 0 {
		return nil, permanent(v1alpha1.ReasonVnfPackageNotFound, "no VnfPackage of namespace %s holds VNFD %s", namespace, shortID(vnfdID))
	}
	sort.SliceStable(found, func(i, j int) bool {
		a, b := &found[i], &found[j]
		if onboarded(a) != onboarded(b) {
			return onboarded(a)
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return &found[0], nil
}

// onboarded tells whether a package's status says ONBOARDED, with the source and
// revision onboarding verified.
func onboarded(pkg *v1alpha1.VnfPackage) bool {
	return pkg.Status.OnboardingState == v1alpha1.OnboardingOnboarded && pkg.Status.OnboardedSource != nil && pkg.Status.Revision != ""
}

// usable tells whether a Service may use a package: ONBOARDED, and ENABLED and not being
// deleted — unless the Service already fetched the package's revision (it runs it: a
// package disabled or deleted does not stop what runs). A package being onboarded is
// waited for (transient); one refused, disabled or going stalls the Service.
func usable(pkg *v1alpha1.VnfPackage, svc *v1alpha1.Service) error {
	name := pkg.Name
	switch {
	case pkg.Status.OnboardingState == v1alpha1.OnboardingError:
		return permanent(v1alpha1.ReasonVnfPackageNotReady, "VnfPackage %s was refused: %s", name, pkg.Status.OnboardingFailure)
	case !onboarded(pkg):
		return transient(v1alpha1.ReasonVnfPackageNotReady, "VnfPackage %s is being onboarded", name)
	}
	runs := svc.Status.Package != nil && revisionDigest(svc.Status.Package.Revision) == revisionDigest(pkg.Status.Revision)
	switch {
	case runs:
		return nil
	case pkg.DeletionTimestamp != nil:
		return permanent(v1alpha1.ReasonVnfPackageNotReady, "VnfPackage %s is being deleted: it cannot be newly instantiated", name)
	case pkg.Spec.OperationalState == v1alpha1.PackageDisabled:
		return permanent(v1alpha1.ReasonVnfPackageDisabled, "VnfPackage %s is DISABLED: it cannot be newly instantiated (enable it: operationalState ENABLED)", name)
	}
	return nil
}

// ociDigest is the digest at the end of an OCI revision ("tag@sha256:…" or "sha256:…").
var ociDigest = regexp.MustCompile(`(?:^|@)(sha256:[a-f0-9]{64})$`)

// gitCommit is the commit at the end of a git revision ("main@sha1:…").
var gitCommit = regexp.MustCompile(`@sha1:([a-f0-9]{40})$`)

// archiveDigest is the revision of an archive ("sha256:…").
var archiveDigest = regexp.MustCompile(`^sha256:([a-f0-9]{64})$`)

// PinSource returns a source that fetches exactly revision (as a fetch of src reported
// it): an OCI artifact by its digest, a git repository at its commit, an archive (URL or
// upload) by its SHA-256.
func PinSource(src v1alpha1.Source, revision string) (v1alpha1.Source, error) {
	pinned := *src.DeepCopy()
	switch {
	case src.OCI != nil:
		m := ociDigest.FindStringSubmatch(revision)
		if m == nil {
			return src, fmt.Errorf("revision %q is not an OCI digest", revision)
		}
		pinned.OCI.Digest, pinned.OCI.Tag = m[1], ""
	case src.Git != nil:
		m := gitCommit.FindStringSubmatch(revision)
		if m == nil {
			return src, fmt.Errorf("revision %q names no git commit", revision)
		}
		pinned.Git.Ref = &v1alpha1.GitRef{Commit: m[1]}
	case src.Upload != nil, src.URL != "":
		m := archiveDigest.FindStringSubmatch(revision)
		if m == nil {
			return src, fmt.Errorf("revision %q is not an archive's sha256", revision)
		}
		if src.Upload != nil {
			if src.Upload.SHA256 != m[1] {
				return src, fmt.Errorf("revision %s is not the upload's (sha256:%s)", revision, src.Upload.SHA256)
			}
		} else {
			pinned.SHA256 = m[1]
		}
	default:
		return src, fmt.Errorf("the source names no package")
	}
	return pinned, nil
}

// revisionDigest is the digest that ends a revision: a fetch of a pinned source reports
// "sha256:…" where the fetch it was pinned from reported "tag@sha256:…".
func revisionDigest(revision string) string {
	if i := strings.LastIndex(revision, "@"); i >= 0 {
		return revision[i+1:]
	}
	return revision
}

// shortID shortens a long VNFD id for messages.
func shortID(id string) string {
	if len(id) > 80 {
		return strings.ToValidUTF8(id[:77], "") + "..."
	}
	return id
}
