package onboarding_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi/helmchart"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/test/raceworker"
	"calaf.io/calaf/worker"
)

// env is the test environment: a real kube-apiserver and etcd, and the operator (every
// reconciler, its workers) running in this process against them.
var env struct {
	client client.WithWatch
	config *rest.Config
	ctx    context.Context
	// kubeconfig is a kubeconfig file of an admin, for the calaf commands.
	kubeconfig string
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
	if env.kubeconfig, err = writeKubeconfig(testEnv); err != nil {
		fmt.Fprintln(os.Stderr, "a kubeconfig:", err)
		return 1
	}
	defer os.Remove(env.kubeconfig)
	opts := operator.DefaultOptions()
	opts.MetricsAddress, opts.HealthAddress = "0", "0"
	opts.PackageCacheDir = filepath.Join(os.TempDir(), fmt.Sprintf("calaf-onboarding-test-%d", os.Getpid()))
	opts.ProgressInterval = time.Second
	command, cleanup, err := raceworker.Command()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	opts.Workers.Command = command
	mgr, _, err := operator.NewManager(config, opts, zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating the operator:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(ctrl.SetupSignalHandler())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "operator stopped:", err)
		}
	}()
	defer func() { cancel(); <-done }()
	env.ctx, env.config = ctx, config
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
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "calaf-onboarding-"}}
	NewWithT(t).Expect(env.client.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

// getPackage reads a VnfPackage.
func getPackage(g Gomega, key client.ObjectKey) *v1alpha1.VnfPackage {
	pkg := &v1alpha1.VnfPackage{}
	g.Expect(env.client.Get(context.Background(), key, pkg)).To(Succeed())
	return pkg
}

// waitOnboarding waits until a package's onboarding of its generation ended in state.
func waitOnboarding(t *testing.T, key client.ObjectKey, state v1alpha1.OnboardingState) *v1alpha1.VnfPackage {
	t.Helper()
	var pkg *v1alpha1.VnfPackage
	NewWithT(t).Eventually(func(g Gomega) {
		pkg = getPackage(g, key)
		g.Expect(pkg.Status.ObservedGeneration).To(Equal(pkg.Generation))
		g.Expect(pkg.Status.OnboardingState).To(Equal(state), "status: %+v", pkg.Status)
	}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
	return pkg
}

// writeKubeconfig writes the kubeconfig of an admin of the test environment to a file.
func writeKubeconfig(testEnv *envtest.Environment) (string, error) {
	user, err := testEnv.AddUser(envtest.User{Name: "calaf-cli", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "calaf-onboarding-kubeconfig-")
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = f.Write(data)
	return f.Name(), err
}
