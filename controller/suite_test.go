package controller_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi/helmchart"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/source"
	"calaf.io/calaf/test/raceworker"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/worker"
)

// env is the test environment: a real kube-apiserver and etcd, and the operator running
// in this process against them.
var env struct {
	client  client.WithWatch
	writes  sync.Map     // namespace → *atomic.Int64: mutating requests the operator sent there
	compile atomic.Int64 // compiles run by the operator
	// resources counts every request the operator sent, by resource (requestedResource).
	resources sync.Map
	// requests counts every request the operator sent, by namespace (a *requestLog each).
	requests sync.Map
	// process keeps the operator's caches; its managers are made by startOperator and
	// ended by stop.
	process *operator.Process
	ctx     context.Context
	stop    func()
	// config and opts made the suite's operator; shards are made from them.
	config *rest.Config
	opts   operator.Options
	// testEnv runs the API server; it makes users of their own (AddUser).
	testEnv *envtest.Environment
}

// startOperator makes a new manager (new reconcilers, as a restarted operator has) and
// starts it; count makes the operator's compiles counted (once per process).
func startOperator(count bool) error {
	mgr, reconciler, err := env.process.NewManager()
	if err != nil {
		return err
	}
	// No controller looks at workloads here: a held status patch waits longer than the
	// default, so that a test can play the controller in time (service_settle_test.go).
	reconciler.SettleDelay = 10 * time.Second
	if count {
		countCompiles := reconciler.Compiler.OnCompile
		reconciler.Compiler.OnCompile = func(d time.Duration, err error) {
			env.compile.Add(1)
			countCompiles(d, err)
		}
	}
	ctx, cancel := context.WithCancel(env.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "operator stopped:", err)
		}
	}()
	env.stop = func() { cancel(); <-done }
	return nil
}

// restartOperator stops the operator's manager and starts a new one, which remembers
// nothing of what the previous one applied.
func restartOperator(t *testing.T) {
	t.Helper()
	env.stop()
	if err := startOperator(false); err != nil {
		t.Fatal(err)
	}
}

// writesIn returns how many mutating requests the operator sent for objects of a namespace.
func writesIn(namespace string) int64 {
	counter, _ := env.writes.LoadOrStore(namespace, &atomic.Int64{})
	return counter.(*atomic.Int64).Load()
}

// requestLog counts requests by class (requestClass).
type requestLog struct {
	lock   sync.Mutex
	counts map[string]int
}

func (l *requestLog) add(class string) {
	l.lock.Lock()
	defer l.lock.Unlock()
	l.counts[class]++
}

// requestsIn returns how many requests the operator sent for a namespace's objects so far,
// by class.
func requestsIn(namespace string) map[string]int {
	log, _ := env.requests.LoadOrStore(namespace, &requestLog{counts: map[string]int{}})
	l := log.(*requestLog)
	l.lock.Lock()
	defer l.lock.Unlock()
	return maps.Clone(l.counts)
}

// requestClass names a request "VERB resource name", VERB one of GET, LIST, WATCH, APPLY
// (a server-side apply patch), PATCH, POST, PUT, DELETE (":metadata" after it: a write
// that asks for the object's metadata alone in answer), resource with its subresource
// ("services/status"); a read of something absent ends in " 404".
func requestClass(req *http.Request, code int) string {
	verb := req.Method
	switch {
	case req.Method == http.MethodGet && req.URL.Query().Get("watch") != "":
		verb = "WATCH"
	case req.Method == http.MethodPatch && strings.HasPrefix(req.Header.Get("Content-Type"), "application/apply-patch"):
		verb = "APPLY"
	}
	if req.Method != http.MethodGet && strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata") {
		verb += ":metadata" // a write answered with the object's metadata alone
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if i := slices.Index(parts, "namespaces"); i >= 0 && len(parts) > i+2 {
		parts = parts[i+2:]
	} else if len(parts) > 0 && parts[0] == "api" {
		parts = parts[min(2, len(parts)):]
	} else {
		parts = parts[min(3, len(parts)):]
	}
	resource, name := strings.Join(parts, "/"), ""
	if len(parts) >= 2 {
		resource, name = parts[0], parts[1]
		if len(parts) > 2 {
			resource += "/" + parts[2]
		}
	} else if verb == http.MethodGet {
		verb = "LIST"
	}
	class := verb + " " + resource + " " + name
	if code == http.StatusNotFound {
		class += " 404"
	}
	return class
}

// namespaceOf extracts the namespace of an API request path.
func namespaceOf(path string) string {
	_, rest, found := strings.Cut(path, "/namespaces/")
	if !found {
		return ""
	}
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}

// reconcileCount returns how many Service reconciles the operator ran so far.
func reconcileCount() float64 {
	families, _ := metrics.Registry.Gather()
	total := 0.0
	for _, family := range families {
		if family.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, metric := range family.GetMetric() {
			for _, label := range metric.GetLabel() {
				if label.GetName() == "controller" && label.GetValue() == "service" {
					total += metric.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

func TestMain(m *testing.M) {
	if code, isWorker := worker.Main(os.Args, helmchart.Engine{}); isWorker {
		os.Exit(code) // the operator's worker processes are this binary too
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run `make test-unit` (it builds kube-apiserver and etcd and sets it)")
		return 1
	}
	testEnv := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "deploy", "crd")}, ErrorIfCRDPathMissing: true}
	config, err := testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	defer testEnv.Stop()
	env.testEnv = testEnv

	operatorConfig := rest.CopyConfig(config)
	operatorConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			counter, _ := env.resources.LoadOrStore(requestedResource(req.URL.Path), &atomic.Int64{})
			counter.(*atomic.Int64).Add(1)
			switch req.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
				counter, _ := env.writes.LoadOrStore(namespaceOf(req.URL.Path), &atomic.Int64{})
				counter.(*atomic.Int64).Add(1)
			}
			resp, err := rt.RoundTrip(req)
			if err == nil {
				log, _ := env.requests.LoadOrStore(namespaceOf(req.URL.Path), &requestLog{counts: map[string]int{}})
				log.(*requestLog).add(requestClass(req, resp.StatusCode))
			}
			return resp, err
		})
	})
	opts := operator.DefaultOptions()
	opts.MetricsAddress, opts.HealthAddress = "0", "0"
	opts.PackageCacheDir = filepath.Join(os.TempDir(), fmt.Sprintf("calaf-test-packages-%d", os.Getpid()))
	opts.ProgressInterval = time.Second
	command, cleanup, err := raceworker.Command() // under -race, workers built without it
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	opts.Workers.Command = command
	// The remote cluster of target_test.go listens on loopback.
	opts.TargetClusterAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	env.config, env.opts = operatorConfig, opts
	env.process, err = operator.NewProcess(operatorConfig, opts, zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating the operator:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(ctrl.SetupSignalHandler())
	defer cancel()
	env.ctx = ctx
	if err := startOperator(true); err != nil {
		fmt.Fprintln(os.Stderr, "creating the operator:", err)
		return 1
	}
	defer env.stop()
	env.client, err = client.NewWithWatch(config, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopRemote()
	return m.Run()
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "calaf-test-"}}
	g.Expect(env.client.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

// upload packs files into a package, stores it in a ConfigMap as `calaf deploy` does,
// and returns the Source naming it.
func upload(t *testing.T, namespace, name string, files map[string]string) v1alpha1.Source {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	for path, content := range files {
		full := filepath.Join(dir, path)
		g.Expect(os.MkdirAll(filepath.Dir(full), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(full, []byte(content), 0o644)).To(Succeed())
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	archive, err := source.Pack(pkg)
	g.Expect(err).NotTo(HaveOccurred())
	sum := source.SHA256(archive)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-" + sum[:8]}, BinaryData: map[string][]byte{source.UploadKey: archive}}
	if err := env.client.Create(context.Background(), cm); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	return v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: cm.Name, SHA256: sum}}
}

// getService reads a Service.
func getService(g Gomega, key client.ObjectKey) *v1alpha1.Service {
	svc := &v1alpha1.Service{}
	g.Expect(env.client.Get(context.Background(), key, svc)).To(Succeed())
	return svc
}

// isReady tells whether a Service is Ready for its current generation.
func isReady(svc *v1alpha1.Service) bool {
	ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == svc.Generation &&
		svc.Status.ObservedGeneration == svc.Generation
}

// waitReady waits until a Service is Ready for its current generation.
func waitReady(t *testing.T, key client.ObjectKey) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = getService(g, key)
		g.Expect(isReady(svc)).To(BeTrue(), "conditions: %+v", svc.Status.Conditions)
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	return svc
}

func condition(svc *v1alpha1.Service, conditionType string) *metav1.Condition {
	return apimeta.FindStatusCondition(svc.Status.Conditions, conditionType)
}

func zapLevel() zapcore.Level {
	if os.Getenv("CALAF_TEST_VERBOSE") != "" {
		return -2
	}
	return 2
}

// handledReconcile asks for a reconcile of a Service (the annotation calaf reconcile sets)
// and waits until the operator handled that very request: an observable fact, where a
// test must show that something did not change.
func handledReconcile(t *testing.T, key client.ObjectKey) {
	t.Helper()
	requested := time.Now().UTC().Format(time.RFC3339Nano)
	g := NewWithT(t)
	g.Eventually(func() error {
		svc := &v1alpha1.Service{}
		if err := env.client.Get(context.Background(), key, svc); err != nil {
			return err
		}
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[v1alpha1.ReconcileRequestAnnotation] = requested
		return env.client.Update(context.Background(), svc)
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func() string {
		return getService(g, key).Status.LastHandledReconcileAt
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(requested))
}
