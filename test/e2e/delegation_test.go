//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// siteOperator installs Calaf's CRDs in the second control plane and starts a Calaf
// operator serving it (a site's own), stopped when t ends.
func siteOperator(t *testing.T, remoteClient client.Client, kubeconfig []byte) *framework.Operator {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	NewWithT(t).Expect(framework.InstallCRDs(ctx, remoteClient)).To(Succeed())
	dir := t.TempDir()
	path := filepath.Join(dir, "site.kubeconfig")
	NewWithT(t).Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	op := &framework.Operator{Binary: suite.calaf, LogPath: filepath.Join(os.TempDir(), "calaf-e2e-site-operator.log"),
		Args: []string{"--kubeconfig=" + path, "--progress-interval=2s", "--package-cache-dir=" + filepath.Join(dir, "packages")}}
	NewWithT(t).Expect(op.Start()).To(Succeed())
	t.Cleanup(op.Stop)
	return op
}

// delegatedPackage reads test/multicluster/endpoint: a ConfigMap and a Service of
// Kubernetes whose cluster IP (allocated by the API server) is in the output url.
func delegatedPackage(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "test", "multicluster", "endpoint", "service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A Service delegated to the site's own operator (the second control plane): its copy
// there, with its uploaded package, is deployed by the site's operator, and the hub's
// Service says what the site's says. With the hub's operator stopped, the site goes on:
// an object deleted there is recreated by the site's operator (the Service whose cluster
// IP the output reads: it gets a new one). The hub started again, its status catches up —
// the new output — with nothing applied to the site again (the copy's generation
// unchanged). Deleted, it takes the site's Service, its objects and the copies with it.
func TestDelegationKeepsTheSiteRunning(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	remoteClient, kubeconfig := remoteCluster(t)
	siteOperator(t, remoteClient, kubeconfig)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-delegation")
	g.Expect(remoteClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	kubeconfigSecret(t, ns, "site-a-kubeconfig", kubeconfig)
	deployFiles(t, suite.kubeconfig, ns, "edge", map[string]string{"service.yaml": delegatedPackage(t)},
		"-i", "greeting=hola", "--kubeconfig-secret", "site-a-kubeconfig", "--delegate")

	hub := waitReady(t, ns, "edge", 2*time.Minute)
	key := client.ObjectKey{Namespace: ns, Name: "edge"}
	atSite := &v1alpha1.Service{}
	g.Expect(remoteClient.Get(ctx, key, atSite)).To(Succeed())
	g.Expect(atSite.Spec.KubeConfig).To(BeNil())
	g.Expect(apimeta.IsStatusConditionTrue(atSite.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
	url := output(hub, "url")
	g.Expect(url).To(MatchRegexp(`^http://10\.97\.[0-9.]+/hola$`))
	g.Expect(output(atSite, "url")).To(Equal(url))
	g.Expect(calaf(t, "status", "edge", "-n", ns)).To(ContainSubstring("Cluster: " + remoteServer))
	generation := atSite.Generation

	suite.operator.Stop() // the hub goes away
	restarted := false
	defer func() {
		if !restarted {
			_ = suite.operator.Start()
		}
	}()
	endpoint := &corev1.Service{}
	g.Expect(remoteClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "endpoint"}, endpoint)).To(Succeed())
	g.Expect(remoteClient.Delete(ctx, endpoint)).To(Succeed())
	var newURL any
	g.Eventually(func(g Gomega) {
		recreated := &corev1.Service{}
		g.Expect(remoteClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "endpoint"}, recreated)).To(Succeed())
		g.Expect(recreated.UID).NotTo(Equal(endpoint.UID))
		g.Expect(remoteClient.Get(ctx, key, atSite)).To(Succeed())
		newURL = output(atSite, "url")
		g.Expect(newURL).To(Equal("http://" + recreated.Spec.ClusterIP + "/hola"))
	}, time.Minute, 500*time.Millisecond).Should(Succeed(), "the site repairs its drift without the hub")
	g.Expect(output(getService(t, ns, "edge"), "url")).To(Equal(url), "the hub is stopped")

	g.Expect(suite.operator.Start()).To(Succeed())
	restarted = true
	g.Eventually(func() any { return output(getService(t, ns, "edge"), "url") }, 2*time.Minute, time.Second).
		Should(Equal(newURL), "the hub's status catches up; operator log:\n%s", suite.operator.Tail(20))
	g.Expect(remoteClient.Get(ctx, key, atSite)).To(Succeed())
	g.Expect(atSite.Generation).To(Equal(generation), "the site's Service was not changed")

	calaf(t, "delete", "edge", "-n", ns, "--wait", "--timeout=3m")
	g.Expect(apierrors.IsNotFound(remoteClient.Get(ctx, key, &v1alpha1.Service{}))).To(BeTrue(), "the site's Service is left")
	for _, name := range []string{"settings", hub.Spec.Source.Upload.ConfigMapName} {
		err := remoteClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap %s left at the site: %v", name, err)
	}
}
