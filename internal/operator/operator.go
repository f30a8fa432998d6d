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
	"calaf.io/calaf/orchestration"
	"calaf.io/calaf/render"
	"calaf.io/calaf/source"
	"calaf.io/calaf/source/webhook"
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
	// WebhookToken returns the token push notifications must carry; required with a webhook.
	WebhookToken func() ([]byte, error)
	// Verify is the signature policy every Service's package passes (SOL004).
	Verify source.VerifyDefaults
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
	mgr, err := newManager(config, opts)
	if err != nil {
		return nil, nil, err
	}
	m := controller.NewMetrics(metrics.Registry)
	fetcher, err := newFetcher(mgr, opts)
	if err != nil {
		return nil, nil, err
	}
	compiler := tosca.NewCompiler(opts.CompileCacheSize)
	compiler.Log = log.WithName("tosca")
	compiler.OnCompile = m.ObserveCompile
	compiler.Binding = true
	compiler.OnBind = m.ObserveBind
	renderer := render.NewRenderer(opts.RenderCacheSize)
	renderer.Log = log.WithName("render")
	renderer.OnRender = m.ObserveRender

	triggers := controller.NewTriggers(1024)
	reconciler := &controller.ServiceReconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		Config:           mgr.GetConfig(),
		Recorder:         mgr.GetEventRecorder("calaf-operator"),
		Fetcher:          fetcher,
		Compiler:         compiler,
		Renderer:         renderer,
		Triggers:         triggers,
		Metrics:          m,
		ScriptTimeout:    opts.ScriptTimeout,
		ProgressInterval: opts.ProgressInterval,
	}
	if opts.Orchestration {
		if reconciler.Orchestrator, err = addOrchestration(mgr, opts, triggers, log); err != nil {
			return nil, nil, err
		}
	}
	if err := reconciler.SetupWithManager(mgr, opts.Concurrency); err != nil {
		return nil, nil, err
	}
	if err := addWebhook(mgr, opts, triggers, log); err != nil {
		return nil, nil, err
	}
	return mgr, reconciler, nil
}

// newManager makes the manager: its cache holds Calaf's resources and the objects of
// Calaf Services only.
func newManager(config *rest.Config, opts Options) (ctrl.Manager, error) {
	managed, err := labels.NewRequirement(v1alpha1.LabelService, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	cacheOptions := cache.Options{
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

// newFetcher makes the package fetcher of every source kind, on the local package store.
func newFetcher(mgr ctrl.Manager, opts Options) (*source.Fetcher, error) {
	limits := tosca.DefaultLimits()
	store, err := source.NewStore(opts.PackageCacheDir, opts.PackageCacheBytes, limits)
	if err != nil {
		return nil, fmt.Errorf("package cache: %w", err)
	}
	fetcher := &source.Fetcher{Store: store, Reader: mgr.GetAPIReader(), MaxArchiveBytes: limits.MaxTotalBytes, Verify: opts.Verify}
	fetcher.Git = &source.Git{Store: store, Reader: mgr.GetAPIReader()}
	fetcher.OCI = &source.OCI{Store: store, Reader: mgr.GetAPIReader(), MaxArchiveBytes: limits.MaxTotalBytes}
	if opts.Configure != nil {
		if err := opts.Configure(fetcher); err != nil {
			return nil, err
		}
	}
	return fetcher, nil
}

// addOrchestration makes the orchestrator (operations run in pods with calaf-runner) and
// registers the Operation reconciler; both ask for reconciles through triggers.
func addOrchestration(mgr ctrl.Manager, opts Options, triggers *controller.Triggers, log logr.Logger) (*orchestration.Orchestrator, error) {
	log = log.WithName("orchestrator")
	runner, err := orchestration.LoadRunner(opts.RunnerPath)
	if err != nil {
		log.Error(err, "operations cannot run: nodes with operations will fail until the operator has a runner")
	} else {
		log.Info("runner loaded", "path", runner.Path, "hash", runner.Hash, "bytes", runner.Size)
	}
	recorder := mgr.GetEventRecorder("calaf-operator")
	orchestrator := orchestration.NewOrchestrator(mgr.GetClient(), orchestration.NewPodExecutor(mgr.GetConfig(), runner), orchestration.Options{
		Recorder: recorder,
		Metrics:  orchestration.NewMetrics(metrics.Registry),
		Notify:   triggers.Trigger,
		Log:      log,
	})
	operations := &orchestration.OperationReconciler{Client: mgr.GetClient(), Notify: triggers.Trigger, Recorder: recorder}
	return orchestrator, operations.SetupWithManager(mgr)
}

// addWebhook serves the push webhook when one is configured. It runs on the leader only,
// where the reconciler it triggers runs.
func addWebhook(mgr ctrl.Manager, opts Options, triggers *controller.Triggers, log logr.Logger) error {
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
		Trigger:   triggers.Trigger,
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
