// Package sources tests the package sources end to end on the API-server test ground: a
// real kube-apiserver and etcd (envtest), the operator running in this process, a real
// git server (git http-backend behind net/http/cgi, basic auth) and a real OCI registry
// (distribution v3, built from the module proxy), all on loopback. The packages render
// only ConfigMaps, so no node is needed.
package sources

import (
	"context"
	"fmt"
	"net"
	"net/http"
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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/controller"
	"calaf.io/calaf/etsi/helmchart"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/test/gitserver"
	"calaf.io/calaf/test/ociregistry"
	"calaf.io/calaf/worker"
)

const (
	gitUser       = "calaf"
	gitPassword   = "git-password-for-tests"
	webhookToken  = "webhook-token-for-tests"
	registryUser  = "pusher"
	registryPass  = "registry-password-for-tests"
	profileImport = "imports:\n- https://calaf.io/profiles/kubernetes/1.0/profile.yaml\n"
)

// env is the test ground shared by the tests of this package.
var env struct {
	client   client.Client
	git      *gitserver.Server
	registry *ociregistry.Registry
	webhook  string // URL of POST /hooks/git
	writes   sync.Map
	compiles atomic.Int64
	repos    atomic.Int64
	// triggers are the operator's requests for immediate reconciles (webhook pushes).
	triggers *controller.Triggers
	// retries records the backoff of every failed reconcile of a Service.
	retries *retryLog
}

// retryLog is the operator's default rate limiter of Service reconciles, recording the
// delay it gives each retry, by Service.
type retryLog struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	mu     sync.Mutex
	delays map[client.ObjectKey][]time.Duration
}

func newRetryLog() *retryLog {
	return &retryLog{TypedRateLimiter: workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](), delays: map[client.ObjectKey][]time.Duration{}}
}

// When records the delay before item's next retry.
func (l *retryLog) When(item reconcile.Request) time.Duration {
	d := l.TypedRateLimiter.When(item)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.delays[item.NamespacedName] = append(l.delays[item.NamespacedName], d)
	return d
}

// of returns the delays given to the retries of a Service so far.
func (l *retryLog) of(key client.ObjectKey) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.delays[key])
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
	root, err := os.MkdirTemp("", "calaf-sources-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)

	if env.git, err = gitserver.Start(filepath.Join(root, "git"), gitUser, gitPassword); err != nil {
		fmt.Fprintln(os.Stderr, "git server:", err)
		return 1
	}
	defer env.git.Close()
	if env.registry, err = ociregistry.Start(filepath.Join(root, "registry"), registryUser, registryPass); err != nil {
		fmt.Fprintln(os.Stderr, "OCI registry:", err)
		return 1
	}
	defer env.registry.Stop()

	testEnv := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "deploy", "crd")}, ErrorIfCRDPathMissing: true}
	config, err := testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	defer testEnv.Stop()

	operatorConfig := rest.CopyConfig(config)
	operatorConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			switch req.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
				counter, _ := env.writes.LoadOrStore(namespaceOf(req.URL.Path), &atomic.Int64{})
				counter.(*atomic.Int64).Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.webhook = "http://" + listener.Addr().String() + "/hooks/git"
	opts := operator.DefaultOptions()
	opts.MetricsAddress, opts.HealthAddress = "0", "0"
	opts.PackageCacheDir = filepath.Join(root, "packages")
	opts.ProgressInterval = time.Second
	opts.WebhookListener, opts.WebhookInsecureHTTP = listener, true
	opts.WebhookToken = func() ([]byte, error) { return []byte(webhookToken), nil }
	env.retries = newRetryLog()
	opts.ServiceRateLimiter = env.retries
	mgr, reconciler, err := operator.NewManager(operatorConfig, opts, zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating the operator:", err)
		return 1
	}
	env.triggers = reconciler.Triggers
	countCompiles := reconciler.Compiler.OnCompile
	reconciler.Compiler.OnCompile = func(d time.Duration, err error) {
		env.compiles.Add(1)
		countCompiles(d, err)
	}
	ctx, cancel := context.WithCancel(ctrl.SetupSignalHandler())
	defer cancel()
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "operator stopped:", err)
		}
	}()
	if env.client, err = client.New(config, client.Options{Scheme: operator.NewScheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func namespaceOf(path string) string {
	_, rest, found := strings.Cut(path, "/namespaces/")
	if !found {
		return ""
	}
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}

// writesIn returns the mutating requests the operator sent for objects of a namespace.
func writesIn(namespace string) int64 {
	counter, _ := env.writes.LoadOrStore(namespace, &atomic.Int64{})
	return counter.(*atomic.Int64).Load()
}

func zapLevel() zapcore.Level {
	if os.Getenv("CALAF_TEST_VERBOSE") != "" {
		return -2
	}
	return zapcore.DPanicLevel // errors are in the conditions the tests check
}

// packageFiles is a package with one ConfigMap node "config" (object <service>-config)
// whose data holds the greeting input and a version marker.
func packageFiles(version string) map[string]string {
	return map[string]string{"service.yaml": `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  template_name: sources-test
  template_version: '` + version + `'
` + profileImport + `
topology_template:
  inputs:
    greeting:
      type: string
      default: hello
  node_templates:
    config:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          greeting: { get_input: greeting }
          version: '` + version + `'
`}
}

// newRepo creates a repository on the git server with the package (version v1) under
// deploy/ on branch main, and returns it with its first commit.
func newRepo(t *testing.T) (*gitserver.Repo, string) {
	t.Helper()
	repo, err := env.git.NewRepo(fmt.Sprintf("repo-%d", env.repos.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return repo, pushVersion(t, repo, "v1")
}

// pushVersion commits the package at a version and pushes main.
func pushVersion(t *testing.T, repo *gitserver.Repo, version string) string {
	t.Helper()
	files := map[string]string{}
	for path, content := range packageFiles(version) {
		files["deploy/"+path] = content
	}
	commit, err := repo.Commit("package "+version, files)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push("main"); err != nil {
		t.Fatal(err)
	}
	return commit
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "calaf-sources-"}}
	NewWithT(t).Expect(env.client.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

func createSecret(t *testing.T, secret *corev1.Secret) {
	t.Helper()
	NewWithT(t).Expect(env.client.Create(context.Background(), secret)).To(Succeed())
}

func gitSecret(namespace, name, password string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data: map[string][]byte{"username": []byte(gitUser), "password": []byte(password)}}
}

// gitSource names the package of a repository on the test git server.
func gitSource(repo *gitserver.Repo, ref *v1alpha1.GitRef, secret string) v1alpha1.Source {
	src := &v1alpha1.GitSource{URL: env.git.RepoURL(repo.Name), Ref: ref, Path: "deploy"}
	if secret != "" {
		src.SecretRef = &v1alpha1.LocalObjectReference{Name: secret}
	}
	return v1alpha1.Source{Git: src}
}

func createService(t *testing.T, namespace, name string, src v1alpha1.Source, interval time.Duration) client.ObjectKey {
	t.Helper()
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: v1alpha1.ServiceSpec{Source: src}}
	svc.Spec.Interval = &metav1.Duration{Duration: interval}
	NewWithT(t).Expect(env.client.Create(context.Background(), svc)).To(Succeed())
	return client.ObjectKeyFromObject(svc)
}

func updateService(t *testing.T, key client.ObjectKey, change func(*v1alpha1.Service)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		svc := &v1alpha1.Service{}
		if err := env.client.Get(context.Background(), key, svc); err != nil {
			return err
		}
		change(svc)
		return env.client.Update(context.Background(), svc)
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

func getService(g Gomega, key client.ObjectKey) *v1alpha1.Service {
	svc := &v1alpha1.Service{}
	g.Expect(env.client.Get(context.Background(), key, svc)).To(Succeed())
	return svc
}

func condition(svc *v1alpha1.Service, conditionType string) *metav1.Condition {
	return apimeta.FindStatusCondition(svc.Status.Conditions, conditionType)
}

func isReady(svc *v1alpha1.Service) bool {
	ready := condition(svc, v1alpha1.ConditionReady)
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == svc.Generation &&
		svc.Status.ObservedGeneration == svc.Generation
}

// waitReady waits until the Service is Ready for its generation at a revision (any when
// empty).
func waitReady(t *testing.T, key client.ObjectKey, revision string) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = getService(g, key)
		g.Expect(isReady(svc)).To(BeTrue(), "conditions: %+v", svc.Status.Conditions)
		if revision != "" {
			g.Expect(svc.Status.LastAppliedRevision).To(Equal(revision))
		}
	}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
	return svc
}

// waitStalled waits until the Service is Stalled with reason.
func waitStalled(t *testing.T, key client.ObjectKey, reason string) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = getService(g, key)
		stalled := condition(svc, v1alpha1.ConditionStalled)
		g.Expect(stalled).NotTo(BeNil(), "conditions: %+v", svc.Status.Conditions)
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(stalled.Reason).To(Equal(reason), "conditions: %+v", svc.Status.Conditions)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return svc
}

func getConfigMap(g Gomega, namespace, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, cm)).To(Succeed())
	return cm
}

// waitVersion waits until the Service's ConfigMap holds a version, and returns how long
// that took.
func waitVersion(t *testing.T, namespace, service, version string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(getConfigMap(g, namespace, service+"-config").Data).To(HaveKeyWithValue("version", version))
	}, timeout, 50*time.Millisecond).Should(Succeed())
	return time.Since(start)
}

func jsonInputs(inputs map[string]string) map[string]apiextensionsv1.JSON {
	out := map[string]apiextensionsv1.JSON{}
	for k, v := range inputs {
		out[k] = apiextensionsv1.JSON{Raw: []byte(v)}
	}
	return out
}

// handledReconcile asks for a reconcile of a Service (the annotation calaf reconcile sets)
// and waits until the operator handled that very request: an observable fact, where a
// test must show that something did not change.
func handledReconcile(t *testing.T, key client.ObjectKey) {
	t.Helper()
	requested := time.Now().UTC().Format(time.RFC3339Nano)
	updateService(t, key, func(svc *v1alpha1.Service) {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[v1alpha1.ReconcileRequestAnnotation] = requested
	})
	NewWithT(t).Eventually(func(g Gomega) string {
		return getService(g, key).Status.LastHandledReconcileAt
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(requested))
}
