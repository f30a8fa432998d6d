//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/test/e2e/framework"
)

// remoteServer is the API server of the test ground's second control plane
// (test/ground/remote.sh): no node, no controllers.
const remoteServer = "https://127.0.0.1:16443"

// remote is the second control plane, started once for the tests that need it (and
// stopped by cluster-down).
var remote struct {
	once       sync.Once
	err        error
	kubeconfig []byte
	client     client.Client
}

// remoteCluster starts the second control plane, once, and returns an admin's client of
// it and its admin kubeconfig.
func remoteCluster(t *testing.T) (client.Client, []byte) {
	t.Helper()
	remote.once.Do(func() {
		out, err := remoteScript("up")
		if err != nil {
			remote.err = err
			return
		}
		path := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
		if remote.kubeconfig, remote.err = os.ReadFile(path); remote.err != nil {
			return
		}
		config, err := clientcmd.RESTConfigFromKubeConfig(remote.kubeconfig)
		if err != nil {
			remote.err = err
			return
		}
		remote.client, remote.err = client.New(config, client.Options{Scheme: operator.NewScheme()})
	})
	if remote.err != nil {
		t.Fatalf("the remote control plane: %v", remote.err)
	}
	return remote.client, remote.kubeconfig
}

// remoteScript runs test/ground/remote.sh with an action.
func remoteScript(action string) (string, error) {
	cmd := exec.Command(filepath.Join(framework.RepoRoot(), "test", "ground", "remote.sh"), action)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), &scriptError{action: action, out: string(out), err: err}
	}
	return string(out), nil
}

type scriptError struct {
	action, out string
	err         error
}

func (e *scriptError) Error() string {
	return "remote.sh " + e.action + ": " + e.err.Error() + "\n" + e.out
}

// kubeconfigSecret stores a kubeconfig in a Secret of ns under "value" (Flux's layout).
func kubeconfigSecret(t *testing.T, ns, name string, kubeconfig []byte) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"value": kubeconfig}}
	NewWithT(t).Expect(suite.client.Create(context.Background(), secret)).To(Succeed())
}

// remotePackage is a ConfigMap, a Deployment that depends on it and, unless pruned, a
// second ConfigMap.
func remotePackage(t *testing.T, pruned bool) string {
	t.Helper()
	extra := `    extra:
      type: calaf.nodes.ConfigMap
      properties: { data: { kept: "no" } }
`
	if pruned {
		extra = ""
	}
	dir := t.TempDir()
	template := `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
    conf:
      type: calaf.nodes.ConfigMap
      properties: { data: { site: a } }
` + extra + `    web:
      type: calaf.nodes.Deployment
      properties:
        image: ` + framework.BusyboxImage + `
        command: [ sleep, '3600' ]
      requirements:
      - dependency: conf
`
	NewWithT(t).Expect(os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(template), 0o644)).To(Succeed())
	return dir
}

// playDeploymentController writes the status a Deployment controller would (the remote
// control plane runs none): available when ok, its progress deadline exceeded otherwise.
func playDeploymentController(t *testing.T, c client.Client, ns, name string, ok bool) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		now := metav1.Now()
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", LastUpdateTime: now, LastTransitionTime: now},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: now, LastTransitionTime: now}}}
		if !ok {
			d.Status.ReadyReplicas, d.Status.AvailableReplicas = 0, 0
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet web has timed out progressing.", LastUpdateTime: now, LastTransitionTime: now}}
		}
		return c.Status().Update(context.Background(), d)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}

// A Service whose kubeconfig Secret names the second control plane deploys there and
// nowhere else; it reports the health of its objects there (the test plays the
// Deployment controller the control plane lacks); a deleted object there is recreated; a
// node removed from the package is pruned there. With that API server stopped, the
// Service says ClusterUnreachable naming it while a Service of the operator's own cluster
// deploys; once it is back, the Service is Ready again untouched. Deleted, it leaves
// nothing there.
func TestRemoteClusterTarget(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	remoteClient, kubeconfig := remoteCluster(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-remote")
	g.Expect(remoteClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	kubeconfigSecret(t, ns, "site-a-kubeconfig", kubeconfig)
	calaf(t, "deploy", "site", remotePackage(t, false), "-n", ns, "--kubeconfig-secret", "site-a-kubeconfig")

	remoteCM := func(g Gomega, name string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{}
		g.Expect(remoteClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
		return cm
	}
	g.Eventually(func(g Gomega) {
		g.Expect(remoteClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "site-web"}, &appsv1.Deployment{})).To(Succeed())
	}, 2*time.Minute, time.Second).Should(Succeed(), "operator log:\n%s", suite.operator.Tail(30))
	_, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, "site-web", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Deployment must be in the remote cluster only: %v", err)

	// Health is read there: progressing until its (played) controller says it is available.
	g.Expect(readyReason(t, ns, "site")).To(Equal(v1alpha1.ReasonProgressing))
	playDeploymentController(t, remoteClient, ns, "site-web", true)
	svc := waitReady(t, ns, "site", time.Minute)
	g.Expect(svc.Status.Cluster).To(Equal(remoteServer))
	g.Expect(calaf(t, "status", "site", "-n", ns)).To(ContainSubstring("Cluster: " + remoteServer + " (kubeconfig Secret site-a-kubeconfig)"))

	// Drift there is repaired.
	conf := remoteCM(g, "site-conf")
	g.Expect(remoteClient.Delete(ctx, conf)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(remoteCM(g, "site-conf").UID).NotTo(Equal(conf.UID)) }, time.Minute, 500*time.Millisecond).Should(Succeed())

	// Pruned there.
	remoteCM(g, "site-extra")
	calaf(t, "deploy", "site", remotePackage(t, true), "-n", ns, "--kubeconfig-secret", "site-a-kubeconfig")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(remoteClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "site-extra"}, &corev1.ConfigMap{}))
	}, time.Minute, 500*time.Millisecond).Should(BeTrue())
	waitReady(t, ns, "site", time.Minute)

	// A failure there is reported.
	playDeploymentController(t, remoteClient, ns, "site-web", false)
	g.Eventually(func() string { return readyReason(t, ns, "site") }, time.Minute, time.Second).Should(Equal(v1alpha1.ReasonHealthCheckFailed))
	playDeploymentController(t, remoteClient, ns, "site-web", true)
	waitReady(t, ns, "site", time.Minute)

	remoteOutage(t, ns)

	calaf(t, "delete", "site", "-n", ns, "--wait")
	for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &appsv1.DeploymentList{}} {
		g.Expect(remoteClient.List(ctx, list, client.InNamespace(ns), client.HasLabels{v1alpha1.LabelService})).To(Succeed())
		g.Expect(apimeta.LenList(list)).To(BeZero(), "%T left in the remote cluster", list)
	}
}

// remoteOutage stops the remote API server: the Service of ns says ClusterUnreachable
// naming it while a Service of the operator's own cluster deploys; started again, the
// Service is Ready again without being touched.
func remoteOutage(t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	c := framework.Connect(t)
	if out, err := remoteScript("stop"); err != nil {
		t.Fatal(err, out)
	}
	started := false
	defer func() {
		if !started {
			_, _ = remoteScript("start")
		}
	}()
	calaf(t, "reconcile", "site", "-n", ns)
	g.Eventually(func(g Gomega) {
		svc := getService(t, ns, "site")
		applied := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionApplied)
		g.Expect(applied).NotTo(BeNil())
		g.Expect(applied.Reason).To(Equal(v1alpha1.ReasonClusterUnreachable))
		g.Expect(applied.Message).To(ContainSubstring(remoteServer))
	}, 2*time.Minute, time.Second).Should(Succeed(), "operator log:\n%s", suite.operator.Tail(30))

	local := c.Namespace(t, "e2e-local")
	calaf(t, "deploy", "near", remotePackage(t, true), "-n", local, "--wait", "--wait-timeout=3m")

	if out, err := remoteScript("start"); err != nil {
		t.Fatal(err, out)
	}
	started = true
	waitReady(t, ns, "site", 2*time.Minute)
}

// readyReason is the reason of a Service's Ready condition.
func readyReason(t *testing.T, ns, name string) string {
	t.Helper()
	if ready := apimeta.FindStatusCondition(getService(t, ns, name).Status.Conditions, v1alpha1.ConditionReady); ready != nil {
		return ready.Reason
	}
	return ""
}

// edgeAccount makes the service account edge-deployer of ns, which may manage the
// packages' ConfigMaps, Services and Deployments, read their ReplicaSets and events,
// read, delete and exec into pods — and nothing else (no Secrets) — and returns a token
// of it.
func edgeAccount(t *testing.T, c *framework.Cluster, ns string) string {
	t.Helper()
	ctx := context.Background()
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	read := []string{"get", "list", "watch"}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-deployer"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-deployer"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "services"}, Verbs: all},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: all},
			{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"events", "persistentvolumeclaims"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: append(read, "delete")},
			{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"get", "create"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-deployer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "edge-deployer"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "edge-deployer", Namespace: ns}}},
	} {
		NewWithT(t).Expect(suite.client.Create(ctx, obj)).To(Succeed())
	}
	dir := t.TempDir()
	path, err := framework.AccountKubeconfig(ctx, c.Clientset, suite.kubeconfig, dir, ns, "edge-deployer")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	config, err := clientcmd.LoadFromFile(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return config.AuthInfos[config.Contexts[config.CurrentContext].AuthInfo].Token
}

// vimRequest writes the instantiate request of test/etsi/nfv-cnf with, for its
// vimConnectionInfo, a Kubernetes VIM as Tacker reads one (endpoint, CA, bearer token) and
// returns its path.
func vimRequest(t *testing.T, token string) string {
	t.Helper()
	admin, err := clientcmd.LoadFromFile(suite.kubeconfig)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "test/etsi/nfv-cnf.instantiate.json"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var request map[string]any
	NewWithT(t).Expect(json.Unmarshal(data, &request)).To(Succeed())
	request["vimConnectionInfo"] = map[string]any{"vim1": map[string]any{
		"vimId": "edge-1", "vimType": "ETSINFV.KUBERNETES.V_1",
		"interfaceInfo": map[string]any{"endpoint": cluster.Server, "ssl_ca_cert": string(cluster.CertificateAuthorityData)},
		"accessInfo":    map[string]any{"bearer_token": token},
	}}
	data, err = json.Marshal(request)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), "instantiate.json")
	NewWithT(t).Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
	return path
}

// Services deploy through a kubeconfig with a restricted identity to the one-node
// cluster: an ETSI VNF whose instantiate request's vimConnectionInfo names it (a
// Kubernetes VIM: endpoint, CA, bearer token, as Tacker reads one) runs there; a Service
// with operations, deployed with that kubeconfig, gets its Standard.configure run in its
// pod by exec, and a HEAL replaces a broken pod, all as that identity — what it may not
// do, it does not: a package with a Secret is refused by the API server naming it.
func TestRemotePodsThroughRestrictedKubeconfig(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-edge")
	request := vimRequest(t, edgeAccount(t, c, ns))
	calaf(t, "deploy", "web", "test/etsi/nfv-cnf", "-n", ns, "--instantiate", request, "--wait", "--wait-timeout=4m")
	svc := getService(t, ns, "web")
	g.Expect(svc.Spec.KubeConfig).NotTo(BeNil())
	g.Expect(svc.Spec.KubeConfig.SecretRef.Name).To(Equal("web-vim"))
	g.Expect(svc.Status.Cluster).NotTo(BeEmpty())
	secret := &corev1.Secret{}
	g.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-vim"}, secret)).To(Succeed())
	g.Expect(secret.OwnerReferences).To(HaveLen(1), "the VIM's Secret goes with its Service")

	calaf(t, "deploy", "core", lcmPackage(t, "", 0), "-n", ns, "-i=image="+framework.BusyboxImage, "--kubeconfig-secret", "web-vim", "--wait", "--wait-timeout=4m")
	pods := waitPods(t, c, ns, "core", "smf", 1)
	conf, err := c.Exec(ctx, ns, pods[0], "main", "cat", "/tmp/smf.conf")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conf.Stdout).To(Equal("dnn=internet\n"), "Standard.configure ran in the pod")

	_, err = c.Exec(ctx, ns, pods[0], "main", "rm", "/tmp/smf.conf")
	g.Expect(err).NotTo(HaveOccurred())
	out := calaf(t, "heal", "core", "--pod", pods[0], "-n", ns, "--wait")
	g.Expect(out).To(ContainSubstring("COMPLETED"))
	healed := waitPods(t, c, ns, "core", "smf", 1)
	g.Expect(healed[0]).NotTo(Equal(pods[0]))
	conf, err = c.Exec(ctx, ns, healed[0], "main", "cat", "/tmp/smf.conf")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conf.Stdout).To(Equal("dnn=internet\n"), "the replacement was configured")

	// The identity is the kubeconfig's: it may not create Secrets, and the API server says so.
	deployFiles(t, suite.kubeconfig, ns, "probe", map[string]string{"service.yaml": renderPackage(
		`[ { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'probe' }, stringData: { a: 'b' } } ]`)}, "--kubeconfig-secret", "web-vim")
	failed := waitFailed(t, ns, "probe", v1alpha1.ReasonApplyFailed, func() string { return suite.operator.Tail(30) })
	g.Expect(readyMessage(failed)).To(And(ContainSubstring(`User "system:serviceaccount:`+ns+`:edge-deployer" cannot`), ContainSubstring(`resource "secrets"`)))

	calaf(t, "delete", "core", "-n", ns, "--wait")
	g.Eventually(func() int { return len(servicePods(t, c, ns, "core", "smf")) }, time.Minute, time.Second).Should(BeZero())
}
