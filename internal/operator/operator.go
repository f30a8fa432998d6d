// Package operator wires the Calaf operator: the manager, its cache, the reconcilers and
// the pipeline stages they use.
package operator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/controller"
	"calaf.io/calaf/internal/webhook"
	"calaf.io/calaf/render"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// Options configure the operator.
type Options struct {
	// Namespace, when set, limits the operator to one namespace (namespaced mode).
	Namespace               string
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
	// Pprof serves net/http/pprof on the metrics endpoint.
	Pprof bool
	// Orchestrator runs lifecycle operations; nil disables them.
	Orchestrator func(mgr ctrl.Manager, metrics *controller.Metrics) (controller.Orchestrator, error)
	// Extra registers more controllers (e.g. Day-2 operations) on the manager.
	Extra func(mgr ctrl.Manager, deps Dependencies) error
	// Configure lets callers adjust the Fetcher (git and OCI support).
	Configure func(fetcher *source.Fetcher) error
	// WebhookAddress is where the push webhook (POST /hooks/git) listens; empty disables it.
	WebhookAddress string
	// WebhookListener, when set, is used instead of WebhookAddress (tests).
	WebhookListener net.Listener
	// WebhookToken returns the token push notifications must carry; required with a webhook.
	WebhookToken func() ([]byte, error)
}

// Dependencies are the shared stages handed to extra controllers.
type Dependencies struct {
	Fetcher  *source.Fetcher
	Compiler *tosca.Compiler
	Renderer *render.Renderer
	Metrics  *controller.Metrics
	Service  *controller.ServiceReconciler
}

// DefaultOptions are the defaults of `calaf operator`.
func DefaultOptions() Options {
	return Options{
		MetricsAddress:    ":8080",
		HealthAddress:     ":8081",
		Concurrency:       4,
		PackageCacheDir:   filepath.Join(os.TempDir(), "calaf-packages"),
		PackageCacheBytes: 1 << 30,
		CompileCacheSize:  16,
		RenderCacheSize:   512,
		ScriptTimeout:     tosca.DefaultScriptTimeout,
		ProgressInterval:  5 * time.Second,
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

// NewManager builds the manager and registers the reconcilers; Start runs it.
func NewManager(config *rest.Config, opts Options, log logr.Logger) (ctrl.Manager, *controller.ServiceReconciler, error) {
	ctrl.SetLogger(log)
	managed, err := labels.NewRequirement(render.LabelService, selection.Exists, nil)
	if err != nil {
		return nil, nil, err
	}
	cacheOptions := cache.Options{
		// Only objects of Calaf Services (and Calaf's own resources) are cached.
		DefaultLabelSelector: labels.NewSelector().Add(*managed),
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.Service{}:   {Label: labels.Everything()},
			&v1alpha1.Operation{}: {Label: labels.Everything()},
		},
		DefaultTransform: trimForCache,
	}
	if opts.Namespace != "" {
		cacheOptions.DefaultNamespaces = map[string]cache.Config{opts.Namespace: {}}
	}
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                        NewScheme(),
		Cache:                         cacheOptions,
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true, DisableFor: []client.Object{&corev1.Event{}}}},
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.HealthAddress,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              "calaf-operator.calaf.io",
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, nil, err
	}

	m := controller.NewMetrics(metrics.Registry)
	limits := tosca.DefaultLimits()
	store, err := source.NewStore(opts.PackageCacheDir, opts.PackageCacheBytes, limits)
	if err != nil {
		return nil, nil, fmt.Errorf("package cache: %w", err)
	}
	fetcher := &source.Fetcher{Store: store, Reader: mgr.GetAPIReader(), MaxArchiveBytes: limits.MaxTotalBytes}
	fetcher.Git = &source.Git{Store: store, Reader: mgr.GetAPIReader()}
	fetcher.OCI = &source.OCI{Store: store, Reader: mgr.GetAPIReader(), MaxArchiveBytes: limits.MaxTotalBytes}
	if opts.Configure != nil {
		if err := opts.Configure(fetcher); err != nil {
			return nil, nil, err
		}
	}
	compiler := tosca.NewCompiler(opts.CompileCacheSize)
	compiler.Log = log.WithName("tosca")
	compiler.OnCompile = m.ObserveCompile
	compiler.Binding = true
	compiler.OnBind = m.ObserveBind
	renderer := render.NewRenderer(opts.RenderCacheSize)
	renderer.Log = log.WithName("render")
	renderer.OnRender = m.ObserveRender

	reconciler := &controller.ServiceReconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		Config:           mgr.GetConfig(),
		Recorder:         mgr.GetEventRecorder("calaf-operator"),
		Fetcher:          fetcher,
		Compiler:         compiler,
		Renderer:         renderer,
		Metrics:          m,
		ScriptTimeout:    opts.ScriptTimeout,
		ProgressInterval: opts.ProgressInterval,
	}
	if opts.Orchestrator != nil {
		if reconciler.Orchestrator, err = opts.Orchestrator(mgr, m); err != nil {
			return nil, nil, err
		}
	}
	if err := reconciler.SetupWithManager(mgr, opts.Concurrency); err != nil {
		return nil, nil, err
	}
	if err := addWebhook(mgr, opts, reconciler, log); err != nil {
		return nil, nil, err
	}
	if opts.Extra != nil {
		deps := Dependencies{Fetcher: fetcher, Compiler: compiler, Renderer: renderer, Metrics: m, Service: reconciler}
		if err := opts.Extra(mgr, deps); err != nil {
			return nil, nil, err
		}
	}
	return mgr, reconciler, nil
}

// addWebhook serves the push webhook when one is configured. It runs on the leader only,
// where the reconciler it triggers runs.
func addWebhook(mgr ctrl.Manager, opts Options, reconciler *controller.ServiceReconciler, log logr.Logger) error {
	if opts.WebhookAddress == "" && opts.WebhookListener == nil {
		return nil
	}
	if opts.WebhookToken == nil {
		return fmt.Errorf("the webhook needs a token (--webhook-token-file or $CALAF_WEBHOOK_TOKEN)")
	}
	if _, err := opts.WebhookToken(); err != nil {
		return fmt.Errorf("webhook token: %w", err)
	}
	receiver := &webhook.Receiver{
		Token:     opts.WebhookToken,
		Reader:    mgr.GetClient(),
		Namespace: opts.Namespace,
		Trigger:   reconciler.Trigger,
		Log:       log.WithName("webhook"),
	}
	mux := http.NewServeMux()
	mux.Handle(webhook.Path, receiver)
	mux.Handle(webhook.OCIPath, receiver)
	shutdown := 10 * time.Second
	return mgr.Add(&manager.Server{
		Name:                "webhook",
		Server:              &http.Server{Addr: opts.WebhookAddress, Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute},
		Listener:            opts.WebhookListener,
		OnlyServeWhenLeader: true,
		ShutdownTimeout:     &shutdown,
	})
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, config *rest.Config, opts Options, log logr.Logger) error {
	mgr, _, err := NewManager(config, opts, log)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
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
	delete(annotations, controller.CachedFieldsAnnotation)
	if len(accessor.GetManagedFields()) > 0 {
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
