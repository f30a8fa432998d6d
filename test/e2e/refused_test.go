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
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

const refusedPackage = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
    app:
      type: calaf.nodes.%KIND%
      properties:
        image: %IMAGE%
        command: [ sh, -c, '%COMMAND%' ]
%EXTRA%`

// Pods the cluster refuses or cannot run are named, not waited for: the node's status
// gives the real cause (the controller's FailedCreate, the pod's waiting reason) within
// seconds, the Service is Stalled, and calaf deploy --wait ends with that message and
// exit 1 instead of a timeout.
func TestRefusedPodsAreNamed(t *testing.T) {
	c := framework.Connect(t)
	cases := []struct {
		name, kind, image, command, extra string
		setup                             func(t *testing.T, ns string)
		reasons                           []string
		message                           string
	}{
		{name: "pod security", kind: "Deployment", setup: restrictedNamespace(c),
			reasons: []string{"FailedCreate"}, message: "violates PodSecurity"},
		{name: "pod security of a statefulset", kind: "StatefulSet", setup: restrictedNamespace(c),
			reasons: []string{"FailedCreate"}, message: "violates PodSecurity"},
		{name: "resource quota", kind: "Deployment", setup: noPodsQuota(c),
			reasons: []string{"FailedCreate"}, message: "exceeded quota"},
		{name: "missing service account", kind: "Deployment", extra: "        service_account: nobody-here\n",
			reasons: []string{"FailedCreate"}, message: `serviceaccount "nobody-here" not found`},
		{name: "image that cannot be pulled", kind: "Deployment", image: "calaf.local/no-such-image:1",
			reasons: []string{"ErrImagePull", "ImagePullBackOff"}, message: "calaf.local/no-such-image:1"},
		{name: "crash loop", kind: "Deployment", command: "echo starting; exit 3",
			extra:   "        readiness_probe: { command: [ test, -f, /tmp/ready ] }\n",
			reasons: []string{"CrashLoopBackOff"}, message: "exited with code 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ns := c.Namespace(t, "e2e-refused")
			if tc.setup != nil {
				tc.setup(t, ns)
			}
			image, command := tc.image, tc.command
			if image == "" {
				image = framework.ExamplesImage
			}
			if command == "" {
				command = "exec sleep 3600"
			}
			dir := t.TempDir()
			pkg := strings.NewReplacer("%KIND%", tc.kind, "%IMAGE%", image, "%COMMAND%", command, "%EXTRA%", tc.extra).Replace(refusedPackage)
			g.Expect(os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(pkg), 0o644)).To(Succeed())

			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			out, code, err := framework.Calaf(ctx, suite.calaf, suite.kubeconfig, "deploy", "refused", dir, "-n", ns, "--wait", "--wait-timeout=3m")
			elapsed := time.Since(start)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(code).To(Equal(1), "calaf deploy --wait:\n%s", out)
			g.Expect(out).To(ContainSubstring(tc.message), "calaf deploy --wait names the cause")
			g.Expect(out).NotTo(ContainSubstring("deadline exceeded"))

			svc := getService(t, ns, "refused")
			stalled := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionStalled)
			g.Expect(stalled).NotTo(BeNil(), "conditions: %+v", svc.Status.Conditions)
			g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(stalled.Message).To(ContainSubstring(tc.message))
			node := svc.Status.Nodes[0]
			g.Expect(node.Phase).To(Equal(v1alpha1.NodeFailed))
			g.Expect(tc.reasons).To(ContainElement(node.Reason), "node status: %+v", node)
			g.Expect(node.Message).To(ContainSubstring(tc.message))
			t.Logf("%s: deploy --wait ended after %v with: %s", tc.name, elapsed.Round(100*time.Millisecond), lastLine(out))
		})
	}
}

// restrictedNamespace enforces the restricted Pod Security level, which busybox running as
// root violates.
func restrictedNamespace(c *framework.Cluster) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		labelNamespace(t, c, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	}
}

// noPodsQuota allows no pod at all in the namespace.
func noPodsQuota(c *framework.Cluster) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "no-pods"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
		}
		if _, err := c.Clientset.CoreV1().ResourceQuotas(ns).Create(context.Background(), quota, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func labelNamespace(t *testing.T, c *framework.Cluster, ns string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	namespace, err := c.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range labels {
		namespace.Labels[key] = value
	}
	if _, err := c.Clientset.CoreV1().Namespaces().Update(ctx, namespace, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
