// Package onboarding onboards VNF packages (VnfPackage, SOL005 VnfPkgInfo): it fetches a
// package's content through the Service sources, makes the SOL004 checks every package
// passes (digests, signatures under the trust policy), reads its VNFD in a worker, refuses
// a second package of a VNFD id, and records what it found; and it keeps a package that
// Services use from going.
package onboarding

import (
	"context"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// VNFDReader reads the VNFD of a fetched package: a worker's (worker.Pool.ReadVNFD), so
// that no package is parsed in the operator's process beyond its archive.
type VNFDReader func(ctx context.Context, pkg *tosca.Package) (*tosca.PackageVNFD, error)

// Reconciler onboards VnfPackages and keeps their usage state.
type Reconciler struct {
	// Client reads VnfPackages and Services from the operator's cache and writes them.
	client.Client
	// APIReader reads the VnfPackages of a namespace from the API server when a VNFD id
	// is claimed: a cache a moment behind would let two packages claim one id.
	APIReader client.Reader
	// Services lists the Services that name a package (the cached Client by default; the
	// API server for a shard, whose cache holds its own Services only).
	Services client.Reader
	Fetcher  *source.Fetcher
	ReadVNFD VNFDReader
	Recorder events.EventRecorder
	// Resync is how often a package is looked at again without an event (10 min).
	Resync time.Duration

	// claims serializes the claims of VNFD ids: the check that no other package holds
	// the id and the status that says this one does.
	claims sync.Mutex
}

// SetupWithManager registers the reconciler: VnfPackages, and the Services that name
// them (a change of what a Service names changes the usage of the packages it named and
// names).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	if r.Services == nil {
		r.Services = r.Client
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("vnfpackage").
		For(&v1alpha1.VnfPackage{}).
		Watches(&v1alpha1.Service{}, r.serviceHandler()).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// Reconcile keeps a package's usage and finalizer, then onboards its content unless its
// status already says how the onboarding of that content ended.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pkg := &v1alpha1.VnfPackage{}
	if err := r.Get(ctx, req.NamespacedName, pkg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := pkg.DeepCopy()
	result, err := r.reconcile(ctx, pkg, before)
	if patchErr := r.patchStatus(ctx, before, pkg); patchErr != nil && err == nil {
		err = patchErr
	}
	return result, err
}

// reconcile runs the phases: usage (and the finalizer it implies), then onboarding.
func (r *Reconciler) reconcile(ctx context.Context, pkg, before *v1alpha1.VnfPackage) (ctrl.Result, error) {
	if err := r.reconcileUsage(ctx, pkg); err != nil || pkg.DeletionTimestamp != nil {
		return ctrl.Result{}, err
	}
	if err := r.onboard(ctx, pkg, before); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.resync()}, nil
}

func (r *Reconciler) resync() time.Duration {
	if r.Resync > 0 {
		return r.Resync
	}
	return 10 * time.Minute
}

// patchStatus writes the status when it changed since before, as a merge patch of the
// status alone (no resourceVersion: a write of the package's metadata meanwhile is no
// conflict).
func (r *Reconciler) patchStatus(ctx context.Context, before, pkg *v1alpha1.VnfPackage) error {
	if apiequality.Semantic.DeepEqual(before.Status, pkg.Status) {
		return nil
	}
	data, err := client.MergeFrom(&v1alpha1.VnfPackage{Status: before.Status}).Data(&v1alpha1.VnfPackage{Status: pkg.Status})
	if err != nil {
		return err
	}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: pkg.Namespace, Name: pkg.Name}}
	meta.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("VnfPackage"))
	if err := r.Status().Patch(ctx, meta, client.RawPatch(types.MergePatchType, data)); err != nil {
		return client.IgnoreNotFound(err)
	}
	*before = *pkg.DeepCopy()
	return nil
}
