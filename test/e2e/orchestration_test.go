//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
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

// The network-service example's SMF configure operation (a JavaScript artifact; the
// busybox image has no JavaScript runtime) runs in every SMF pod: it writes a file there
// and sets an attribute that reaches the Service's outputs. Resyncs and an operator
// restart run nothing again; scaling SMF from 1 to 3 replicas runs configure in the 2 new
// pods only; an on-demand operation (calaf run) runs exactly once in each pod and reports
// its result.
func TestOrchestrationNetworkService(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-ops")
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	image := "-i=image=" + framework.BusyboxImage

	calaf(t, "deploy", "core", "examples/network-service", "-n", ns, image, "--wait", "--wait-timeout=5m")
	svc := waitReady(t, ns, "core", time.Minute)
	nrf, err := c.Clientset.CoreV1().Services(ns).Get(ctx, "core-nrf", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	nrfURL := "http://" + nrf.Spec.ClusterIP + ":8000"

	pods := smfPods(t, c, ns, 1)
	for _, pod := range pods {
		conf, err := c.Exec(ctx, ns, pod, "main", "cat", "/tmp/smf-session.conf")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(conf.Stdout).To(Equal("plmn=001-01\ndnn=internet\nnrf=" + nrfURL + "\n"))
	}
	g.Expect(configureRuns(t, c, ns, pods)).To(Equal(map[string]int{pods[0]: 1}))
	g.Expect(output(svc, "smf_registration")).To(Equal("registered with " + nrfURL + " for internet"))
	configure := nodeOperation(t, svc, "smf", "Standard.configure")
	g.Expect(configure.Phase).To(Equal(v1alpha1.OperationSucceeded))
	g.Expect(configure.Pods).To(Equal(pods))
	g.Expect(configure.Attempts).To(BeEquivalentTo(1))
	t.Logf("configure: %s", configure.Message)

	// Resyncs run nothing again, and write nothing.
	resync(t, ns, "core", 3)
	g.Expect(configureRuns(t, c, ns, pods)).To(Equal(map[string]int{pods[0]: 1}), "a resync re-ran configure")
	g.Expect(nodeOperation(t, getService(t, ns, "core"), "smf", "Standard.configure").Attempts).To(BeEquivalentTo(1))

	// The operator restarts with what ran in the Service's status: nothing runs again.
	suite.operator.Stop()
	g.Expect(suite.operator.Start()).To(Succeed())
	resync(t, ns, "core", 2)
	g.Expect(configureRuns(t, c, ns, pods)).To(Equal(map[string]int{pods[0]: 1}), "configure ran again after an operator restart")

	// Scale-out: the 2 new pods get configure, the first pod does not run it again.
	calaf(t, "deploy", "core", "examples/network-service", "-n", ns, image, "-i", "smf_replicas=3", "--wait", "--wait-timeout=5m")
	svc = waitReady(t, ns, "core", time.Minute)
	scaled := smfPods(t, c, ns, 3)
	g.Expect(scaled).To(ContainElement(pods[0]))
	runs := configureRuns(t, c, ns, scaled)
	g.Expect(runs).To(Equal(map[string]int{scaled[0]: 1, scaled[1]: 1, scaled[2]: 1}))
	configure = nodeOperation(t, svc, "smf", "Standard.configure")
	g.Expect(configure.Pods).To(Equal(scaled))
	g.Expect(configure.Attempts).To(BeEquivalentTo(2), "one more run, for the new pods")
	t.Logf("after scale-out: %s", configure.Message)

	// Day-2: calaf run runs Admin.report once in each pod and prints each pod's result.
	out := calaf(t, "run", "core", "smf", "Admin.report", "-n", ns, "-i", "verbose=true", "--wait", "--timeout=3m")
	t.Logf("calaf run:\n%s", out)
	g.Expect(out).To(ContainSubstring("Admin.report"))
	g.Expect(out).To(ContainSubstring("Succeeded"))
	for _, pod := range scaled {
		g.Expect(out).To(ContainSubstring("pod " + pod + ": ok"))
	}
	g.Expect(out).To(ContainSubstring("output settings = 3"))
	resync(t, ns, "core", 2)
	g.Expect(countLines(t, c, ns, scaled, "/tmp/smf-report.runs")).To(Equal(map[string]int{scaled[0]: 1, scaled[1]: 1, scaled[2]: 1}))
	g.Expect(configureRuns(t, c, ns, scaled)).To(Equal(runs), "a Day-2 operation re-ran configure")

	ops := &v1alpha1.OperationList{}
	g.Expect(suite.client.List(ctx, ops, client.InNamespace(ns))).To(Succeed())
	g.Expect(ops.Items).To(HaveLen(1))
	op := ops.Items[0]
	g.Expect(op.Status.Phase).To(Equal(v1alpha1.OperationSucceeded))
	g.Expect(op.Status.Results).To(HaveLen(3))
	g.Expect(op.OwnerReferences).To(HaveLen(1))
	g.Expect(op.OwnerReferences[0].UID).To(Equal(svc.UID))
	for _, r := range op.Status.Results {
		g.Expect(r.Succeeded).To(BeTrue())
		g.Expect(string(r.Outputs["settings"].Raw)).To(Equal("3"))
		g.Expect(r.Log).To(ContainSubstring("dnn=internet"))
	}
	// Its attribute became the node's.
	g.Eventually(func() string {
		node := nodeStatus(t, getService(t, ns, "core"), "smf")
		return string(node.Attributes["last_report"].Raw)
	}, time.Minute, time.Second).Should(ContainSubstring("3 settings"))
}

// A failing artifact — a command exiting non-zero, a JavaScript exception (retried with
// backoff first), an endless loop, a command that hangs past the timeout — fails its node
// with a clear message, the tail of stderr and an Event; the Service is stalled. Fixing
// the package recovers.
func TestOrchestrationFailures(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-opfail")
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()

	cases := []struct {
		name, kind, file, source string
		retries                  int
		message                  []string
	}{
		{name: "non-zero command", kind: "Shell", file: "configure.sh",
			source:  "echo configuring\necho 'cannot reach the NRF at 10.0.0.1' >&2\nexit 3\n",
			message: []string{"Standard.configure failed in pod app-", "configure.sh exited with code 3", "stderr: cannot reach the NRF at 10.0.0.1"}},
		{name: "JavaScript exception", kind: "JavaScript", file: "configure.js", retries: 1,
			source:  "const r = calaf.exec(['sh', '-c', 'echo no dnn configured >&2; exit 1']);\nif (r.exitCode !== 0) throw new Error('bad configuration: ' + r.stderr.trim());\n",
			message: []string{"Error: bad configuration: no dnn configured (at Artifacts/configure.js:2:"}},
		{name: "endless loop", kind: "JavaScript", file: "configure.js",
			source:  "calaf.log('looping');\nwhile (true) {}\n",
			message: []string{"timed out after 3s (the operation's timeout)"}},
		{name: "hanging command", kind: "JavaScript", file: "configure.js",
			source:  "calaf.exec(['sh', '-c', 'sleep 600 & sleep 600']);\n",
			message: []string{"timed out after 3s"}},
	}
	for _, tc := range cases {
		t.Logf("case %s", tc.name)
		dir := opsPackage(t, tc.kind, tc.file, tc.source, tc.retries)
		start := time.Now()
		out, code, err := framework.Calaf(ctx, suite.calaf, suite.kubeconfig, "deploy", "app", dir, "-n", ns, "-i=image="+framework.BusyboxImage, "--wait", "--wait-timeout=4m")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(1), "deploy --wait must fail: %s", out)
		g.Expect(out).NotTo(ContainSubstring("error: service.yaml"), "the package must be valid")
		svc := getService(t, ns, "app")
		node := nodeStatus(t, svc, "app")
		g.Expect(node.Phase).To(Equal(v1alpha1.NodeFailed), "%s: %s", tc.name, node.Message)
		for _, part := range tc.message {
			g.Expect(node.Message).To(ContainSubstring(part), tc.name)
		}
		op := nodeOperation(t, svc, "app", "Standard.configure")
		g.Expect(op.Phase).To(Equal(v1alpha1.OperationFailed))
		g.Expect(op.Attempts).To(BeEquivalentTo(tc.retries+1), "%s: attempts", tc.name)
		g.Expect(out).To(ContainSubstring("OperationFailed"))
		t.Logf("%s: failed after %v: %s", tc.name, time.Since(start).Round(time.Millisecond), node.Message)
		g.Expect(warningEvents(t, ns, "OperationFailed")).To(ContainElement(ContainSubstring(tc.message[0])))
	}
	// The hanging command was killed with the runner's process group.
	pod := onePod(t, c, ns, "calaf.io/service=app,calaf.io/node=app")
	ps, err := c.Exec(ctx, ns, pod, "main", "ps")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ps.Stdout).NotTo(ContainSubstring("sleep 600"))

	// A fixed package recovers.
	dir := opsPackage(t, "JavaScript", "configure.js", "calaf.writeFile('/tmp/configured', 'yes');\ncalaf.setAttribute('config_state', 'configured');\n", 0)
	calaf(t, "deploy", "app", dir, "-n", ns, "-i=image="+framework.BusyboxImage, "--wait", "--wait-timeout=4m")
	svc := waitReady(t, ns, "app", time.Minute)
	g.Expect(nodeOperation(t, svc, "app", "Standard.configure").Phase).To(Equal(v1alpha1.OperationSucceeded))
	g.Expect(string(nodeStatus(t, svc, "app").Attributes["config_state"].Raw)).To(Equal(`"configured"`))
	g.Expect(output(svc, "config_state")).To(Equal("configured"))
	done, err := c.Exec(ctx, ns, pod, "main", "cat", "/tmp/configured")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done.Stdout).To(Equal("yes"))
}

// opsPackage writes a one-node package whose configure operation is the given artifact
// (timeout 3 s).
func opsPackage(t *testing.T, kind, file, source string, retries int) string {
	t.Helper()
	dir := t.TempDir()
	template := `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  test.App:
    derived_from: calaf.nodes.Deployment
    attributes:
      config_state:
        type: string
topology_template:
  inputs:
    image:
      type: string
  node_templates:
    app:
      type: test.App
      properties:
        image: { get_input: image }
        command: [ sh, -c, 'exec sleep 1000000' ]
      artifacts:
        configure:
          type: calaf.artifacts.%s
          file: Artifacts/%s
          properties:
            retries: %d
      interfaces:
        Standard:
          operations:
            configure:
              implementation:
                primary: configure
                timeout: 3
  outputs:
    config_state:
      type: string
      value: { get_attribute: [ app, config_state ] }
`
	if err := os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(fmt.Sprintf(template, kind, file, retries)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "Artifacts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Artifacts", file), []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// smfPods waits for n running SMF pods and returns their names, sorted.
func smfPods(t *testing.T, c *framework.Cluster, ns string, n int) []string {
	t.Helper()
	var names []string
	NewWithT(t).Eventually(func(g Gomega) {
		list, err := c.Clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "calaf.io/service=core,calaf.io/node=smf"})
		g.Expect(err).NotTo(HaveOccurred())
		names = nil
		for _, pod := range list.Items {
			if pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning {
				names = append(names, pod.Name)
			}
		}
		g.Expect(names).To(HaveLen(n))
	}, 2*time.Minute, time.Second).Should(Succeed())
	sort.Strings(names)
	return names
}

func onePod(t *testing.T, c *framework.Cluster, ns, selector string) string {
	t.Helper()
	pod, err := c.WaitForPodRunning(context.Background(), ns, selector, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return pod.Name
}

// configureRuns counts the lines SMF's configure appended in each pod (one per run).
func configureRuns(t *testing.T, c *framework.Cluster, ns string, pods []string) map[string]int {
	return countLines(t, c, ns, pods, "/tmp/smf-configure.runs")
}

func countLines(t *testing.T, c *framework.Cluster, ns string, pods []string, file string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, pod := range pods {
		res, err := c.Exec(context.Background(), ns, pod, "main", "sh", "-c", "cat "+file+" 2>/dev/null | wc -l")
		if err != nil {
			t.Fatalf("exec in %s: %v (%s)", pod, err, res.Stderr)
		}
		n, err := strconv.Atoi(strings.TrimSpace(res.Stdout))
		if err != nil {
			t.Fatalf("%s in %s: %q", file, pod, res.Stdout)
		}
		counts[pod] = n
	}
	return counts
}

// resync asks for n reconciles of a Service, one after the other, and waits for each to
// be handled: its status patch carries the request's token. A reconcile that starts
// operations marks them Running in that same patch, so the status that says the last
// request was handled shows whether any run was started: none must be.
func resync(t *testing.T, ns, name string, n int) {
	t.Helper()
	var svc *v1alpha1.Service
	for i := 0; i < n; i++ {
		token := fmt.Sprintf("resync-%d", time.Now().UnixNano())
		svc = getService(t, ns, name)
		patch := client.MergeFrom(svc.DeepCopy())
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[v1alpha1.ReconcileRequestAnnotation] = token
		if err := suite.client.Patch(context.Background(), svc, patch); err != nil {
			t.Fatal(err)
		}
		NewWithT(t).Eventually(func() string {
			svc = getService(t, ns, name)
			return svc.Status.LastHandledReconcileAt
		}, time.Minute, 200*time.Millisecond).Should(Equal(token))
	}
	for _, node := range svc.Status.Nodes {
		for _, op := range node.Operations {
			if op.Phase == v1alpha1.OperationRunning {
				t.Errorf("a resync started %s of node %s: %s", op.Name, node.Name, op.Message)
			}
		}
	}
}

func nodeStatus(t *testing.T, svc *v1alpha1.Service, name string) v1alpha1.NodeStatus {
	t.Helper()
	for _, node := range svc.Status.Nodes {
		if node.Name == name {
			return node
		}
	}
	t.Fatalf("Service %s has no node %s", svc.Name, name)
	return v1alpha1.NodeStatus{}
}

func nodeOperation(t *testing.T, svc *v1alpha1.Service, node, name string) v1alpha1.NodeOperationStatus {
	t.Helper()
	for _, op := range nodeStatus(t, svc, node).Operations {
		if op.Name == name {
			return op
		}
	}
	t.Fatalf("node %s has no operation %s in its status", node, name)
	return v1alpha1.NodeOperationStatus{}
}

// warningEvents returns the notes of the Warning events with a reason in a namespace.
func warningEvents(t *testing.T, ns, reason string) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := suite.client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range list.Items {
		if e.Type == "Warning" && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}
