package onboarding

import (
	"context"
	"errors"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// maxFailure bounds status.onboardingFailure.
const maxFailure = 1024

// onboard brings the onboarding of the package's content (spec.source and spec.verify)
// to its end: PROCESSING (written at once, so that it is seen while the content is
// fetched), then ONBOARDED or ERROR. A package without content is CREATED; one whose
// status says how the onboarding of this content ended is left alone (a change of its
// operational state or user data onboards nothing again). A failure that may pass
// (network, no worker) keeps it PROCESSING and is returned, to be retried with backoff.
func (r *Reconciler) onboard(ctx context.Context, pkg, before *v1alpha1.VnfPackage) error {
	st := &pkg.Status
	st.ObservedGeneration = pkg.Generation
	if pkg.Spec.Source == nil {
		setCreated(pkg)
		return nil
	}
	same := apiequality.Semantic.DeepEqual(st.OnboardedSource, pkg.Spec.Source) && apiequality.Semantic.DeepEqual(st.OnboardedVerify, pkg.Spec.Verify)
	if same && (st.OnboardingState == v1alpha1.OnboardingOnboarded || st.OnboardingState == v1alpha1.OnboardingError) {
		return nil
	}
	if !same || st.OnboardingState != v1alpha1.OnboardingProcessing {
		st.OnboardingState, st.OnboardingFailure = v1alpha1.OnboardingProcessing, ""
		st.OnboardedSource, st.OnboardedVerify = pkg.Spec.Source.DeepCopy(), pkg.Spec.Verify.DeepCopy()
		setReady(pkg, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "fetching and checking the content")
		if err := r.patchStatus(ctx, before, pkg); err != nil {
			return err
		}
	}
	artifact, err := r.Fetcher.FetchPackage(ctx, pkg)
	if err != nil {
		return r.fetchFailed(ctx, pkg, err)
	}
	vnfd, err := r.ReadVNFD(ctx, artifact.Package)
	if err != nil {
		return r.readFailed(ctx, pkg, err)
	}
	return r.claim(ctx, pkg, before, artifact, vnfd)
}

// fetchFailed records a failed fetch: a transient one keeps the package PROCESSING (the
// condition says why) and is retried; any other refuses the content.
func (r *Reconciler) fetchFailed(ctx context.Context, pkg *v1alpha1.VnfPackage, err error) error {
	var fetchErr *source.Error
	if errors.As(err, &fetchErr) && !fetchErr.Transient {
		return r.refuse(ctx, pkg, fetchErr.Reason, fetchErr.Err.Error())
	}
	if tosca.IsInvalid(err) {
		return r.refuse(ctx, pkg, v1alpha1.ReasonInvalidPackage, firstDiagnostic(err))
	}
	reason := v1alpha1.ReasonFetchFailed
	if fetchErr != nil {
		reason = fetchErr.Reason
	}
	setReady(pkg, metav1.ConditionFalse, reason, text.OneLine(err.Error(), maxFailure))
	return err
}

// readFailed records a failed VNFD read: a problem of the package (including one that
// ended its worker) refuses it; anything else is retried.
func (r *Reconciler) readFailed(ctx context.Context, pkg *v1alpha1.VnfPackage, err error) error {
	if tosca.IsInvalid(err) {
		return r.refuse(ctx, pkg, v1alpha1.ReasonInvalidPackage, "VNFD: "+firstDiagnostic(err))
	}
	setReady(pkg, metav1.ConditionFalse, v1alpha1.ReasonInternalError, text.OneLine("reading the VNFD: "+err.Error(), maxFailure))
	return err
}

// firstDiagnostic words a package problem in one line: its first diagnostic, and how
// many more there are.
func firstDiagnostic(err error) string {
	diags := tosca.DiagnosticsOf(err)
	if len(diags) == 0 {
		return err.Error()
	}
	line := diags[0].String()
	if len(diags) > 1 {
		line += fmt.Sprintf(" (and %d more problems)", len(diags)-1)
	}
	return line
}

// refuse makes the package ERROR: onboardingFailure says why in one line; nothing of the
// content is recorded, and the package holds no VNFD id (its label goes).
func (r *Reconciler) refuse(ctx context.Context, pkg *v1alpha1.VnfPackage, reason, message string) error {
	message = text.OneLine(message, maxFailure)
	pkg.Status = v1alpha1.VnfPackageStatus{ObservedGeneration: pkg.Generation, OnboardingState: v1alpha1.OnboardingError,
		UsageState: pkg.Status.UsageState, OnboardingFailure: message, Conditions: pkg.Status.Conditions,
		OnboardedSource: pkg.Status.OnboardedSource, OnboardedVerify: pkg.Status.OnboardedVerify}
	setReady(pkg, metav1.ConditionFalse, reason, message)
	if r.Recorder != nil {
		r.Recorder.Eventf(pkg, nil, "Warning", reason, "Onboard", "%s", message)
	}
	return r.setLabel(ctx, pkg, "")
}

// claim records the package ONBOARDED with its VNFD id, unless another package of the
// namespace holds that id already (read from the API server under a lock, so that of two
// packages of one id onboarded at once, the second is refused): a namespace has one
// package per VNFD id, as Tacker's package management has.
func (r *Reconciler) claim(ctx context.Context, pkg, before *v1alpha1.VnfPackage, artifact *source.Artifact, vnfd *tosca.PackageVNFD) error {
	id := vnfd.Identity.DescriptorID
	r.claims.Lock()
	defer r.claims.Unlock()
	list := &v1alpha1.VnfPackageList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(pkg.Namespace), client.MatchingLabels{v1alpha1.LabelVnfdID: source.VnfdLabel(id)}); err != nil {
		setReady(pkg, metav1.ConditionFalse, v1alpha1.ReasonInternalError, text.OneLine("listing the namespace's VnfPackages: "+err.Error(), maxFailure))
		return err
	}
	for _, other := range list.Items {
		if other.UID != pkg.UID && other.Status.VnfdID == id && other.Status.OnboardingState == v1alpha1.OnboardingOnboarded {
			return r.refuse(ctx, pkg, v1alpha1.ReasonDuplicateVnfdID, fmt.Sprintf(
				"VNFD %s is already onboarded by VnfPackage %s: a namespace holds one package of a VNFD id", id, other.Name))
		}
	}
	if err := r.setLabel(ctx, pkg, source.VnfdLabel(id)); err != nil {
		return err
	}
	setOnboarded(pkg, artifact, vnfd)
	if r.Recorder != nil {
		r.Recorder.Eventf(pkg, nil, "Normal", v1alpha1.ReasonSucceeded, "Onboard", "onboarded %s", describe(pkg))
	}
	return r.patchStatus(ctx, before, pkg)
}

// setLabel sets the package's calaf.io/vnfd-id label to value (removes it when empty),
// by which Services and the NFV API find the package of a VNFD id.
func (r *Reconciler) setLabel(ctx context.Context, pkg *v1alpha1.VnfPackage, value string) error {
	if pkg.Labels[v1alpha1.LabelVnfdID] == value {
		return nil
	}
	patch := client.MergeFrom(pkg.DeepCopy())
	if value == "" {
		delete(pkg.Labels, v1alpha1.LabelVnfdID)
	} else {
		if pkg.Labels == nil {
			pkg.Labels = map[string]string{}
		}
		pkg.Labels[v1alpha1.LabelVnfdID] = value
	}
	return r.Patch(ctx, pkg, patch)
}

// describe words what a package holds, for its condition and event.
func describe(pkg *v1alpha1.VnfPackage) string {
	st := &pkg.Status
	return fmt.Sprintf("VNFD %s (%s, %s %s) at revision %s", st.VnfdID, st.VnfProvider, st.VnfProductName, st.VnfSoftwareVersion, st.Revision)
}

// setCreated says that the package has no content yet.
func setCreated(pkg *v1alpha1.VnfPackage) {
	pkg.Status = v1alpha1.VnfPackageStatus{ObservedGeneration: pkg.Generation, OnboardingState: v1alpha1.OnboardingCreated,
		UsageState: pkg.Status.UsageState, Conditions: pkg.Status.Conditions}
	setReady(pkg, metav1.ConditionFalse, v1alpha1.ReasonNoContent, "no content yet: upload it (spec.source)")
}

// setReady sets the package's Ready condition, stamped with its generation.
func setReady(pkg *v1alpha1.VnfPackage, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&pkg.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: status,
		Reason: reason, Message: message, ObservedGeneration: pkg.Generation})
}
