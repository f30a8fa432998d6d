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

	"calaf.io/calaf/test/e2e/framework"
)

const settingsPackage = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  inputs:
    mcc: { type: string }
  node_templates:
    settings:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          mode: MODE
          mcc: { get_input: mcc }
`

// calaf diff answers as kubectl diff does — 0 no differences, 1 differences, >1 an error —
// and -i values take the type the template declares (208 for a string input is "208"),
// in deploy and diff alike.
func TestDiffExitCodesAndTypedInputs(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-cli")
	write := func(mode string) string {
		dir := t.TempDir()
		g.Expect(os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(strings.Replace(settingsPackage, "MODE", mode, 1)), 0o644)).To(Succeed())
		return dir
	}
	production, debug := write("production"), write("debug")
	calaf(t, "deploy", "cfg", production, "-n", ns, "-i", "mcc=208", "--wait")
	cm, err := c.Clientset.CoreV1().ConfigMaps(ns).Get(context.Background(), "cfg-settings", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cm.Data["mcc"]).To(Equal("208"))

	run := func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, code, err := framework.Calaf(ctx, suite.calaf, suite.kubeconfig, args...)
		g.Expect(err).NotTo(HaveOccurred())
		return out, code
	}
	out, code := run("diff", "cfg", production, "-n", ns, "-i", "mcc=208")
	g.Expect(code).To(Equal(0), out)
	g.Expect(out).To(ContainSubstring("no changes"))

	out, code = run("diff", "cfg", debug, "-n", ns, "-i", "mcc=208")
	g.Expect(code).To(Equal(1), out)
	g.Expect(out).To(ContainSubstring("~ ConfigMap"))
	g.Expect(out).To(ContainSubstring("+  mode: debug"))

	out, code = run("diff", "cfg", production, "-n", ns) // mcc is required
	g.Expect(code).To(Equal(3), out)
	g.Expect(out).To(ContainSubstring(`inputs["mcc"]`))

	out, code = run("diff", "cfg")
	g.Expect(code).To(Equal(2), out)
}
