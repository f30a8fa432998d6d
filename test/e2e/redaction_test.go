//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

const secretInputsPackage = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  test.App:
    derived_from: calaf.nodes.Deployment
    attributes:
      seen:
        type: string
    interfaces:
      Admin:
        type: tosca.interfaces.Root
        operations:
          report: {}
topology_template:
  inputs:
    password: { type: string }
    tier: { type: string, default: gold }
  node_templates:
    app:
      type: test.App
      properties:
        image: busybox:1.36
        command: [ sh, -c, 'exec sleep 1000000' ]
        labels: { tier: { get_input: tier } }
      artifacts:
        configure:
          type: calaf.artifacts.JavaScript
          file: Artifacts/configure.js
      interfaces:
        Standard:
          operations:
            configure:
              implementation: configure
              inputs:
                password: { get_input: password }
        Admin:
          operations:
            report:
              implementation: configure
              inputs:
                password: { get_input: password }
  outputs:
    echo:
      type: string
      value: { get_input: password }
`

// Values read from Secrets (inputsFrom of kind Secret) never reach what others can read:
// the Service's status (outputs, attributes, operation messages, conditions), its Events,
// and the results of an Operation — even when the package echoes them everywhere.
func TestSecretInputsAreRedacted(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-redact")
	ctx := context.Background()
	const secret = "hunter2-very-secret"
	const badLabel = "not!a-label-" + secret
	dir := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(dir, "Artifacts"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(secretInputsPackage), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "Artifacts", "configure.js"),
		[]byte("calaf.log('got ' + calaf.inputs.password);\ncalaf.setAttribute('seen', calaf.inputs.password);\n"), 0o644)).To(Succeed())
	// bad's Secret also puts the value in a label, which the API server refuses, quoting it.
	for name, data := range map[string]map[string]string{"good": {"password": secret}, "bad": {"password": secret, "tier": badLabel}} {
		_, err := c.Clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-creds"}, StringData: data}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		calaf(t, "deploy", name, dir, "-n", ns, "--skip-validation")
		svc := getService(t, ns, name)
		patch := client.MergeFrom(svc.DeepCopy())
		svc.Spec.InputsFrom = []v1alpha1.InputsReference{{Kind: "Secret", Name: name + "-creds"}}
		g.Expect(suite.client.Patch(ctx, svc, patch)).To(Succeed())
	}
	good := waitReady(t, ns, "good", 3*time.Minute)
	g.Expect(output(good, "echo")).To(Equal("*****"))
	g.Eventually(func() string { return conditionMessage(t, ns, "bad") }, time.Minute, time.Second).Should(ContainSubstring("*****"))

	out := calaf(t, "run", "good", "app", "Admin.report", "-n", ns, "--wait")
	g.Expect(out).NotTo(ContainSubstring(secret))
	operations := &v1alpha1.OperationList{}
	g.Expect(suite.client.List(ctx, operations, client.InNamespace(ns))).To(Succeed())
	g.Expect(operations.Items).NotTo(BeEmpty())

	events := &eventsv1.EventList{}
	g.Expect(suite.client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	for _, what := range []any{getService(t, ns, "good").Status, getService(t, ns, "bad").Status, operations.Items} {
		data, err := json.Marshal(what)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(data)).NotTo(ContainSubstring(secret))
	}
	for _, e := range events.Items {
		g.Expect(e.Note).NotTo(ContainSubstring(secret), "Event %s %s of %s %s", e.Reason, e.Action, e.Regarding.Kind, e.Regarding.Name)
	}
	data, _ := json.Marshal(operations.Items)
	g.Expect(string(data)).To(ContainSubstring("got *****"), "the operation's log, redacted")
	data, _ = json.Marshal(events.Items)
	g.Expect(string(data)).To(ContainSubstring("*****"), "the events carried the value, redacted")
}

// conditionMessage is the message of a Service's Ready condition.
func conditionMessage(t *testing.T, ns, name string) string {
	for _, c := range getService(t, ns, name).Status.Conditions {
		if c.Type == v1alpha1.ConditionReady {
			return c.Message
		}
	}
	return ""
}
