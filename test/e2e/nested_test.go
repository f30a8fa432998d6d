//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// nestedCore copies examples/nested-core into a temporary directory, with placement (a
// policies section of core.yaml) when given, and returns it.
func nestedCore(t *testing.T, placement string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(framework.RepoRoot(), "examples", "nested-core")
	NewWithT(t).Expect(filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if rel == filepath.Join("Definitions", "core.yaml") && placement != "" {
			data = []byte(strings.Replace(string(data), "\n  outputs:\n", "\n"+placement+"\n  outputs:\n", 1))
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})).To(Succeed())
	return dir
}

// readySince is when a Service's Ready condition last turned True.
func readySince(svc *v1alpha1.Service) time.Time {
	if ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady); ready != nil {
		return ready.LastTransitionTime.Time
	}
	return time.Time{}
}

// The project's nested core on real pods: its node db, of the type its database template
// substitutes, is the Service core-db (labelled with its parent), which deploys the
// database's pods; the database's url (from its Service's cluster IP) is the core's
// output; the core's front, which requires db, is created only once core-db is Ready;
// calaf status shows the tree; deleting the core removes both, pods included.
func TestNestedServices(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-nested")
	calaf(t, "deploy", "core", nestedCore(t, ""), "-n", ns, "--wait", "--wait-timeout=4m")
	core := waitReady(t, ns, "core", time.Minute)
	child := waitReady(t, ns, "core-db", time.Minute)
	g.Expect(child.Labels).To(HaveKeyWithValue(v1alpha1.LabelParent, "core"))
	g.Expect(child.Spec.Template).To(Equal("Definitions/database.yaml"))
	url, ok := output(core, "database_url").(string)
	g.Expect(ok).To(BeTrue(), "outputs: %v", core.Status.Outputs)
	g.Expect(url).To(MatchRegexp(`^http://10\.96\.[0-9.]+:5432/sessions$`))
	g.Expect(output(child, "url")).To(Equal(url))
	g.Expect(waitPods(t, c, ns, "core-db", "server", 1)).To(HaveLen(1))

	front, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, "core-front", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(front.CreationTimestamp.Time).NotTo(BeTemporally("<", readySince(child)), "front was created before core-db was Ready")

	status := calaf(t, "status", "core", "-n", ns)
	g.Expect(status).To(ContainSubstring("node db is Service core-db:"))
	g.Expect(status).To(ContainSubstring("Service " + ns + "/core-db: Ready=True"))

	calaf(t, "delete", "core", "-n", ns, "--wait", "--timeout=3m")
	err = suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "core-db"}, &v1alpha1.Service{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "core-db: %v", err)
	g.Eventually(func() int { return len(servicePods(t, c, ns, "core-db", "server")) }, time.Minute, time.Second).Should(BeZero())
	deployments, err := c.Clientset.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelService})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deployments.Items).To(BeEmpty())
}

// The nested core with its database placed on the second control plane (a placement
// policy): core-db lives beside the core, its objects in the remote cluster (the test
// plays the Deployment controller that control plane lacks); the url, from the remote
// Service's cluster IP, is the core's output; the core's front runs here once core-db is
// Ready; deleting the core leaves nothing there.
func TestNestedServiceOnRemoteCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	remoteClient, kubeconfig := remoteCluster(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-nested-remote")
	g.Expect(remoteClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	kubeconfigSecret(t, ns, "site-a-kubeconfig", kubeconfig)
	placement := `  policies:
  - db_at_site_a:
      type: calaf.policies.Placement
      targets: [ db ]
      properties: { kubeconfig_secret: site-a-kubeconfig }`
	calaf(t, "deploy", "core", nestedCore(t, placement), "-n", ns)

	g.Eventually(func() error {
		return remoteClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "core-db-server"}, &appsv1.Deployment{})
	}, 2*time.Minute, time.Second).Should(Succeed(), "operator log:\n%s", suite.operator.Tail(30))
	_, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, "core-front", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "front is applied before core-db is Ready: %v", err)
	playDeploymentController(t, remoteClient, ns, "core-db-server", true)

	core := waitReady(t, ns, "core", 3*time.Minute)
	child := getService(t, ns, "core-db")
	g.Expect(child.Status.Cluster).To(Equal(remoteServer))
	g.Expect(output(core, "database_url")).To(MatchRegexp(`^http://10\.97\.[0-9.]+:5432/sessions$`))
	_, err = c.Clientset.AppsV1().Deployments(ns).Get(ctx, "core-db-server", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the database's objects must be in the remote cluster only: %v", err)
	g.Expect(waitPods(t, c, ns, "core", "front", 1)).To(HaveLen(1))

	calaf(t, "delete", "core", "-n", ns, "--wait", "--timeout=3m")
	for _, list := range []client.ObjectList{&corev1.ServiceList{}, &appsv1.DeploymentList{}} {
		g.Expect(remoteClient.List(ctx, list, client.InNamespace(ns), client.HasLabels{v1alpha1.LabelService})).To(Succeed())
		g.Expect(apimeta.LenList(list)).To(BeZero(), "%T left in the remote cluster", list)
	}
}
