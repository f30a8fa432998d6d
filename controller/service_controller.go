// Package controller holds the reconcilers of the Calaf operator: a Service becomes
// applied, healthy, pruned and self-healing Kubernetes objects with honest status.
package controller

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/clusters"
	"calaf.io/calaf/internal/lru"
	"calaf.io/calaf/internal/redact"
	"calaf.io/calaf/internal/text"
	renderpolicy "calaf.io/calaf/policy"
	"calaf.io/calaf/render"
	sourcepkg "calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// ServiceReconciler reconciles Services: fetch → compile → render → apply in dependency
// order → prune → health → attributes and outputs → status.
type ServiceReconciler struct {
	client.Client
	// APIReader reads what the cache does not hold (uploaded packages, inputs, state).
	APIReader client.Reader
	Config    *rest.Config
	Recorder  events.EventRecorder
	Fetcher   *sourcepkg.Fetcher
	Compiler  *tosca.Compiler
	Renderer  *render.Renderer
	// Orchestrator runs the operations of nodes; nil disables them.
	Orchestrator Orchestrator
	// Triggers are requests for an immediate reconcile (NewTriggers when nil).
	Triggers *Triggers
	Metrics  *Metrics
	// Policy is the render policy every render passes before anything of it reaches the
	// API server; nil is the default policy.
	Policy *renderpolicy.Policy
	// ScriptTimeout bounds each node's renderer, and a render once per 100 node templates (render.Budget).
	ScriptTimeout time.Duration
	// DefaultServiceAccount, when set, is lockdown mode: a Service without
	// spec.serviceAccountName acts as this service account of its own namespace, so that no
	// Service acts with the operator's rights; the operator watches none of the Services'
	// objects (it may not: its own RBAC does not cover them) and checks them on the
	// progress interval instead, and refuses references to other namespaces.
	DefaultServiceAccount string
	// StateNamespace, when set, keeps the Services' compiled state in Secrets of this
	// namespace (the operator's own) instead of each Service's namespace.
	StateNamespace string
	// Identities are the clients of impersonated service accounts (made by
	// SetupWithManager when nil).
	Identities *Identities
	// ProgressInterval is how often a Service whose objects are not healthy yet is checked
	// besides the events of its objects.
	ProgressInterval time.Duration
	// Secrets holds the secrets of every Service (read from their inputsFrom Secrets) for
	// what leaves the operator besides one Service's status: log lines and Events.
	Secrets *redact.Registry
	// RevealSecretOutputs publishes the outputs derived from a Secret that a package marks
	// for publication as they are, instead of redacted (docs/security.md).
	RevealSecretOutputs bool
	// Clusters connects to the clusters Services deploy into (spec.kubeConfig); nil: a
	// Service with spec.kubeConfig stalls (KubeConfigInvalid).
	Clusters *clusters.Pool
	// SettleDelay bounds how long the status patch of a reconcile that applied objects
	// whose controllers have not looked at them yet is held, so that one patch says
	// Applied and Ready (2 s when zero). Negative holds nothing: the status says Applied
	// as soon as it is true, and Ready when it is, a patch each.
	SettleDelay time.Duration
	// RateLimiter spaces the retries of a failed reconcile (default: controller-runtime's
	// per-Service exponential backoff, 5 ms doubling up to 1000 s).
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]

	poller       *polling.StatusPoller
	fingerprints fingerprints
	echoes       echoes
	facts        *lru.Cache[compiledFacts]
	factsOnce    sync.Once
	addWatch     func(schema.GroupVersionKind) error
	states       stateKeys
	settled      settled
	watched      sync.Map // schema.GroupVersionKind → true
	// teardownWarned holds the Services (by UID) told that their teardown operations
	// cannot run, so that they are told once.
	teardownWarned sync.Map
}

// watchedKinds are watched from the start; other kinds are watched once a Service
// applies one.
var watchedKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "PersistentVolumeClaim"},
	{Version: "v1", Kind: "ServiceAccount"},
}

// SetupWithManager registers the reconciler and its watches: Services, and every object
// carrying a Service's labels (a change to one reconciles its Service).
func (r *ServiceReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	r.poller = polling.NewStatusPoller(pollerReader{mgr.GetClient()}, mgr.GetRESTMapper(), polling.Options{})
	if r.ProgressInterval <= 0 {
		r.ProgressInterval = 5 * time.Second
	}
	if r.Triggers == nil {
		r.Triggers = NewTriggers(1024)
	}
	if r.Identities == nil {
		r.Identities = NewIdentities(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetScheme(), mgr.GetRESTMapper(), 0)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Service{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WatchesRawSource(r.Triggers.source()).
		Watches(&v1alpha1.VnfPackage{}, handler.EnqueueRequestsFromMapFunc(r.servicesOfPackage), builder.WithPredicates(packageUsability{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, RateLimiter: r.RateLimiter})
	if r.lockdown() {
		// The operator may not watch the Services' objects: they are checked on the
		// progress interval, and drift is repaired at the Service's interval.
		_, err := b.Build(r)
		return err
	}
	if r.Orchestrator != nil {
		// Pods that appear or become ready get the operations they missed.
		b = b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(serviceOfPod), builder.WithPredicates(podReadiness{}))
	}
	for _, gvk := range watchedKinds {
		b = b.Watches(r.cachedObject(gvk), handler.EnqueueRequestsFromMapFunc(serviceOf), builder.WithPredicates(r.ownedChanges(gvk)))
		r.watched.Store(gvk, true)
	}
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	r.addWatch = func(gvk schema.GroupVersionKind) error {
		return c.Watch(source.Kind(mgr.GetCache(), r.cachedObject(gvk), handler.EnqueueRequestsFromMapFunc(serviceOf), r.ownedChanges(gvk)))
	}
	return nil
}

// lockdown tells whether every Service acts as a service account of its namespace.
func (r *ServiceReconciler) lockdown() bool { return r.DefaultServiceAccount != "" }

// ensureWatched watches a kind the operator did not watch yet, so that drift of such
// objects is repaired as quickly as that of the common kinds.
func (r *ServiceReconciler) ensureWatched(gvk schema.GroupVersionKind) {
	if r.addWatch == nil {
		return
	}
	if _, loaded := r.watched.LoadOrStore(gvk, true); loaded {
		return
	}
	if err := r.addWatch(gvk); err != nil {
		r.watched.Delete(gvk)
	}
}

// serviceOf maps an object to the Service its labels name.
func serviceOf(_ context.Context, obj client.Object) []reconcile.Request {
	labels := obj.GetLabels()
	name, namespace := labels[v1alpha1.LabelService], labels[v1alpha1.LabelServiceNamespace]
	if name == "" || namespace == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: namespace, Name: name}}}
}

// Reconcile brings one Service closer to its desired state and records where it stands.
func (r *ServiceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := time.Now()
	log := ctrl.LoggerFrom(ctx)
	svc := &v1alpha1.Service{}
	if err := r.Get(ctx, req.NamespacedName, svc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := svc.DeepCopy()
	r.settled.restore(svc)
	var applied []string // what this reconcile changed, said with its status patch
	defer func() {
		written, err := r.patchStatus(ctx, before, svc, applied)
		if written || err != nil {
			r.settled.remember(svc)
		}
		if err != nil && retErr == nil {
			retErr = err
		}
		r.Metrics.observeReconcile(time.Since(start), retErr)
	}()

	if !svc.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, svc)
	}
	if !controllerutil.ContainsFinalizer(svc, v1alpha1.ServiceFinalizer) {
		patch := client.MergeFromWithOptions(svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(svc, v1alpha1.ServiceFinalizer)
		if err := r.Patch(ctx, svc, patch); err != nil {
			return ctrl.Result{}, err
		}
		before.ObjectMeta = *svc.ObjectMeta.DeepCopy()
	}
	if patched, err := r.ensureVnfdLabel(ctx, svc); err != nil {
		return ctrl.Result{}, err
	} else if patched {
		before.ObjectMeta = *svc.ObjectMeta.DeepCopy()
	}
	if svc.Spec.Suspend {
		log.V(1).Info("suspended, not reconciling")
		setSuspended(svc)
		// A reconcile requested of a suspended Service is handled: by doing nothing.
		if requested := svc.Annotations[v1alpha1.ReconcileRequestAnnotation]; requested != "" {
			svc.Status.LastHandledReconcileAt = requested
		}
		return ctrl.Result{}, nil
	}
	if svc.Spec.InstantiationState == v1alpha1.NotInstantiated && !delegated(svc) {
		return r.uninstantiate(ctx, svc) // a delegated Service's site tears down
	}
	result, applied, retErr = r.reconcile(ctx, svc, &before.Status)
	return result, retErr
}

// patchStatus writes the status when it changed (never on a no-op) and records the events
// of what was applied and of Ready's transitions (recordEvents); written: a patch was sent
// and taken.
func (r *ServiceReconciler) patchStatus(ctx context.Context, before, svc *v1alpha1.Service, applied []string) (written bool, err error) {
	if svc.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(svc, v1alpha1.ServiceFinalizer) {
		return false, nil
	}
	r.recordEvents(before, svc, applied)
	if apiequality.Semantic.DeepEqual(before.Status, svc.Status) {
		return false, nil
	}
	err = r.patchServiceStatus(ctx, before, svc)
	return err == nil, client.IgnoreNotFound(err)
}

// patchServiceStatus sends svc's status as a merge patch from before's and asks for the
// metadata alone in answer: nothing of the Service as stored is read back, so neither the
// API server encodes it nor the operator decodes it.
func (r *ServiceReconciler) patchServiceStatus(ctx context.Context, before, svc *v1alpha1.Service) error {
	data, err := client.MergeFrom(before).Data(svc)
	if err != nil {
		return err
	}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name}}
	meta.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Service"))
	return r.Status().Patch(ctx, meta, client.RawPatch(types.MergePatchType, data))
}

// recordEvents emits the events of a reconcile's status: an Applied event saying what the
// applies changed (one line per object), and one when Ready changes status, reason or
// message; into Progressing only from True (a Service that was ready no longer is): the
// progress of a Service not ready yet is said by the Applied event. When Ready turns True
// with changes, one event says both (Ready's message, then the changes), as Flux's one
// event per successful reconcile does.
func (r *ServiceReconciler) recordEvents(before, svc *v1alpha1.Service, applied []string) {
	if r.Recorder == nil {
		return
	}
	transition := readyTransition(before, svc)
	changes := strings.Join(applied, "\n")
	switch {
	case transition != nil && transition.Status == metav1.ConditionTrue && changes != "":
		r.Recorder.Eventf(svc, nil, "Normal", transition.Reason, "Reconcile", "%s", text.Truncate(transition.Message+"\n"+changes, 1024))
		return
	case changes != "":
		r.Recorder.Eventf(svc, nil, "Normal", "Applied", "Apply", "%s", text.Truncate(changes, 1024))
	}
	if transition == nil {
		return
	}
	eventType := "Normal"
	if transition.Status == metav1.ConditionFalse && transition.Reason != v1alpha1.ReasonProgressing {
		eventType = "Warning"
	}
	r.Recorder.Eventf(svc, nil, eventType, transition.Reason, "Reconcile", "%s", text.Truncate(transition.Message, 1024))
}

// readyTransition returns svc's Ready condition when it is an event: it changed status,
// reason or message since before, and is not a Service not ready yet progressing.
func readyTransition(before, svc *v1alpha1.Service) *metav1.Condition {
	old := apimeta.FindStatusCondition(before.Status.Conditions, v1alpha1.ConditionReady)
	now := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
	if now == nil || (old != nil && old.Status == now.Status && old.Reason == now.Reason && old.Message == now.Message) {
		return nil
	}
	if now.Reason == v1alpha1.ReasonProgressing && (old == nil || old.Status != metav1.ConditionTrue) {
		return nil
	}
	return now
}

// durationOr returns d, or def when d is not set (a Service stored without the CRD's
// defaults, e.g. before they existed).
func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}

// requeueAfter returns the interval, with up to 10% jitter so Services spread out.
func requeueAfter(d time.Duration) time.Duration {
	if d <= 0 {
		d = v1alpha1.DefaultInterval
	}
	return d + time.Duration(rand.Int64N(int64(d)/10+1))
}
