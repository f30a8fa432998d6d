//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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

// renderPackage is a package whose one node renders the objects a JavaScript array says
// (written on one line in the package's YAML).
func renderPackage(objects string) string {
	objects = strings.Join(strings.Fields(objects), " ")
	return strings.ReplaceAll(`tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:vendor.render.thing: |-
    exports.render = function (node, ctx) {
      return RENDER;
    };
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  vendor.nodes.Thing:
    derived_from: calaf.nodes.Root
    metadata:
      calaf.render: vendor.render.thing
topology_template:
  node_templates:
    thing:
      type: vendor.nodes.Thing
`, "RENDER", objects)
}

// deploymentWith renders a Deployment of the test ground's busybox whose pod spec has
// EXTRA (JavaScript object members) besides its container, and whose container has
// CONTAINER members.
func deploymentWith(name, extra, container string) string {
	return renderPackage(strings.NewReplacer("NAME", name, "EXTRA", extra, "CONTAINER", container, "IMAGE", framework.BusyboxImage).Replace(`[
  { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'NAME' }, spec: {
    selector: { matchLabels: { app: 'NAME' } },
    template: { metadata: { labels: { app: 'NAME' } }, spec: { EXTRA
      containers: [ { name: 'main', image: 'IMAGE', imagePullPolicy: 'Never', command: ['sleep', '3600'], CONTAINER } ] } } } } ]`))
}

// deployUnchecked uploads a package as a Service without validating it locally (the
// operator is what is under test) and without waiting; extra are more deploy flags.
func deployUnchecked(t *testing.T, kubeconfig, ns, name, pkg string, extra ...string) {
	t.Helper()
	deployFiles(t, kubeconfig, ns, name, map[string]string{"service.yaml": pkg}, extra...)
}

// deployFiles is deployUnchecked of a package of several files.
func deployFiles(t *testing.T, kubeconfig, ns, name string, files map[string]string, extra ...string) {
	t.Helper()
	dir := t.TempDir()
	for file, content := range files {
		path := filepath.Join(dir, file)
		NewWithT(t).Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		NewWithT(t).Expect(os.WriteFile(path, []byte(content), 0o644)).To(Succeed())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"deploy", name, dir, "-n", ns, "--skip-validation"}, extra...)
	out, code, err := framework.Calaf(ctx, suite.calaf, kubeconfig, args...)
	if err != nil || code != 0 {
		t.Fatalf("calaf %v: exit %d, %v\n%s", args, code, err, out)
	}
}

// waitFailed waits until a Service is not Ready for its generation with reason, and
// returns it.
func waitFailed(t *testing.T, ns, name, reason string, log func() string) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = &v1alpha1.Service{}
		g.Expect(suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, svc)).To(Succeed())
		ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.ObservedGeneration).To(Equal(svc.Generation))
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(reason), "Ready: %s", ready.Message)
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed(), "operator log:\n%s", log())
	return svc
}

// readyMessage is the message of a Service's Ready condition.
func readyMessage(svc *v1alpha1.Service) string {
	if ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady); ready != nil {
		return ready.Message
	}
	return ""
}

// isStalled tells whether a Service is Stalled.
func isStalled(svc *v1alpha1.Service) bool {
	return apimeta.IsStatusConditionTrue(svc.Status.Conditions, v1alpha1.ConditionStalled)
}

// statusJSON is a Service's whole status as JSON (to look for what must not be there).
func statusJSON(svc *v1alpha1.Service) string {
	data, _ := json.Marshal(svc.Status)
	return string(data)
}
