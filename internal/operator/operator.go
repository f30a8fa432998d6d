// Package operator wires the Calaf operator: the manager, its cache, the reconcilers and
// the pipeline stages they use.
package operator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/cmmode"
	"calaf.io/calaf/controller"
	"calaf.io/calaf/etsi/helmchart"
	"calaf.io/calaf/internal/outbound"
	"calaf.io/calaf/internal/redact"
	"calaf.io/calaf/nfvo"
	"calaf.io/calaf/onboarding"
	"calaf.io/calaf/orchestration"
	"calaf.io/calaf/policy"
	"calaf.io/calaf/render"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/worker"
)

// Options configure the operator.
type Options struct {
	// Namespace, when set, limits the operator to one namespace (namespaced mode).
	Namespace string
	// ServiceSelector, when set, limits the operator to the Services it selects by label:
	// one shard of a fleet (--watch-label-selector, as Flux's controllers shard). Its
	// Operations and occurrences are those of its Services; each shard has its own lease.
	ServiceSelector labels.Selector
	// Registry receives the operator's metrics (default: controller-runtime's registry).
	Registry                prometheus.Registerer
	MetricsAddress          string
	HealthAddress           string
	LeaderElection          bool
	LeaderElectionNamespace string
	Concurrency             int
	PackageCacheDir         string
	PackageCacheBytes       int64
	CompileCacheSize        int
	RenderCacheSize         int
	ScriptTimeout           time.Duration
	ProgressInterval        time.Duration
	// SettleDelay bounds how long a Service's status patch waits for its new objects'
	// controllers to look at them, so that one patch says Applied and Ready; 0 holds
	// nothing: Applied is said as soon as it is true, Ready when it is.
	SettleDelay time.Duration
	// Pprof serves net/http/pprof on the metrics endpoint.
	Pprof bool
	// Orchestration runs the operations of node templates in their pods and Day-2
	// Operations, with the calaf-runner binary at RunnerPath (default: next to calaf, or
	// on $PATH). Without a runner the operator still runs; nodes with operations then fail
	// with a message saying so.
	Orchestration bool
	RunnerPath    string
	// Configure lets callers adjust the Fetcher (git and OCI support).
	Configure func(fetcher *source.Fetcher) error
	// WebhookAddress is where the push webhook (POST /hooks/git) listens; empty disables it.
	WebhookAddress string
	// WebhookListener, when set, is used instead of WebhookAddress (tests).
	WebhookListener net.Listener
	// WebhookToken returns the tokens push notifications may carry (one per line); with
	// it the push receiver is served.
	WebhookToken func() ([]byte, error)
	// AlertToken returns the tokens Alertmanager's posts may carry (one per line), never
	// the push receiver's; with it the alert receiver is served.
	AlertToken func() ([]byte, error)
	// WebhookCertFile and WebhookKeyFile are the TLS certificate and key the receivers
	// serve (re-read when they change); WebhookInsecureHTTP serves plain HTTP instead.
	WebhookCertFile, WebhookKeyFile string
	WebhookInsecureHTTP             bool
	// NotifyBackoff is the wait before a failed notification is sent again, by failures
	// in a row (default 1 s doubling up to 5 min).
	NotifyBackoff outbound.Backoff
	// OutboundAllow are the networks requests made on a user's behalf (notifications)
	// may reach besides public addresses, and OutboundDeny more that they may not
	// (package outbound, docs/security.md).
	OutboundAllow, OutboundDeny []netip.Prefix
	// OutboundDiscover refuses those requests the cluster's networks too, read from the
	// API server every minute: ServiceCIDRs, the nodes' pod ranges and addresses.
	OutboundDiscover bool
	// NFVO, when set, is the apiRoot of the NFVO that grants the occurrences of VNF
	// instances (SOL003 direct mode), reached with NFVOAuth through the outbound policy;
	// VNFMRoot is the NFV API's URL, for the links of the grant requests.
	NFVO     *url.URL
	NFVOAuth outbound.Auth
	VNFMRoot string
	// Verify is the signature policy every Service's package passes (SOL004).
	Verify source.VerifyDefaults
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader election. The leader
	// keeps its lease while the API server is away for less than RenewDeadline (40 s:
	// an API server restart); after a longer outage it makes a new manager in-process
	// (see Run) and takes the lease back at once with the same identity.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Workers run the package work — compiles and renders — in worker processes with
	// limits (package worker); InProcess runs it in the operator's own process instead.
	Workers   worker.Options
	InProcess bool
	// Credentials are the files of the operator's credentials (its service account's
	// token, its kubeconfig): a worker is asked to open each at start, and the log says
	// whether it could.
	Credentials []string
	// RenderPolicy is what the cluster admin lets packages render (package policy); nil
	// is the default policy.
	RenderPolicy *policy.Policy
	// DefaultServiceAccount is lockdown mode (docs/security.md): every Service without
	// spec.serviceAccountName acts as this service account of its own namespace.
	DefaultServiceAccount string
	// StateNamespace keeps the Services' compiled state in the operator's namespace
	// (lockdown mode; default there: LeaderElectionNamespace).
	StateNamespace string
	// RevealSecretOutputs publishes the outputs derived from a Secret that a package marks
	// for publication as they are, instead of redacted.
	RevealSecretOutputs bool
	// TargetClusterAllow are the networks the API servers of the clusters Services deploy
	// into (spec.kubeConfig) may be on besides public addresses (docs/multicluster.md).
	TargetClusterAllow []netip.Prefix
	// MaxTargetClusters bounds the target clusters connected at once (default 64).
	MaxTargetClusters int

	// secrets are those of every Service, hidden from the log and Events (made by
	// NewProcess and Run).
	secrets *redact.Registry
	// Now is the clock of the alert receiver's cooldowns and rates (default time.Now).
	Now func() time.Time
	// ServiceRateLimiter spaces the retries of a Service's failed reconcile (default:
	// controller-runtime's exponential backoff).
	ServiceRateLimiter workqueue.TypedRateLimiter[reconcile.Request]
	// RestartAfter is the API outage after which the manager is made anew once the API
	// answers (fresh watches, no backed-off retries); shorter outages only ask for every
	// Service to be reconciled.
	RestartAfter time.Duration
	// Resources is where Services and Operations are kept: as custom resources (the
	// default), as labelled ConfigMaps of Namespace (package cmmode; no CRD needed), or
	// both side by side.
	Resources ResourceMode

	// ProfileCacheDir keeps the profiles packages import by reference, by digest; it
	// survives restarts (what it holds is verified again when read).
	ProfileCacheDir string
}

// ResourceMode says where an operator finds its Services and Operations.
type ResourceMode string

const (
	ResourcesCRD        ResourceMode = "crd"
	ResourcesConfigMaps ResourceMode = "configmap"
	ResourcesBoth       ResourceMode = "both"
)

// servesCRDs tells whether the operator reads Calaf's custom resources.
func (opts Options) servesCRDs() bool { return opts.Resources != ResourcesConfigMaps }

// servesConfigMaps tells whether the operator reads Services and Operations kept as
// ConfigMaps.
func (opts Options) servesConfigMaps() bool {
	return opts.Resources == ResourcesConfigMaps || opts.Resources == ResourcesBoth
}

// settleDelay is the reconciler's SettleDelay for the operator's: 0 holds nothing.
func settleDelay(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// DefaultOptions are the defaults of `calaf operator`.
func DefaultOptions() Options {
	return Options{
		MetricsAddress:    ":8080",
		HealthAddress:     ":8081",
		Concurrency:       8,
		PackageCacheDir:   filepath.Join(os.TempDir(), "calaf-packages"),
		ProfileCacheDir:   filepath.Join(os.TempDir(), "calaf-profiles"),
		PackageCacheBytes: 1 << 30,
		CompileCacheSize:  16,
		RenderCacheSize:   2048,
		ScriptTimeout:     tosca.DefaultScriptTimeout,
		ProgressInterval:  5 * time.Second,
		SettleDelay:       2 * time.Second,
		LeaseDuration:     60 * time.Second,
		RenewDeadline:     40 * time.Second,
		RetryPeriod:       5 * time.Second,
		RestartAfter:      30 * time.Second,
		Workers:           worker.DefaultOptions(),
		NotifyBackoff:     outbound.DefaultBackoff(),
		OutboundDiscover:  true,
		Credentials:       []string{ServiceAccountToken},
	}
}

// NewScheme returns the scheme of the operator: Kubernetes' built-in types and Calaf's.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	return scheme
}

// serviceSelector selects the Services of this operator (all but with a shard's selector).
func (opts Options) serviceSelector() labels.Selector {
	if opts.ServiceSelector == nil {
		return labels.Everything()
	}
	return opts.ServiceSelector
}

func (opts Options) registry() prometheus.Registerer {
	if opts.Registry == nil {
		return metrics.Registry
	}
	return opts.Registry
}

// serviceElsewhere tells, for a Service this operator's cache does not hold, whether it
// exists and belongs to another shard: its Operations are that shard's to handle.
func serviceElsewhere(reader client.Reader, opts Options) func(ctx context.Context, key client.ObjectKey) bool {
	if opts.ServiceSelector == nil {
		return nil
	}
	return func(ctx context.Context, key client.ObjectKey) bool {
		svc := &v1alpha1.Service{}
		if err := reader.Get(ctx, key, svc); err != nil {
			return !apierrors.IsNotFound(err) // unknown: leave it rather than refuse it
		}
		return !opts.ServiceSelector.Matches(labels.Set(svc.Labels))
	}
}

// NewManager builds the manager and registers the reconcilers; Start runs it.
func NewManager(config *rest.Config, opts Options, log logr.Logger) (ctrl.Manager, *controller.ServiceReconciler, error) {
	p, err := NewProcess(config, opts, log)
	if err != nil {
		return nil, nil, err
	}
	return p.NewManager()
}

// Process is what one operator process keeps across the managers it makes: the package
// store, the compile and render caches and the metrics (registered once). A manager made
// anew by it starts as a restarted operator's would, with no memory of what it applied.
type Process struct {
	config *rest.Config
	opts   Options
	log    logr.Logger
	stages *stages
}

// NewProcess makes the stages of an operator process and registers its metrics.
func NewProcess(config *rest.Config, opts Options, log logr.Logger) (*Process, error) {
	opts.secrets = redact.NewRegistry()
	log = redact.Logger(log, opts.secrets)
	ctrl.SetLogger(log)
	st, err := newStages(config, opts, opts.registry(), log)
	if err != nil {
		return nil, err
	}
	return &Process{config: config, opts: opts, log: log, stages: st}, nil
}

// NewManager builds a manager with new reconcilers over the process's stages.
func (p *Process) NewManager() (ctrl.Manager, *controller.ServiceReconciler, error) {
	mgr, reconciler, _, err := buildManager(p.config, p.opts, p.stages, p.log)
	return mgr, reconciler, err
}

// stages are what an operator process keeps for its whole life, across the managers it
// may make (see Run): the package store and fetcher, the compile and render caches, the
// metrics (registered once) and its leader election identity.
type stages struct {
	metrics              *controller.Metrics
	identities           *controller.Identities
	orchestrationMetrics *orchestration.Metrics
	fetcher              *source.Fetcher
	compiler             *tosca.Compiler
	renderer             *render.Renderer
	readVNFD             onboarding.VNFDReader
	identity             string
	// outbound sends the requests made on a user's behalf (notifications).
	outbound *outbound.Client
	// nfvo is the external NFVO's client (grants, its packages), when one is configured.
	nfvo *nfvo.Client
}

func newStages(config *rest.Config, opts Options, registry prometheus.Registerer, log logr.Logger) (*stages, error) {
	m := controller.NewMetrics(registry)
	reader, err := client.New(config, client.Options{Scheme: NewScheme()})
	if err != nil {
		return nil, err
	}
	identities, err := newIdentities(config)
	if err != nil {
		return nil, err
	}
	fetcher, err := newFetcher(reader, identities.SourceReader(opts.DefaultServiceAccount), opts)
	if err != nil {
		return nil, err
	}
	compiler := tosca.NewCompiler(opts.CompileCacheSize)
	compiler.Log = log.WithName("tosca")
	compiler.OnCompile = m.ObserveCompile
	compiler.Binding = true
	compiler.OnBind = m.ObserveBind
	renderer := render.NewRenderer(opts.RenderCacheSize)
	renderer.Log = log.WithName("render")
	renderer.OnRender = m.ObserveRender
	renderer.Charts = helmchart.Engine{}
	readVNFD, err := isolate(compiler, renderer, opts, registry, log)
	if err != nil {
		return nil, err
	}
	hostname, _ := os.Hostname()
	st := &stages{
		metrics: m, identities: identities, orchestrationMetrics: orchestration.NewMetrics(registry),
		fetcher: fetcher, compiler: compiler, renderer: renderer, readVNFD: readVNFD,
		identity: hostname + "_" + string(uuid.NewUUID()),
		outbound: newOutbound(context.Background(), reader, opts, log.WithName("outbound")),
	}
	if opts.NFVO != nil {
		st.nfvo = &nfvo.Client{Root: opts.NFVO, HTTP: st.outbound, Auth: opts.NFVOAuth}
		fetcher.NFVO = st.nfvo
	}
	return st, nil
}

// buildManager makes a manager with the reconcilers, the webhook and the API monitor. In
// ConfigMap mode the reconcilers see Services and Operations through a cmmode.View of the
// manager; with both modes, a second set of reconcilers runs on that view.
func buildManager(config *rest.Config, opts Options, st *stages, log logr.Logger) (ctrl.Manager, *controller.ServiceReconciler, *orchestration.Orchestrator, error) {
	mgr, err := newManager(config, opts, st.identity)
	if err != nil {
		return nil, nil, nil, err
	}
	primary := ctrl.Manager(mgr)
	if !opts.servesCRDs() {
		if primary, err = cmmode.NewView(mgr, opts.Namespace); err != nil {
			return nil, nil, nil, err
		}
	}
	triggers := controller.NewTriggers(8192)
	reconciler, orchestrator, err := addReconcilers(primary, opts, st, triggers, log)
	if err != nil {
		return nil, nil, nil, err
	}
	if opts.Resources == ResourcesBoth {
		view, err := cmmode.NewView(mgr, opts.Namespace)
		if err != nil {
			return nil, nil, nil, err
		}
		if _, _, err := addReconcilers(view, opts, st, controller.NewTriggers(8192), log.WithName("configmaps")); err != nil {
			return nil, nil, nil, err
		}
	}
	if opts.servesCRDs() {
		if err := addSubscriptions(mgr, opts, st, log); err != nil {
			return nil, nil, nil, err
		}
		if err := addOnboarding(mgr, opts, st); err != nil {
			return nil, nil, nil, err
		}
		serviceSets := &controller.ServiceSetReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: newRecorder(mgr, opts)}
		if err := serviceSets.SetupWithManager(mgr, opts.Concurrency); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := addWebhook(primary, opts, triggers, log); err != nil {
		return nil, nil, nil, err
	}
	monitor, err := newAPIMonitor(config, primary.GetAPIReader(), triggers, opts, log)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := mgr.Add(monitor); err != nil {
		return nil, nil, nil, err
	}
	return mgr, reconciler, orchestrator, nil
}

// addReconcilers registers the Service reconciler, the orchestrator's and the lifecycle's
// on mgr (the manager, or a cmmode.View of it), sharing triggers.
func addReconcilers(mgr ctrl.Manager, opts Options, st *stages, triggers *controller.Triggers, log logr.Logger) (*controller.ServiceReconciler, *orchestration.Orchestrator, error) {
	reconciler := &controller.ServiceReconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		Config:           mgr.GetConfig(),
		Recorder:         newRecorder(mgr, opts),
		Fetcher:          st.fetcher,
		Compiler:         st.compiler,
		Renderer:         st.renderer,
		Triggers:         triggers,
		Metrics:          st.metrics,
		ScriptTimeout:    opts.ScriptTimeout,
		ProgressInterval: opts.ProgressInterval,
		SettleDelay:      settleDelay(opts.SettleDelay),
		RateLimiter:      opts.ServiceRateLimiter,
		Policy:           renderPolicy(opts.RenderPolicy),
		Identities:       st.identities,
		Secrets:          opts.secrets,
	}
	reconciler.RevealSecretOutputs = opts.RevealSecretOutputs
	if opts.DefaultServiceAccount != "" {
		reconciler.DefaultServiceAccount, reconciler.StateNamespace = opts.DefaultServiceAccount, opts.StateNamespace
		if reconciler.StateNamespace == "" {
			reconciler.StateNamespace = opts.LeaderElectionNamespace
		}
	}
	var orchestrator *orchestration.Orchestrator
	var err error
	if opts.Orchestration {
		if orchestrator, err = addOrchestration(mgr, opts, triggers, st, log); err != nil {
			return nil, nil, err
		}
		reconciler.Orchestrator = orchestrator
	}
	if reconciler.Clusters, err = newClusters(opts, st, reconciler, log); err != nil {
		return nil, nil, err
	}
	if err := mgr.Add(reconciler.Clusters); err != nil {
		return nil, nil, err
	}
	if err := reconciler.SetupWithManager(mgr, opts.Concurrency); err != nil {
		return nil, nil, err
	}
	return reconciler, orchestrator, addOccurrences(mgr, opts, st, triggers, targetPods(reconciler), log)
}

// newManager makes the manager: its cache holds Calaf's resources and the objects of
// Calaf Services only; its leader election uses the process's identity and lease timings
// that outlast an API server restart (see Options.LeaseDuration).
func newManager(config *rest.Config, opts Options, identity string) (ctrl.Manager, error) {
	managed, err := labels.NewRequirement(v1alpha1.LabelService, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	cacheOptions := cache.Options{
		DefaultLabelSelector: labels.NewSelector().Add(*managed),
		DefaultTransform:     trimForCache,
	}
	if opts.servesCRDs() {
		// Only an operator that reads Calaf's custom resources names them: the cache asks
		// the API server the scope of each kind named here.
		cacheOptions.ByObject = map[client.Object]cache.ByObject{
			&v1alpha1.Service{}:               {Label: opts.serviceSelector()},
			&v1alpha1.Operation{}:             {Label: labels.Everything()},
			&v1alpha1.LifecycleSubscription{}: {Label: labels.Everything()},
			// VnfPackages and ServiceSets are sharded as Services are, by the same label.
			&v1alpha1.VnfPackage{}: {Label: opts.serviceSelector()},
			&v1alpha1.ServiceSet{}: {Label: opts.serviceSelector()},
		}
	}
	if opts.Namespace != "" {
		cacheOptions.DefaultNamespaces = map[string]cache.Config{opts.Namespace: {}}
	}
	lock, err := leaderLock(config, opts, identity)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                              NewScheme(),
		Cache:                               cacheOptions,
		Client:                              client.Options{Cache: &client.CacheOptions{Unstructured: true, DisableFor: []client.Object{&corev1.Event{}}}},
		MapperProvider:                      newRESTMapper,
		Metrics:                             metricsOptions(opts),
		HealthProbeBindAddress:              opts.HealthAddress,
		LeaderElection:                      opts.LeaderElection,
		LeaderElectionID:                    opts.leaseName(),
		LeaderElectionResourceLockInterface: lock,
		LeaseDuration:                       &opts.LeaseDuration,
		RenewDeadline:                       &opts.RenewDeadline,
		RetryPeriod:                         &opts.RetryPeriod,
		LeaderElectionReleaseOnCancel:       true,
		// Run makes a new manager after losing the leadership: its controllers have the
		// names of the last one's.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// newIdentities makes the clients of impersonated service accounts, sharing one HTTP
// client and REST mapper for the process's life.
func newIdentities(config *rest.Config) (*controller.Identities, error) {
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	mapper, err := newRESTMapper(config, httpClient)
	if err != nil {
		return nil, err
	}
	return controller.NewIdentities(config, httpClient, NewScheme(), mapper, 0), nil
}

// newFetcher makes the package fetcher of every source kind, on the local package store;
// reader reads Secrets and ConfigMaps straight from the API server, or readerFor's reader
// of the Service when it gives one (the identity the Service acts with).
func newFetcher(reader client.Reader, readerFor source.ReaderFunc, opts Options) (*source.Fetcher, error) {
	limits := tosca.DefaultLimits()
	store, err := source.NewStore(opts.PackageCacheDir, opts.PackageCacheBytes, limits)
	if err != nil {
		return nil, fmt.Errorf("package cache: %w", err)
	}
	fetcher := &source.Fetcher{Store: store, Reader: reader, ReaderFor: readerFor, MaxArchiveBytes: limits.MaxTotalBytes, Verify: opts.Verify,
		Profiles: source.NewProfileCache(opts.ProfileCacheDir, limits)}
	fetcher.Git = &source.Git{Store: store, Reader: reader, ReaderFor: readerFor}
	fetcher.OCI = &source.OCI{Store: store, Reader: reader, ReaderFor: readerFor, MaxArchiveBytes: limits.MaxTotalBytes}
	if opts.Configure != nil {
		if err := opts.Configure(fetcher); err != nil {
			return nil, err
		}
	}
	return fetcher, nil
}

// addOnboarding registers the reconciler of VnfPackages (package onboarding): their
// content fetched by the Services' fetcher, their VNFD read in a worker. A shard counts
// the users of its packages on the API server: its cache holds its own Services only.
func addOnboarding(mgr ctrl.Manager, opts Options, st *stages) error {
	packages := &onboarding.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Fetcher:   st.fetcher,
		ReadVNFD:  st.readVNFD,
		Recorder:  newRecorder(mgr, opts),
	}
	if opts.ServiceSelector != nil {
		packages.Services = mgr.GetAPIReader()
	}
	return packages.SetupWithManager(mgr, opts.Concurrency)
}

// addOrchestration makes the orchestrator (operations run in pods with calaf-runner) and
// registers the Operation reconciler; both ask for reconciles through triggers.
func addOrchestration(mgr ctrl.Manager, opts Options, triggers *controller.Triggers, st *stages, log logr.Logger) (*orchestration.Orchestrator, error) {
	log = log.WithName("orchestrator")
	runner, err := orchestration.LoadRunner(opts.RunnerPath)
	if err != nil {
		log.Error(err, "operations cannot run: nodes with operations will fail until the operator has a runner")
	} else {
		log.Info("runner loaded", "path", runner.Path, "hash", runner.Hash, "bytes", runner.Size)
	}
	recorder := newRecorder(mgr, opts)
	orchestrator := orchestration.NewOrchestrator(mgr.GetClient(), orchestration.NewPodExecutor(mgr.GetConfig(), runner), orchestration.Options{
		Recorder: recorder,
		Metrics:  st.orchestrationMetrics,
		Notify:   triggers.Trigger,
		Log:      log,
	})
	operations := &orchestration.OperationReconciler{Client: mgr.GetClient(), Notify: triggers.Trigger, Recorder: recorder, Gated: true,
		ServiceElsewhere: serviceElsewhere(mgr.GetAPIReader(), opts)}
	return orchestrator, operations.SetupWithManager(mgr)
}

// trimForCache keeps cached objects small: managed fields are dropped, the hash of Calaf's
// own entry (all drift detection needs) kept in an annotation of the cached copy, and so
// is the last-applied annotation.
func trimForCache(obj any) (any, error) {
	accessor, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	annotations := accessor.GetAnnotations()
	delete(annotations, "kubectl.kubernetes.io/last-applied-configuration")
	// client-go may transform an object again (its initial list does): one without managed
	// fields was trimmed already, and its hash annotation is the one to keep.
	if len(accessor.GetManagedFields()) > 0 {
		delete(annotations, controller.CachedFieldsAnnotation)
		if hash := controller.FieldsHash(accessor); hash != "" {
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[controller.CachedFieldsAnnotation] = hash
		}
		accessor.SetManagedFields(nil)
	}
	accessor.SetAnnotations(annotations)
	// The pod template is most of a workload; health (kstatus) and attributes read status,
	// generation and replicas, and drift detection reads managed fields.
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		switch o.GroupVersionKind().GroupKind().String() {
		case "Deployment.apps", "StatefulSet.apps", "DaemonSet.apps", "ReplicaSet.apps", "Job.batch":
			unstructured.RemoveNestedField(o.Object, "spec", "template", "spec")
		}
	case *appsv1.Deployment:
		o.Spec.Template.Spec = corev1.PodSpec{}
	case *appsv1.StatefulSet:
		o.Spec.Template.Spec = corev1.PodSpec{}
	case *appsv1.DaemonSet:
		o.Spec.Template.Spec = corev1.PodSpec{}
	case *batchv1.Job:
		o.Spec.Template.Spec = corev1.PodSpec{}
	}
	return obj, nil
}

// metricsOptions serves the Prometheus metrics, and pprof when asked.
func metricsOptions(opts Options) metricsserver.Options {
	options := metricsserver.Options{BindAddress: opts.MetricsAddress}
	if opts.Pprof {
		options.ExtraHandlers = map[string]http.Handler{
			"/debug/pprof/":        http.HandlerFunc(pprof.Index),
			"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
			"/debug/pprof/heap":    pprof.Handler("heap"),
			"/debug/pprof/allocs":  pprof.Handler("allocs"),
		}
	}
	return options
}

// renderPolicy returns the admin's render policy, or the default one: one value that
// keeps what it built to evaluate pods across reconciles.
func renderPolicy(p *policy.Policy) *policy.Policy {
	if p == nil {
		return &policy.Policy{}
	}
	return p
}
