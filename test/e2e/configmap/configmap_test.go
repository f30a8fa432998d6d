//go:build e2e

package configmap

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/cmmode"
	"calaf.io/calaf/test/e2e/framework"
	"calaf.io/calaf/test/gitserver"
)

// invalidSource is what the API server says of a Service named hello with two sources
// (cmmode's envtest checks every CEL rule's message against the API server's own).
const invalidSource = `Service.calaf.io "hello" is invalid: spec.source: Invalid value: exactly one of url, upload, git, oci and vnfPackage must be set`

// GitOps without a CR anywhere: the hello-world package and its Service, written as a
// ConfigMap by `calaf convert` from a custom resource manifest, live in a git repository;
// kubectl applies the checked-out ConfigMap. It is deployed, updated by a new input
// (generation 2), its drift repaired, an invalid spec refused with the CRD's message while
// the admitted one goes on, and deleted with its objects.
func TestHelloWorldGitOps(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	server, repo := gitRepository(t)
	manifest := `apiVersion: calaf.io/v1alpha1
kind: Service
metadata:
  name: hello
  labels: {team: blue}
spec:
  source:
    git: {url: ` + server.RepoURL(repo.Name) + `, path: hello-world, secretRef: {name: git}}
  inputs:
    message: Hello from a ConfigMap
`
	converted := convert(t, manifest, "configmap")
	g.Expect(converted).To(ContainSubstring(cmmode.LabelKind + ": Service"))
	g.Expect(convert(t, converted, "crd")).To(MatchYAML(manifest), "calaf convert both ways")
	files := packageFiles(t, "examples/hello-world", "hello-world")
	files["services/hello.yaml"] = converted
	push(t, repo, files)
	checkout := clone(t, server.RepoURL(repo.Name))
	kubectl(t, "apply", "-n", tenant, "-f", filepath.Join(checkout, "services"))

	svc := waitReady(t, "hello", 1)
	g.Expect(svc.Labels).To(HaveKeyWithValue("team", "blue"))
	c := framework.Connect(t)
	_, err := c.WaitForPodRunning(ctx, tenant, "calaf.io/service=hello,calaf.io/node=web", 2*time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calaf(t, "status", "hello", "-n", tenant)).To(ContainSubstring("Ready"))
	g.Expect(calaf(t, "list", "-n", tenant)).To(MatchRegexp(`hello\s+ConfigMap\s+True`))
	g.Expect(kubectl(t, "get", "cm", "-n", tenant, "-l", cmmode.LabelKind+"=Service", "-o", "name")).To(ContainSubstring("configmap/hello\n"))

	// A new input, pushed and applied: generation 2, two replicas.
	files = map[string]string{"services/hello.yaml": withData(t, converted, map[string]string{"spec.inputs.replicas": "2"})}
	push(t, repo, files)
	pull(t, checkout)
	kubectl(t, "apply", "-n", tenant, "-f", filepath.Join(checkout, "services"))
	waitReady(t, "hello", 2)
	deployment := func() int32 {
		d, err := c.Clientset.AppsV1().Deployments(tenant).Get(ctx, "hello-web", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return *d.Spec.Replicas
	}
	g.Eventually(deployment, time.Minute, time.Second).Should(BeEquivalentTo(2))

	// Drift: the Deployment scaled by hand goes back to what the Service says.
	_, err = c.Clientset.AppsV1().Deployments(tenant).Patch(ctx, "hello-web", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(deployment, time.Minute, time.Second).Should(BeEquivalentTo(2), "drift repaired")

	// An invalid spec: refused with the CRD's message; generation 2 goes on.
	invalid := withData(t, converted, map[string]string{"spec.inputs.replicas": "2", "spec.source.url": "https://packages.example/hello.csar"})
	apply(t, invalid)
	g.Eventually(func(g Gomega) {
		refused := apimeta.FindStatusCondition(getService(g, "hello").Status.Conditions, cmmode.ConditionSpecAccepted)
		g.Expect(refused).NotTo(BeNil())
		g.Expect(refused.Message).To(Equal(invalidSource))
	}, time.Minute, time.Second).Should(Succeed())
	svc = getService(g, "hello")
	g.Expect(svc.Generation).To(BeEquivalentTo(2))
	g.Expect(svc.Spec.Source.URL).To(BeEmpty())
	g.Expect(kubectl(t, "get", "events", "-n", tenant, "--field-selector", "involvedObject.name=hello,reason=Invalid", "-o", "jsonpath={.items[*].message}")).To(ContainSubstring(invalidSource))
	kubectl(t, "apply", "-n", tenant, "-f", filepath.Join(checkout, "services"))
	g.Eventually(func(g Gomega) {
		g.Expect(apimeta.FindStatusCondition(getService(g, "hello").Status.Conditions, cmmode.ConditionSpecAccepted)).To(BeNil())
	}, time.Minute, time.Second).Should(Succeed())

	// Deleted with its objects.
	kubectl(t, "delete", "-n", tenant, "-f", filepath.Join(checkout, "services"), "--wait=false")
	g.Eventually(func() bool {
		_, errDeployment := c.Clientset.AppsV1().Deployments(tenant).Get(ctx, "hello-web", metav1.GetOptions{})
		_, errService := c.Clientset.CoreV1().Services(tenant).Get(ctx, "hello-frontend", metav1.GetOptions{})
		errCM := suite.client.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "hello"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(errDeployment) && apierrors.IsNotFound(errService) && apierrors.IsNotFound(errCM)
	}, 2*time.Minute, time.Second).Should(BeTrue())
}

// The network-service example, its Service a ConfigMap applied with kubectl: Ready with
// every pod Running; a Day-2 operation, an Operation ConfigMap, runs in the SMF's pods;
// deleting the ConfigMap deletes the Service's objects.
func TestNetworkServiceFromConfigMap(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	server, repo := gitRepository(t)
	push(t, repo, packageFiles(t, "examples/network-service", "network-service"))
	apply(t, `apiVersion: v1
kind: ConfigMap
metadata:
  name: core
  labels: {calaf.io/kind: Service, calaf.io/version: v1alpha1}
data:
  spec.yaml: |
    source:
      git: {url: `+server.RepoURL(repo.Name)+`, path: network-service, secretRef: {name: git}}
    timeout: 8m
`)
	svc := waitReady(t, "core", 1)
	for _, node := range svc.Status.Nodes {
		g.Expect(node.Phase).To(Equal(v1alpha1.NodeReady), "node %s: %s", node.Name, node.Message)
	}
	c := framework.Connect(t)
	for _, node := range []string{"nrf", "udr", "amf", "smf"} {
		_, err := c.WaitForPodRunning(ctx, tenant, "calaf.io/service=core,calaf.io/node="+node, 2*time.Minute)
		g.Expect(err).NotTo(HaveOccurred(), node)
	}

	// Day-2: an Operation written as a ConfigMap.
	apply(t, `apiVersion: v1
kind: ConfigMap
metadata:
  name: core-report
  labels: {calaf.io/kind: Operation, calaf.io/version: v1alpha1}
data:
  spec.yaml: |
    serviceName: core
    type: CUSTOM
    node: smf
    operation: Admin.report
`)
	var op *v1alpha1.Operation
	g.Eventually(func(g Gomega) {
		op = &v1alpha1.Operation{}
		g.Expect(suite.cm.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "core-report"}, op)).To(Succeed())
		g.Expect(op.Status.Phase).To(Equal(v1alpha1.OperationSucceeded), "%s: %s", op.Status.Phase, op.Status.Message)
	}, 4*time.Minute, time.Second).Should(Succeed())
	g.Expect(op.Status.Results).NotTo(BeEmpty())
	for _, r := range op.Status.Results {
		g.Expect(r.Succeeded).To(BeTrue(), r.Log)
	}
	g.Expect(op.OwnerReferences).To(ContainElement(HaveField("UID", svc.UID)), "owned by the Service (its ConfigMap)")

	kubectl(t, "delete", "cm", "core", "-n", tenant, "--wait=false")
	g.Eventually(func() int {
		deployments, _ := c.Clientset.AppsV1().Deployments(tenant).List(ctx, metav1.ListOptions{LabelSelector: "calaf.io/service=core"})
		sets, _ := c.Clientset.AppsV1().StatefulSets(tenant).List(ctx, metav1.ListOptions{LabelSelector: "calaf.io/service=core"})
		return len(deployments.Items) + len(sets.Items)
	}, 3*time.Minute, time.Second).Should(BeZero())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(suite.client.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "core"}, &corev1.ConfigMap{}))
	}, time.Minute, time.Second).Should(BeTrue())
}

// gitRepository starts a git server with a repository, its credentials in Secret git of
// the tenant (made once).
func gitRepository(t *testing.T) (*gitserver.Server, *gitserver.Repo) {
	t.Helper()
	server, err := gitserver.Start(t.TempDir(), "calaf", "e2e-password")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "git"},
		Data: map[string][]byte{"username": []byte("calaf"), "password": []byte("e2e-password")}}
	if err := suite.client.Create(context.Background(), secret); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	repo, err := server.NewRepo(strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	if err != nil {
		t.Fatal(err)
	}
	return server, repo
}

// packageFiles reads the files of a directory of the repository, to be committed under
// prefix.
func packageFiles(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	files := map[string]string{}
	root := filepath.Join(framework.RepoRoot(), dir)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files[filepath.Join(prefix, rel)] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func push(t *testing.T, repo *gitserver.Repo, files map[string]string) {
	t.Helper()
	if _, err := repo.Commit("tenant", files); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push("main"); err != nil {
		t.Fatal(err)
	}
}

// clone checks the repository out as a GitOps tool would, and returns where.
func clone(t *testing.T, url string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "checkout")
	authenticated := strings.Replace(url, "://", "://calaf:e2e-password@", 1)
	if _, err := gitserver.Git("", "clone", "--quiet", authenticated, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func pull(t *testing.T, dir string) {
	t.Helper()
	if _, err := gitserver.Git(dir, "pull", "--quiet", "--ff-only"); err != nil {
		t.Fatal(err)
	}
}

// convert runs calaf convert --to to on a manifest.
func convert(t *testing.T, manifest, to string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(calaf(t, "convert", "--to", to, file), "---\n")
}

// withData returns a ConfigMap manifest with keys set in its data.
func withData(t *testing.T, manifest string, keys map[string]string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := yaml.Unmarshal([]byte(manifest), cm); err != nil {
		t.Fatal(err)
	}
	for k, v := range keys {
		cm.Data[k] = v
	}
	data, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// apply applies a manifest with kubectl, in the tenant's namespace.
func apply(t *testing.T, manifest string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-n", tenant, "-f", file)
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+suite.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func calaf(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, code, err := framework.Calaf(ctx, suite.calaf, suite.kubeconfig, args...)
	if err != nil || code != 0 {
		t.Fatalf("calaf %v: exit %d, %v\n%s", args, code, err, out)
	}
	return out
}

// getService reads a Service from its ConfigMaps, as the operator does.
func getService(g Gomega, name string) *v1alpha1.Service {
	svc := &v1alpha1.Service{}
	g.Expect(suite.cm.Get(context.Background(), client.ObjectKey{Namespace: tenant, Name: name}, svc)).To(Succeed())
	return svc
}

// waitReady waits until a Service is Ready at generation.
func waitReady(t *testing.T, name string, generation int64) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = getService(g, name)
		g.Expect(svc.Generation).To(Equal(generation))
		ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s: %s", ready.Reason, ready.Message)
		g.Expect(svc.Status.ObservedGeneration).To(Equal(generation))
	}, 8*time.Minute, time.Second).Should(Succeed(), "operator log:\n%s", suite.operator.Tail(30))
	return svc
}
