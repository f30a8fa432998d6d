//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// expectVNF waits until the Service reports, for every VDU, the desired replicas given and
// as many ready, and for every aspect the scale level given.
func expectVNF(t *testing.T, ns, name string, replicas map[string]int32, aspects map[string]int32) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = getService(t, ns, name)
		g.Expect(svc.Status.VNF).NotTo(BeNil())
		got := map[string]int32{}
		for _, vdu := range svc.Status.VNF.VDUs {
			g.Expect(vdu.ReadyReplicas).To(Equal(vdu.DesiredReplicas), "VDU %s", vdu.VduID)
			got[vdu.VduID] = vdu.DesiredReplicas
		}
		g.Expect(got).To(Equal(replicas))
		levels := map[string]int32{}
		for _, a := range svc.Status.VNF.ScaleStatus {
			levels[a.AspectID] = a.ScaleLevel
		}
		g.Expect(levels).To(Equal(aspects))
	}, 3*time.Minute, time.Second).Should(Succeed(), "operator log:\n%s", suite.operator.Tail(30))
	return svc
}

// runningPods counts the Running pods of a VDU node of a Service.
func runningPods(t *testing.T, c *framework.Cluster, ns, service, node string) int {
	t.Helper()
	pods, err := c.Clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == "Running" && p.DeletionTimestamp == nil && strings.HasPrefix(p.Name, node) {
			running++
		}
	}
	return running
}

// expectGone waits until the namespace holds no workload, Service, ConfigMap (but the
// cluster's own) or pod.
func expectGone(t *testing.T, c *framework.Cluster, ns string) {
	t.Helper()
	ctx := context.Background()
	NewWithT(t).Eventually(func(g Gomega) {
		deployments, _ := c.Clientset.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		sets, _ := c.Clientset.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		replicaSets, _ := c.Clientset.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		services, _ := c.Clientset.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		pods, _ := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		g.Expect(len(deployments.Items) + len(sets.Items) + len(replicaSets.Items) + len(services.Items) + len(pods.Items)).To(BeZero())
		configMaps, _ := c.Clientset.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=calaf"})
		g.Expect(configMaps.Items).To(BeEmpty())
	}, 2*time.Minute, time.Second).Should(Succeed())
}

// The Tacker-style CNF deploys its simple flavour from manifests through a Service with
// spec.instantiate: the ReplicaSet and StatefulSet VDUs run the level's replicas, status
// shows them and the aspect level; another instantiationLevelId changes the replicas; a
// wrong flavourId stalls with the flavour list; deleting removes everything.
func TestEtsiManifestsCNF(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-etsi")
	ctx := context.Background()

	calaf(t, "deploy", "cnf", "test/etsi/cnf-manifests", "-n", ns, "--instantiate", "test/etsi/cnf-manifests.simple.json", "--wait", "--wait-timeout=4m")
	svc := expectVNF(t, ns, "cnf", map[string]int32{"front": 1, "store": 1}, map[string]int32{"front_aspect": 0})
	g.Expect(svc.Spec.Instantiate.FlavourID).To(Equal("simple"))
	g.Expect(svc.Status.VNF.FlavourID).To(Equal("simple"))
	g.Expect(svc.Status.VNF.InstantiationLevelID).To(Equal("instantiation_level_1"))
	g.Expect(strings.Join(svc.Status.Warnings, "\n")).To(ContainSubstring(`its namespace "default" is replaced`))
	g.Expect(runningPods(t, c, ns, "cnf", "front")).To(Equal(1))
	g.Expect(runningPods(t, c, ns, "cnf", "store")).To(Equal(1))
	front, err := c.Clientset.AppsV1().ReplicaSets(ns).Get(ctx, "front", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	calaf(t, "deploy", "cnf", "test/etsi/cnf-manifests", "-n", ns, "--instantiate", "test/etsi/cnf-manifests.simple-level2.json", "--wait", "--wait-timeout=4m")
	svc = expectVNF(t, ns, "cnf", map[string]int32{"front": 2, "store": 2}, map[string]int32{"front_aspect": 1})
	g.Expect(svc.Status.VNF.InstantiationLevelID).To(Equal("instantiation_level_2"))
	g.Eventually(func() int { return runningPods(t, c, ns, "cnf", "front") }, time.Minute, time.Second).Should(Equal(2))
	g.Eventually(func() int { return runningPods(t, c, ns, "cnf", "store") }, time.Minute, time.Second).Should(Equal(2))
	scaled, err := c.Clientset.AppsV1().ReplicaSets(ns).Get(ctx, "front", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(scaled.UID).To(Equal(front.UID), "scaled in place")
	status := calaf(t, "status", "cnf", "-n", ns)
	g.Expect(status).To(ContainSubstring("VNF: flavour simple, instantiation level instantiation_level_2"))
	g.Expect(status).To(MatchRegexp(`front\s+ReplicaSet/front\s+2/2`))
	g.Expect(status).To(ContainSubstring("aspect front_aspect: scale level 1 of 2"))

	svc = getService(t, ns, "cnf")
	svc.Spec.Instantiate.FlavourID = "huge"
	g.Expect(suite.client.Update(ctx, svc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		svc := getService(t, ns, "cnf")
		stalled := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionStalled)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Message).To(ContainSubstring(`flavourId "huge" is not a deployment flavour of this package; its flavours: complex (Definitions/hello_df_complex.yaml), simple (Definitions/hello_df_simple.yaml)`))
	}, time.Minute, time.Second).Should(Succeed())
	g.Expect(runningPods(t, c, ns, "cnf", "front")).To(Equal(2), "what runs is left alone")

	calaf(t, "delete", "cnf", "-n", ns, "--wait")
	expectGone(t, c, ns)
}

// The OsContainer CNF: Calaf builds a Deployment of two containers and a StatefulSet with
// a claim per pod from the SOL001 container types; the default level, then "busy".
func TestEtsiOsContainerCNF(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-etsi")
	ctx := context.Background()

	calaf(t, "deploy", "shop", "test/etsi/cnf-oscontainer", "-n", ns, "--instantiate", "test/etsi/cnf-oscontainer.basic.yaml", "--wait", "--wait-timeout=4m")
	svc := expectVNF(t, ns, "shop", map[string]int32{"catalog": 1, "orders": 1}, map[string]int32{"catalog_aspect": 0})
	g.Expect(svc.Spec.Instantiate.FlavourID).To(Equal("standard"))
	g.Expect(svc.Status.VNF.InstantiationLevelID).To(Equal("basic"), "the flavour's default level")
	catalog, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, "catalog", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(catalog.Spec.Template.Spec.Containers).To(HaveLen(2))
	g.Expect(catalog.Spec.Template.Spec.Containers[0].Resources.Limits.Cpu().MilliValue()).To(BeEquivalentTo(200))
	claims, err := c.Clientset.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claims.Items).To(HaveLen(1))
	g.Expect(string(claims.Items[0].Status.Phase)).To(Equal("Bound"))

	calaf(t, "deploy", "shop", "test/etsi/cnf-oscontainer", "-n", ns, "--instantiate", "test/etsi/cnf-oscontainer.busy.yaml", "--wait", "--wait-timeout=4m")
	expectVNF(t, ns, "shop", map[string]int32{"catalog": 2, "orders": 1}, map[string]int32{"catalog_aspect": 1})
	g.Eventually(func() int { return runningPods(t, c, ns, "shop", "catalog") }, time.Minute, time.Second).Should(Equal(2))

	calaf(t, "delete", "shop", "-n", ns, "--wait")
	expectGone(t, c, ns)
}

// The Helm CNF: the chart is rendered in-process and its objects applied by Calaf — no
// release Secret — with the level's replicas through helm_value_names; deleting the
// Service removes the chart's objects too.
func TestEtsiHelmCNF(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-etsi")
	ctx := context.Background()

	calaf(t, "deploy", "helm", "test/etsi/cnf-helm", "-n", ns, "--instantiate", "test/etsi/cnf-helm.simple.json", "--wait", "--wait-timeout=4m")
	svc := expectVNF(t, ns, "helm", map[string]int32{"VDU1": 2, "VDU2": 3}, map[string]int32{"vdu1_aspect": 1, "vdu2_aspect": 2})
	g.Expect(svc.Status.VNF.VDUs[0].Workload).To(Equal("Deployment/vdu1-helm"))
	web, err := c.Clientset.CoreV1().Services(ns).Get(ctx, "web-helm", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(web.Spec.Ports[0].Port).To(BeEquivalentTo(8081), "helm_parameters")
	secrets, err := c.Clientset.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, s := range secrets.Items {
		g.Expect(string(s.Type)).NotTo(HavePrefix("helm.sh/"), "no Helm release Secret")
	}
	pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range pods.Items {
		g.Expect(p.Name).NotTo(HavePrefix("test-"), "test hooks are not run")
	}

	calaf(t, "delete", "helm", "-n", ns, "--wait")
	expectGone(t, c, ns)
}

// The CNF written with every tolerated idiom deploys; status lists the warnings.
func TestEtsiIdiomsCNF(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-etsi")

	calaf(t, "deploy", "idioms", "test/etsi/cnf-idioms", "-n", ns, "--instantiate", "test/etsi/cnf-idioms.simple.json", "--wait", "--wait-timeout=4m")
	svc := expectVNF(t, ns, "idioms", map[string]int32{"VDU1": 1}, map[string]int32{})
	warnings := strings.Join(svc.Status.Warnings, "\n")
	for _, want := range []string{`"Created-by" is spelled "Created-By"`, "by URL: the package's copy", "requirements: is empty (null)",
		"operation written as []", "requirement mapping written as []", `artifact file read as extension`, "fewer than the minimum 1"} {
		g.Expect(warnings).To(ContainSubstring(want))
	}
	calaf(t, "delete", "idioms", "-n", ns, "--wait")
	expectGone(t, c, ns)
	_ = client.ObjectKey{}
}
