package lifecycle_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi/helmchart"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/internal/outbound"
	"calaf.io/calaf/nfvo"
	"calaf.io/calaf/nfvo/nfvostub"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/worker"
)

// The lifecycle tests run the whole operator (Service reconciler and lifecycle
// reconciler) against a real kube-apiserver and etcd. There is no kubelet: workloads are
// made ready by a stand-in that writes their status as a kubelet and the workload
// controllers would (readyWorkloads); pods and hooks are the node-mode tests' (test/e2e).
// pushToken is the push webhook's token: it opens no other receiver.
const pushToken = "push-token"

var env struct {
	client client.WithWatch
	// nfvo grants the occurrences of VNF instances, refusing those of Services named
	// "denied-…".
	nfvo *nfvostub.Stub
	// webhook is the URL of the operator's webhook server (alerts), token its token.
	webhook, token string
	// ahead is how far the alert receiver's clock runs ahead of the real one: a test
	// moves it past a cooldown instead of waiting.
	ahead atomic.Int64
}

// aheadClock is the alert receiver's clock: the real time, plus env.ahead.
func aheadClock() time.Time { return time.Now().Add(time.Duration(env.ahead.Load())) }

// advanceClock moves the alert receiver's clock forward by d, until the test ends.
func advanceClock(t *testing.T, d time.Duration) {
	env.ahead.Add(int64(d))
	t.Cleanup(func() { env.ahead.Add(-int64(d)) })
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
	opts := operator.DefaultOptions()
	opts.MetricsAddress, opts.HealthAddress = "0", "0"
	opts.PackageCacheDir = filepath.Join(os.TempDir(), fmt.Sprintf("calaf-lifecycle-packages-%d", os.Getpid()))
	opts.ProgressInterval = time.Second
	// The subscribers' endpoints are test servers on this host: the outbound policy
	// allows 127.0.0.1 by name.
	opts.OutboundAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	env.nfvo = &nfvostub.Stub{Token: "nfvo-token", Refuse: func(r nfvo.GrantRequest) string {
		if strings.HasPrefix(r.VnfInstanceID, "denied-") {
			return "no capacity left for " + r.VnfInstanceID
		}
		return ""
	}}
	nfvoServer := httptest.NewServer(env.nfvo)
	defer nfvoServer.Close()
	opts.NFVO, _ = url.Parse(nfvoServer.URL)
	opts.NFVOAuth = outbound.Auth{Bearer: "nfvo-token"}
	opts.VNFMRoot = "https://vnfm.example"
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.webhook, env.token = "http://"+listener.Addr().String(), "alert-token"
	// Each receiver has its own token; plain HTTP, asked for explicitly, on this host.
	opts.WebhookListener, opts.WebhookInsecureHTTP = listener, true
	opts.AlertToken = func() ([]byte, error) { return []byte(env.token), nil }
	opts.Now = aheadClock
	opts.WebhookToken = func() ([]byte, error) { return []byte(pushToken), nil }
	mgr, _, err := operator.NewManager(config, opts, zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating the operator:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(ctrl.SetupSignalHandler())
	defer cancel()
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "operator stopped:", err)
		}
	}()
	if env.client, err = client.NewWithWatch(config, client.Options{Scheme: operator.NewScheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func zapLevel() zapcore.Level {
	if os.Getenv("CALAF_TEST_VERBOSE") != "" {
		return -2
	}
	return 2
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "calaf-lcm-"}}
	NewWithT(t).Expect(env.client.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

// upload packs files into a package stored in a ConfigMap, as `calaf deploy` does.
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

// deploy creates a Service of a package and waits until it is Ready.
func deploy(t *testing.T, ns, name string, files map[string]string, mutate func(*v1alpha1.Service)) *v1alpha1.Service {
	t.Helper()
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	svc.Spec.Source = upload(t, ns, name, files)
	svc.Spec.Timeout = &metav1.Duration{Duration: time.Minute}
	if mutate != nil {
		mutate(svc)
	}
	NewWithT(t).Expect(env.client.Create(context.Background(), svc)).To(Succeed())
	return waitReady(t, client.ObjectKeyFromObject(svc))
}

func getService(g Gomega, key client.ObjectKey) *v1alpha1.Service {
	svc := &v1alpha1.Service{}
	g.Expect(env.client.Get(context.Background(), key, svc)).To(Succeed())
	return svc
}

// waitReady waits until a Service is Ready for its current generation.
func waitReady(t *testing.T, key client.ObjectKey) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = getService(g, key)
		ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s: %s", ready.Reason, ready.Message)
		g.Expect(svc.Status.ObservedGeneration).To(Equal(svc.Generation))
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	return svc
}

// occurrence creates an Operation of a Service.
func occurrence(t *testing.T, ns, service string, spec v1alpha1.OperationSpec) *v1alpha1.Operation {
	t.Helper()
	spec.ServiceName = service
	op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{GenerateName: service + "-", Namespace: ns}, Spec: spec}
	NewWithT(t).Expect(env.client.Create(context.Background(), op)).To(Succeed())
	return op
}

// waitState waits until an occurrence is in a state and returns it.
func waitState(t *testing.T, op *v1alpha1.Operation, state v1alpha1.OperationState, timeout time.Duration) *v1alpha1.Operation {
	t.Helper()
	current := &v1alpha1.Operation{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.client.Get(context.Background(), client.ObjectKeyFromObject(op), current)).To(Succeed())
		g.Expect(current.Status.OperationState).To(Equal(state), "message: %s; steps: %+v", current.Status.Message, current.Status.Steps)
	}, timeout, 100*time.Millisecond).Should(Succeed())
	return current
}

// waitReached waits until an occurrence went through a state (it may be past it already:
// a step that finishes within the poll interval is not missed) and returns it.
func waitReached(t *testing.T, op *v1alpha1.Operation, state v1alpha1.OperationState, timeout time.Duration) *v1alpha1.Operation {
	t.Helper()
	current := &v1alpha1.Operation{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.client.Get(context.Background(), client.ObjectKeyFromObject(op), current)).To(Succeed())
		g.Expect(states(current)).To(ContainElement(state), "message: %s", current.Status.Message)
	}, timeout, 100*time.Millisecond).Should(Succeed())
	return current
}

// states lists the states an occurrence went through.
func states(op *v1alpha1.Operation) []v1alpha1.OperationState {
	var out []v1alpha1.OperationState
	for _, tr := range op.Status.Transitions {
		out = append(out, tr.State)
	}
	return out
}

// update changes an Operation's spec with fn, retrying on conflicts; it returns the API
// server's answer.
func update(op *v1alpha1.Operation, fn func(*v1alpha1.Operation)) error {
	for {
		current := &v1alpha1.Operation{}
		if err := env.client.Get(context.Background(), client.ObjectKeyFromObject(op), current); err != nil {
			return err
		}
		fn(current)
		err := env.client.Update(context.Background(), current)
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// events returns the reasons of the Events about an object, oldest first.
func events(t *testing.T, ns, name string) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	NewWithT(t).Expect(env.client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// workloads is the stand-in for a kubelet and the workload controllers: it makes the
// Deployments of a namespace ready (their status says so), except those it holds back.
type workloads struct {
	mu      sync.Mutex
	holding map[string]bool
}

// readyWorkloads starts the stand-in in a namespace until the test ends.
func readyWorkloads(t *testing.T, ns string) *workloads {
	w := &workloads{holding: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			w.sync(ctx, ns)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return w
}

// hold keeps a Deployment from becoming ready (release: false).
func (w *workloads) hold(name string, hold bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.holding[name] = hold
}

func (w *workloads) sync(ctx context.Context, ns string) {
	list := &appsv1.DeploymentList{}
	if err := env.client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range list.Items {
		d := &list.Items[i]
		w.mu.Lock()
		held := w.holding[d.Name]
		w.mu.Unlock()
		replicas := int32(1)
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		if held || d.Status.ObservedGeneration == d.Generation && d.Status.ReadyReplicas == replicas && d.Status.Replicas == replicas {
			continue
		}
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: replicas, ReadyReplicas: replicas, UpdatedReplicas: replicas, AvailableReplicas: replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		}
		_ = env.client.Status().Update(ctx, d)
	}
}

// replicas returns a Deployment's spec.replicas.
func replicas(g Gomega, ns, name string) int32 {
	d := &appsv1.Deployment{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}
