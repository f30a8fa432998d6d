//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
	"calaf.io/calaf/test/hostile"
)

// The operator installed as deploy/test-ground installs it — its image, its pod's 512Mi
// memory limit, non-root and read-only root file system, its service account's token
// mounted — watching one namespace (the suite's operator stopped meanwhile). At start a
// worker is asked to open the service-account token, and cannot: the log says so. Two
// memory bombs and a CPU bomb deployed at once beside a good Service fail their own
// Services alone — the memory bombs end their workers, the spinning scriptlet is stopped
// at its deadline (its CPU budget, the kernel's, is as long) — the good Service becomes
// Ready, and the operator's container never restarted nor was killed for memory.
func TestWorkersConfinedInCluster(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-confine")
	ctx := context.Background()

	buildOperatorImage(t)
	suite.operator.Stop()
	defer func() { g.Expect(suite.operator.Start()).To(Succeed()) }()
	installInCluster(t, ns)
	pod, err := c.WaitForPodRunning(ctx, framework.OperatorNamespace, "app.kubernetes.io/name=calaf-operator", 2*time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	logs := func() string { return podLogs(t, c, pod.Name) }
	g.Eventually(logs, time.Minute, time.Second).Should(ContainSubstring(`"msg":"workers are confined: each reads the package it is handed alone"`))
	g.Expect(logs()).To(MatchRegexp(`"unreadable":\["/var/run/secrets/kubernetes.io/serviceaccount/token"\]`))
	g.Expect(logs()).NotTo(ContainSubstring("can read a credential"))

	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(configPackage), 0o644)).To(Succeed())
	calaf(t, "deploy", "good", dir, "-n", ns)
	deployUnchecked(t, suite.kubeconfig, ns, "bomb-1", hostile.MemoryBomb)
	deployUnchecked(t, suite.kubeconfig, ns, "bomb-2", hostile.MemoryBomb)
	deployUnchecked(t, suite.kubeconfig, ns, "spin", strings.Replace(hostile.MemoryBomb,
		"let s = 'x'; while (true) { s = s + s; }", "return String(/^(a|aa)+(?=b)c\\\\1$/.test('a'.repeat(64) + 'x'));", 1))

	waitReady(t, ns, "good", 3*time.Minute)
	for name, message := range map[string]string{
		"bomb-1": `^service.yaml: render of the package (exceeded 512 MiB of memory|was killed)`,
		"bomb-2": `^service.yaml: render of the package (exceeded 512 MiB of memory|was killed)`,
		"spin":   `(did not finish within|of CPU time)`,
	} {
		svc := waitNotReady(t, ns, name, logs)
		g.Expect(readyMessage(svc)).To(MatchRegexp(message), name)
	}
	pod, err = c.Clientset.CoreV1().Pods(framework.OperatorNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	status := pod.Status.ContainerStatuses[0]
	g.Expect(status.RestartCount).To(BeZero(), "the operator restarted: %+v", status.LastTerminationState)
	g.Expect(status.LastTerminationState.Terminated).To(BeNil())
	t.Logf("the operator's log:\n%s", lastLines(logs(), 15))
}

// buildOperatorImage builds the operator image from the suite's calaf and loads it into
// the node (test/ground/images.sh, cached by the binary's hash).
func buildOperatorImage(t *testing.T) {
	t.Helper()
	cmd := exec.Command(filepath.Join(framework.RepoRoot(), "test", "ground", "images.sh"), "operator", suite.calaf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("images.sh operator: %v\n%s", err, out)
	}
}

// installInCluster applies the operator's Deployment of deploy/test-ground (kubectl
// kustomize), watching ns alone and with a new pod, and removes it when the test ends.
func installInCluster(t *testing.T, ns string) {
	t.Helper()
	kubectl := filepath.Join(os.Getenv("HOME"), ".cache", "calaf", "k8s-v1.37.2", "bin", "kubectl")
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		kubectl = filepath.Join(assets, "kubectl")
	}
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(framework.RepoRoot(), "deploy", "test-ground")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	deployment := findObject(t, out, "Deployment")
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	container := containers[0].(map[string]any)
	container["args"] = append(container["args"].([]any), "--watch-namespace="+ns)
	g := NewWithT(t)
	g.Expect(unstructured.SetNestedSlice(deployment.Object, containers, "spec", "template", "spec", "containers")).To(Succeed())
	g.Expect(unstructured.SetNestedField(deployment.Object, ns, "spec", "template", "metadata", "annotations", "calaf.io/e2e-run")).To(Succeed())
	ctx := context.Background()
	g.Expect(suite.client.Patch(ctx, deployment, client.Apply, client.FieldOwner("calaf-e2e"), client.ForceOwnership)).To(Succeed())
	t.Cleanup(func() {
		err := suite.client.Delete(ctx, deployment)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the operator's Deployment: %v", err)
		}
		NewWithT(t).Eventually(func() int {
			pods := &corev1.PodList{}
			_ = suite.client.List(ctx, pods, client.InNamespace(framework.OperatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "calaf-operator"})
			return len(pods.Items)
		}, time.Minute, time.Second).Should(BeZero())
	})
}

// findObject returns the first object of kind in a multi-document YAML.
func findObject(t *testing.T, data []byte, kind string) *unstructured.Unstructured {
	t.Helper()
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			t.Fatalf("no %s", kind)
		} else if err != nil {
			t.Fatal(err)
		}
		if obj.GetKind() == kind {
			return obj
		}
	}
}

// podLogs returns the log of the operator's pod.
func podLogs(t *testing.T, c *framework.Cluster, pod string) string {
	t.Helper()
	data, err := c.Clientset.CoreV1().Pods(framework.OperatorNamespace).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// waitNotReady waits until a Service is not Ready for its generation, and returns it.
func waitNotReady(t *testing.T, ns, name string, log func() string) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = &v1alpha1.Service{}
		g.Expect(suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, svc)).To(Succeed())
		ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.ObservedGeneration).To(Equal(svc.Generation))
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).NotTo(BeEmpty())
		g.Expect(ready.Reason).NotTo(Equal(v1alpha1.ReasonProgressing))
	}, 3*time.Minute, time.Second).Should(Succeed(), func() string { return lastLines(log(), 30) })
	return svc
}

func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
