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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

const configPackage = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
    settings:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          mode: production
`

// calaf suspend stops the operator from repairing drift; calaf resume --wait brings the
// objects back to the package; calaf reconcile --wait returns once the operator handled
// that very request (and is refused while suspended).
func TestSuspendResumeReconcile(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-suspend")
	ctx := context.Background()
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(configPackage), 0o644)).To(Succeed())
	calaf(t, "deploy", "cfg", dir, "-n", ns, "--wait")
	configMaps := c.Clientset.CoreV1().ConfigMaps(ns)
	mode := func() string {
		cm, err := configMaps.Get(ctx, "cfg-settings", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return cm.Data["mode"]
	}
	g.Expect(mode()).To(Equal("production"))

	g.Expect(calaf(t, "suspend", "cfg", "-n", ns)).To(ContainSubstring("suspended"))
	g.Expect(getService(t, ns, "cfg").Spec.Suspend).To(BeTrue())
	cm, err := configMaps.Get(ctx, "cfg-settings", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	cm.Data["mode"] = "debug"
	_, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	// A reconcile requested of a suspended Service is handled — by doing nothing.
	requested := time.Now().UTC().Format(time.RFC3339Nano)
	svc := getService(t, ns, "cfg")
	patch := client.MergeFrom(svc.DeepCopy())
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[v1alpha1.ReconcileRequestAnnotation] = requested
	g.Expect(suite.client.Patch(ctx, svc, patch)).To(Succeed())
	g.Eventually(func() string { return getService(t, ns, "cfg").Status.LastHandledReconcileAt }, 30*time.Second, 100*time.Millisecond).Should(Equal(requested))
	g.Expect(mode()).To(Equal("debug"), "a suspended Service repaired drift")

	out, code, err := framework.Calaf(ctx, suite.calaf, suite.kubeconfig, "reconcile", "cfg", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(1), out)
	g.Expect(out).To(ContainSubstring("is suspended"))

	calaf(t, "resume", "cfg", "-n", ns, "--wait")
	g.Eventually(mode, 30*time.Second, 500*time.Millisecond).Should(Equal("production"))

	out = calaf(t, "reconcile", "cfg", "-n", ns, "--wait")
	_, requested, ok := strings.Cut(strings.Split(out, "\n")[0], "reconcile requested at ")
	g.Expect(ok).To(BeTrue(), out)
	g.Expect(getService(t, ns, "cfg").Status.LastHandledReconcileAt).To(Equal(strings.TrimSpace(requested)))
}
