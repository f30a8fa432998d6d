package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
)

// site is a Calaf operator serving the remote cluster (in this process, with metrics of
// its own), started once for the tests that delegate to it.
var site struct {
	once sync.Once
	err  error
}

func siteOperator(t *testing.T) {
	t.Helper()
	remoteCluster(t)
	site.once.Do(func() { site.err = startSite() })
	if site.err != nil {
		t.Fatalf("the site's operator: %v", site.err)
	}
}

func startSite() error {
	opts := env.opts
	opts.Registry = prometheus.NewRegistry()
	opts.PackageCacheDir = filepath.Join(os.TempDir(), fmt.Sprintf("calaf-test-site-packages-%d", os.Getpid()))
	process, err := operator.NewProcess(remote.config, opts, zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	if err != nil {
		return err
	}
	mgr, _, err := process.NewManager()
	if err != nil {
		return err
	}
	go func() { _ = mgr.Start(env.ctx) }()
	return nil
}

// delegatedPackage reads test/multicluster/endpoint: a ConfigMap and a Service of
// Kubernetes whose cluster IP (allocated by the API server) is in the output url.
func delegatedPackage(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "test", "multicluster", "endpoint", "service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A Service delegated to the remote cluster's own operator: its copy there (with its
// uploaded package and inputs ConfigMap) is deployed by that operator, and this Service
// says what it says (Ready, its outputs). With this operator stopped, the site goes on:
// an object deleted there is recreated (here the Service whose cluster IP the output
// reads, which gets a new one); started again, this Service's status catches up — the
// new output — with nothing applied again (the copy's generation unchanged). Deleted, it
// takes the site's Service and the copies with it.
func TestDelegatedServiceKeepsRunningAtItsSite(t *testing.T) {
	siteOperator(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	remoteNamespace(t, ns)
	kubeconfigSecret(t, ns, "site-a", "value", remote.kubeconfig)
	inputs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "greetings"}, Data: map[string]string{"greeting": "hola"}}
	g.Expect(env.client.Create(ctx, inputs)).To(Succeed())
	key := createTargeted(t, ns, "edge", upload(t, ns, "edge", map[string]string{"service.yaml": delegatedPackage(t)}),
		v1alpha1.SecretKeyReference{Name: "site-a"}, func(svc *v1alpha1.Service) {
			svc.Spec.KubeConfig.Delegate = true
			svc.Spec.InputsFrom = []v1alpha1.InputsReference{{Kind: "ConfigMap", Name: "greetings"}}
		})
	hub := waitReady(t, key)
	atSite := &v1alpha1.Service{}
	g.Expect(remote.client.Get(ctx, key, atSite)).To(Succeed())
	g.Expect(atSite.Spec.KubeConfig).To(BeNil())
	g.Expect(condition(atSite, v1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	url := string(hub.Status.Outputs["url"].Raw)
	g.Expect(url).To(MatchRegexp(`^"http://[0-9.]+/hola"$`))
	g.Expect(url).To(Equal(string(atSite.Status.Outputs["url"].Raw)))
	g.Expect(hub.Status.Package.Revision).To(Equal(atSite.Status.Package.Revision))
	absentLocally(g, ns, "settings")
	generation := atSite.Generation

	env.stop() // the hub is cut off
	stopped := true
	defer func() {
		if stopped {
			restartOperator(t)
		}
	}()
	endpoint := &corev1.Service{}
	g.Expect(remote.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "endpoint"}, endpoint)).To(Succeed())
	g.Expect(remote.client.Delete(ctx, endpoint)).To(Succeed())
	var newURL string
	g.Eventually(func(g Gomega) {
		recreated := &corev1.Service{}
		g.Expect(remote.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "endpoint"}, recreated)).To(Succeed())
		g.Expect(recreated.UID).NotTo(Equal(endpoint.UID))
		g.Expect(remote.client.Get(ctx, key, atSite)).To(Succeed())
		newURL = string(atSite.Status.Outputs["url"].Raw)
		g.Expect(newURL).To(ContainSubstring(recreated.Spec.ClusterIP))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "the site repairs its drift without the hub")
	g.Expect(getService(g, key).Status.Outputs["url"].Raw).To(BeEquivalentTo(url), "the hub is stopped")

	restartOperator(t)
	stopped = false
	g.Eventually(func() string { return string(getService(g, key).Status.Outputs["url"].Raw) }, 30*time.Second, 200*time.Millisecond).
		Should(Equal(newURL), "the hub's status catches up")
	handledReconcile(t, key)
	g.Expect(remote.client.Get(ctx, key, atSite)).To(Succeed())
	g.Expect(atSite.Generation).To(Equal(generation), "the site's Service was not changed")

	g.Expect(env.client.Delete(ctx, &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, key, &v1alpha1.Service{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	g.Expect(apierrors.IsNotFound(remote.client.Get(ctx, key, &v1alpha1.Service{}))).To(BeTrue(), "the site's Service is left")
	g.Expect(apierrors.IsNotFound(remote.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greetings"}, &corev1.ConfigMap{}))).To(BeTrue(), "the copy is left")
	g.Expect(apierrors.IsNotFound(remote.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &corev1.ConfigMap{}))).To(BeTrue(), "the site's objects are left")
}
