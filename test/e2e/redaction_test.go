//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// Secret values of every shape a redactor must find: JSON's special characters, a PEM
// block with its armor and encapsulated headers and one without, unicode, a YAML-shaped
// value (registered leaf by leaf: its pass is a secret), and a short one.
var secretShapes = map[string]string{
	"specials": `p&ss<w>"rd\`,
	"pemkey": "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,5A1B9C3D2E4F6071\n\n" +
		pemLines[0] + "\n" + pemLines[1] + "\n" + pemLines[2] + "\n-----END RSA PRIVATE KEY-----\n",
	"pembare": pemLines[3] + "\n" + pemLines[4] + "\n" + pemLines[5] + "\n",
	"unicode": "пароль-密碼-ünïcødé",
	"yamlish": "{user: bob, pass: s3cr3t-x}",
	"short":   "q3z",
}

var pemLines = []string{
	"MIIEowIBAAKCAQEAvN1s0mEwz3Xk9c2YhUq8bq7m1WkT0xRr0a4Z6Jx3FtY2uQ8p",
	"w0rZk7jQe5Lb1aVn3S9cUoPq2XyHd4GfMi6Ts8Ke0Rz1NwLvBu7CjAhYm5Dg2x3E",
	"Qk9HtF6aZl4Xs2Wd8Vr1Yp0Nc3Mb5Jg7Ue9Ti2Ro4Ew6Qy8Az0Sx1Dc3Fv5Gb",
	"MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu",
	"KUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQJAIJLixBy2qpFoS4DSmoEm",
	"o3qGy0t6z09AIJtH+5OeRV1be+N4cDYJKffGzDa88vQENZiRm0GRq6a+HPGQMd2k",
}

// secretFragments are what must appear nowhere: every shape whole and trimmed, the
// leaves of the structured one, the lines of the multi-line ones.
func secretFragments() []string {
	fragments := []string{"s3cr3t-x", "bob"}
	for _, value := range secretShapes {
		fragments = append(fragments, value, strings.TrimSpace(value))
	}
	return append(fragments, pemLines...)
}

// leaks returns the secret fragments text shows, raw or in a form quoting gives them
// (Go's %q and %+q, JSON with and without HTML escapes).
func leaks(text string) []string {
	var found []string
	for _, fragment := range secretFragments() {
		forms := []string{fragment}
		for _, quoted := range []string{strconv.Quote(fragment), strconv.QuoteToASCII(fragment), jsonQuote(fragment, true), jsonQuote(fragment, false)} {
			forms = append(forms, quoted[1:len(quoted)-1])
		}
		if slices.ContainsFunc(forms, func(form string) bool { return strings.Contains(text, form) }) {
			found = append(found, strconv.Quote(fragment))
		}
	}
	return found
}

func jsonQuote(s string, escapeHTML bool) string {
	var b strings.Builder
	encoder := json.NewEncoder(&b)
	encoder.SetEscapeHTML(escapeHTML)
	_ = encoder.Encode(s)
	return strings.TrimSpace(b.String())
}

// secretsPackage takes every shape as an input, into a label, an operation that logs them
// one by one and sets them as attributes and outputs (or fails printing them to stderr),
// and outputs: one published (marked), one withheld (not marked), one with no secret.
// CONSTRAINTS, when given, goes into every shape's input definition.
const secretsPackage = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  test.App:
    derived_from: calaf.nodes.Deployment
    attributes:
      seen: { type: map, entry_schema: { type: string } }
      joined: { type: string }
    interfaces:
      Admin:
        type: tosca.interfaces.Root
        operations:
          report: {}
          fail: {}
topology_template:
  inputs:
    specials: { type: string CONSTRAINTS }
    pemkey: { type: string CONSTRAINTS }
    pembare: { type: string CONSTRAINTS }
    unicode: { type: string CONSTRAINTS }
    yamlish: { type: map, entry_schema: string }
    short: { type: string CONSTRAINTS }
    tier: { type: string, default: gold }
    fail: { type: string, default: "no" }
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
              inputs: &shapes
                specials: { get_input: specials }
                pemkey: { get_input: pemkey }
                pembare: { get_input: pembare }
                unicode: { get_input: unicode }
                yamlish: { get_input: yamlish }
                short: { get_input: short }
                fail: { get_input: fail }
        Admin:
          operations:
            report:
              implementation: configure
              inputs: *shapes
            fail:
              implementation: configure
              inputs:
                specials: { get_input: specials }
                pemkey: { get_input: pemkey }
                pembare: { get_input: pembare }
                unicode: { get_input: unicode }
                yamlish: { get_input: yamlish }
                short: { get_input: short }
                fail: "yes"
  outputs:
    echo:
      type: string
      value: { get_input: specials }
    creds:
      type: string
      metadata: { calaf.io/publish-secret: "true" }
      value: { concat: [ "user=", { get_input: short }, " key=", { get_input: pembare } ] }
    tier:
      type: string
      value: { get_input: tier }
`

// configureJS logs every shape (a multi-line one is split per line by the runner), sets
// them as attributes and outputs, and, asked to fail, prints them to stderr and fails
// quoting them.
const configureJS = `const names = ['specials', 'pemkey', 'pembare', 'unicode', 'yamlish', 'short'];
const seen = {};
for (const name of names) {
  const value = calaf.inputs[name];
  calaf.log('got ' + name + ' ' + (typeof value === 'string' ? value : JSON.stringify(value)));
  seen[name] = typeof value === 'string' ? value : JSON.stringify(value);
}
calaf.setAttribute('seen', seen);
calaf.setAttribute('joined', names.map(n => JSON.stringify(calaf.inputs[n])).join('|'));
calaf.setOutput('seen', seen);
if (calaf.inputs.fail === 'yes') {
  const env = {};
  for (const name of names) env['S_' + name.toUpperCase()] = typeof calaf.inputs[name] === 'string' ? calaf.inputs[name] : JSON.stringify(calaf.inputs[name]);
  calaf.exec(['sh', '-c', 'for v in "$S_SPECIALS" "$S_PEMKEY" "$S_PEMBARE" "$S_UNICODE" "$S_YAMLISH" "$S_SHORT"; do echo "$v" >&2; done; exit 3'], { env: env, check: true });
}
`

// Values read from Secrets (inputsFrom of kind Secret), of every shape, never reach what
// others can read: the Services' status (outputs, attributes, operation messages,
// conditions), their Events, the results of Operations, the operator's log and what the
// CLI prints — even when the package echoes them everywhere, fails quoting them, or
// renders them into an invalid label or an input that breaks its constraints. A quoted
// value derived from a Secret is hidden whole; an output derived from a Secret is withheld
// unless the package marks it, and then redacted.
func TestSecretInputsAreRedacted(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-redact")
	ctx := context.Background()
	logStart := operatorLogSize(t)

	invalidLabel := maps.Clone(secretShapes)
	invalidLabel["tier"] = "not!a-label-" + secretShapes["specials"] + "-" + secretShapes["unicode"] + "-" + secretShapes["short"]
	packages := map[string]string{
		"good": secretsPackage, "failing": secretsPackage, "invalid-label": secretsPackage,
		"invalid-input": strings.ReplaceAll(secretsPackage, " CONSTRAINTS", ", constraints: [ { max_length: 1 } ]"),
	}
	for name, pkg := range packages {
		data := secretShapes
		if name == "invalid-label" {
			data = invalidLabel
		}
		_, err := c.Clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-creds"}, StringData: data}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		deployFiles(t, suite.kubeconfig, ns, name, map[string]string{
			"service.yaml":           strings.ReplaceAll(pkg, " CONSTRAINTS", ""),
			"Artifacts/configure.js": configureJS,
		})
		svc := getService(t, ns, name)
		patch := client.MergeFrom(svc.DeepCopy())
		svc.Spec.InputsFrom = []v1alpha1.InputsReference{{Kind: "Secret", Name: name + "-creds"}}
		if name == "failing" {
			svc.Spec.Inputs = map[string]apiextensionsv1.JSON{"fail": {Raw: []byte(`"yes"`)}}
		}
		g.Expect(suite.client.Patch(ctx, svc, patch)).To(Succeed())
	}

	good := waitReady(t, ns, "good", 3*time.Minute)
	g.Expect(output(good, "creds")).To(HavePrefix("user=***** key=*****"), "a marked output derived from a Secret is published, redacted")
	g.Expect(output(good, "tier")).To(Equal("gold"), "an output with no secret is published as it is")
	g.Expect(good.Status.Outputs).NotTo(HaveKey("echo"))
	g.Expect(good.Status.PendingOutputs["echo"]).To(HavePrefix("withheld: its value is derived from a Secret"))
	g.Expect(string(good.Status.Nodes[0].Attributes["joined"].Raw)).To(ContainSubstring("*****"))

	failing := waitNodeOperationFailed(t, ns, "failing")
	g.Expect(failing).To(And(ContainSubstring("failed in pod"), ContainSubstring("*****")))
	invalidInput := waitFailed(t, ns, "invalid-input", v1alpha1.ReasonInvalidInputs, func() string { return suite.operator.Tail(30) })
	g.Expect(readyMessage(invalidInput)).To(ContainSubstring(`max_length("*****",1)`))
	invalidLabelSvc := waitFailed(t, ns, "invalid-label", v1alpha1.ReasonRenderFailed, func() string { return suite.operator.Tail(30) })
	g.Expect(readyMessage(invalidLabelSvc)).To(ContainSubstring(`metadata.labels: Invalid value: "*****"`))

	var cli []string
	cli = append(cli, calaf(t, "run", "good", "app", "Admin.report", "-n", ns, "--wait"))
	failed, code, err := framework.Calaf(ctx, suite.calaf, suite.kubeconfig, "run", "good", "app", "Admin.fail", "-n", ns, "--wait")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).NotTo(BeZero(), "a failed operation's run exits non-zero:\n%s", failed)
	cli = append(cli, failed)
	for name := range packages {
		cli = append(cli, calaf(t, "status", name, "-n", ns), calaf(t, "status", name, "-n", ns, "-o", "yaml"))
	}

	operations := &v1alpha1.OperationList{}
	g.Expect(suite.client.List(ctx, operations, client.InNamespace(ns))).To(Succeed())
	g.Expect(operations.Items).To(HaveLen(2))
	events := &eventsv1.EventList{}
	g.Expect(suite.client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	seen := map[string]string{}
	for name := range packages {
		seen["status of Service "+name] = decodedStrings(getService(t, ns, name).Status)
	}
	for _, op := range operations.Items {
		seen["status of Operation "+op.Spec.Operation] = decodedStrings(op.Status)
	}
	for _, e := range events.Items {
		seen["Event "+e.Reason+" "+e.Action+" of "+e.Regarding.Kind+" "+e.Regarding.Name] = e.Note
	}
	for i, out := range cli {
		seen["CLI output "+strconv.Itoa(i)] = out
	}
	seen["the operator's log"] = operatorLogSince(t, logStart)
	for where, text := range seen {
		g.Expect(leaks(text)).To(BeEmpty(), "%s shows secrets:\n%s", where, text)
	}
	g.Expect(seen["status of Operation Admin.report"]).To(ContainSubstring("got specials *****"), "the operation's log, redacted")
	g.Expect(seen["status of Operation Admin.fail"]).To(ContainSubstring("*****"), "the failure, redacted")
	g.Expect(slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
		return e.Reason == "OperationFailed" && strings.Contains(e.Note, "*****")
	})).To(BeTrue(), "an OperationFailed Event carried the failure, redacted")
	g.Expect(seen["the operator's log"]).To(ContainSubstring("*****"), "the log said the stalled Services' messages, redacted")
}

// waitNodeOperationFailed waits until the operation of a Service's node failed, and
// returns its message.
func waitNodeOperationFailed(t *testing.T, ns, name string) string {
	t.Helper()
	message := ""
	NewWithT(t).Eventually(func(g Gomega) {
		svc := getService(t, ns, name)
		g.Expect(svc.Status.Nodes).NotTo(BeEmpty())
		g.Expect(svc.Status.Nodes[0].Operations).NotTo(BeEmpty())
		op := svc.Status.Nodes[0].Operations[0]
		g.Expect(op.Phase).To(Equal(v1alpha1.OperationFailed), "operation %s: %s", op.Name, op.Message)
		message = op.Message
	}, 3*time.Minute, time.Second).Should(Succeed(), "operator log:\n%s", suite.operator.Tail(30))
	return message
}

// decodedStrings is every string of a value, decoded (as a client reads them), one per
// line.
func decodedStrings(value any) string {
	data, _ := json.Marshal(value)
	var plain any
	_ = json.Unmarshal(data, &plain)
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
			var inner any // a JSON value kept as text (attributes, outputs)
			if json.Unmarshal([]byte(v), &inner) == nil {
				if s, ok := inner.(string); ok {
					out = append(out, s)
				}
			}
		case map[string]any:
			for key, item := range v {
				out = append(out, key)
				walk(item)
			}
		case []any:
			for _, item := range v {
				walk(item)
			}
		}
	}
	walk(plain)
	return strings.Join(out, "\n")
}

// operatorLogSize is how long the operator's log is now.
func operatorLogSize(t *testing.T) int64 {
	info, err := os.Stat(suite.operator.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// operatorLogSince is what the operator logged from offset on.
func operatorLogSince(t *testing.T, offset int64) string {
	data, err := os.ReadFile(filepath.Clean(suite.operator.LogPath))
	if err != nil {
		t.Fatal(err)
	}
	return string(data[min(offset, int64(len(data))):])
}
