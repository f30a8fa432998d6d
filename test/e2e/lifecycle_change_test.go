//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/lifecycle"
	"calaf.io/calaf/test/e2e/framework"
)

// versionPackage writes revision version of a package: the app Deployment (its pods say
// the version in $VERSION, its output too); broken adds a Deployment whose container reads
// a key of the ConfigMap feature-flags, which does not exist until the fix, and a
// ConfigMap the first revision did not have.
func versionPackage(t *testing.T, version string, broken bool) string {
	t.Helper()
	dir := t.TempDir()
	extra := ""
	if broken {
		extra = `    flags:
      type: calaf.nodes.Manifests
      artifacts:
        flagged:
          type: calaf.artifacts.Manifest
          file: manifests/flagged.yaml
    extra:
      type: calaf.nodes.ConfigMap
      properties:
        data: { added: 'yes' }
`
	}
	template := `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  inputs:
    image: { type: string }
  node_templates:
    app:
      type: calaf.nodes.Deployment
      properties:
        image: { get_input: image }
        command: [ sh, -c, 'exec sleep 1000000' ]
        env: { VERSION: '` + version + `' }
        termination_grace_period_seconds: 1
` + extra + `  outputs:
    version:
      type: string
      value: '` + version + `'
`
	flagged := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: flagged
spec:
  replicas: 1
  selector: { matchLabels: { app: flagged } }
  template:
    metadata: { labels: { app: flagged, calaf.io/service: core, calaf.io/node: flags } }
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: ` + framework.BusyboxImage + `
        imagePullPolicy: Never
        command: [ sh, -c, 'exec sleep 1000000' ]
        env:
        - name: MODE
          valueFrom: { configMapKeyRef: { name: feature-flags, key: mode } }
`
	for name, content := range map[string]string{"service.yaml": template, "manifests/flagged.yaml": flagged} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// subscriber is the NFVO's notification endpoint: a real HTTP server on the host (where
// the e2e operator runs, on the address its outbound policy allows) that can go down and
// come back on the same address.
type subscriber struct {
	mu       sync.Mutex
	addr     string
	server   *http.Server
	received []lifecycle.Notification
}

func startSubscriber(t *testing.T) *subscriber {
	listener, err := net.Listen("tcp", net.JoinHostPort(subscriberAddress, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s := &subscriber{addr: listener.Addr().String()}
	s.serve(listener)
	t.Cleanup(s.stop)
	return s
}

func (s *subscriber) serve(listener net.Listener) {
	s.server = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n lifecycle.Notification
		data, _ := io.ReadAll(r.Body)
		if json.Unmarshal(data, &n) != nil {
			http.Error(w, "bad notification", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.received = append(s.received, n)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = s.server.Serve(listener) }()
}

// stop takes the endpoint down: connections are refused.
func (s *subscriber) stop() { _ = s.server.Close() }

// restart brings it back on the same address.
func (s *subscriber) restart(t *testing.T) {
	listener, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	s.serve(listener)
}

// transitions lists "occurrence STATE" of what the endpoint received, in order.
func (s *subscriber) transitions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range s.received {
		out = append(out, n.Calaf.Occurrence+" "+n.OperationState)
	}
	return out
}

// expected lists "occurrence STATE" of every transition of the occurrences, in order.
func expected(ops ...*v1alpha1.Operation) []string {
	var out []string
	for _, op := range ops {
		for _, state := range stateNames(op) {
			out = append(out, op.Name+" "+state)
		}
	}
	return out
}

// On real pods: a CHANGE_PACKAGE to a broken revision ends FAILED_TEMP with the reason;
// calaf rollback restores the previous revision (ROLLED_BACK: its objects and outputs
// back and healthy, what the broken one added pruned); with rollback Auto the same
// happens without a human; after the fix, a retry completes the change. A subscription's
// endpoint receives every transition of all of them, in order — also those that happened
// while it was down.
func TestLifecycleChangePackage(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-lcm-change")
	ctx := context.Background()
	image := "-i=image=" + framework.BusyboxImage
	endpoint := startSubscriber(t)
	g.Expect(suite.client.Create(ctx, &v1alpha1.LifecycleSubscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nfvo"},
		Spec: v1alpha1.LifecycleSubscriptionSpec{CallbackURI: "http://" + endpoint.addr + "/notifications"}})).To(Succeed())

	calaf(t, "deploy", "core", versionPackage(t, "1", false), "-n", ns, image, "--wait", "--wait-timeout=4m")
	v1 := waitReady(t, ns, "core", time.Minute)
	broken := versionPackage(t, "2", true)

	out, code := calafExit(t, "upgrade", "core", broken, "-n", ns, "--wait")
	t.Logf("calaf upgrade (broken):\n%s", out)
	g.Expect(code).To(Equal(1), out)
	g.Expect(out).To(ContainSubstring("FAILED_TEMP"))
	g.Expect(out).To(ContainSubstring("CreateContainerConfigError"))
	manual := createdOccurrence(t, ns, out)
	g.Expect(manual.Status.Message).To(ContainSubstring(`configmap "feature-flags" not found`))

	endpoint.stop() // down while the rollback happens
	out, code = calafExit(t, "rollback", manual.Name, "-n", ns, "--wait")
	t.Logf("calaf rollback:\n%s", out)
	g.Expect(code).To(Equal(1), "ROLLED_BACK exits 1: %s", out)
	g.Expect(out).To(ContainSubstring("ROLLED_BACK"))
	expectRevision(t, c, ns, v1.Status.LastAppliedRevision, "1")

	out, code = calafExit(t, "upgrade", "core", broken, "--rollback", "auto", "-n", ns, "--wait")
	t.Logf("calaf upgrade --rollback auto:\n%s", out)
	g.Expect(code).To(Equal(1), out)
	g.Expect(out).To(ContainSubstring("rolling back by itself (rollback: Auto)"))
	g.Expect(out).To(ContainSubstring("ROLLED_BACK"))
	auto := createdOccurrence(t, ns, out)
	g.Expect(stateNames(&auto)).To(Equal([]string{"STARTING", "PROCESSING", "FAILED_TEMP", "ROLLING_BACK", "ROLLED_BACK"}))
	expectRevision(t, c, ns, v1.Status.LastAppliedRevision, "1")

	endpoint.restart(t)
	out, code = calafExit(t, "upgrade", "core", broken, "-n", ns, "--wait")
	g.Expect(code).To(Equal(1), out)
	retried := createdOccurrence(t, ns, out)
	g.Expect(c.Clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "feature-flags"},
		Data: map[string]string{"mode": "on"}}, metav1.CreateOptions{})).Error().NotTo(HaveOccurred())
	out, code = calafExit(t, "retry", retried.Name, "-n", ns, "--wait")
	t.Logf("calaf retry:\n%s", out)
	g.Expect(code).To(Equal(0), out)
	g.Expect(out).To(ContainSubstring("COMPLETED"))
	svc := waitReady(t, ns, "core", time.Minute)
	g.Expect(output(svc, "version")).To(Equal("2"))
	g.Expect(svc.Status.LastAppliedRevision).NotTo(Equal(v1.Status.LastAppliedRevision))

	// Every transition reached the endpoint, in order, the ones made while it was down too.
	all := []*v1alpha1.Operation{getOccurrence(t, ns, manual.Name), getOccurrence(t, ns, auto.Name), getOccurrence(t, ns, retried.Name)}
	g.Eventually(endpoint.transitions, 2*time.Minute, time.Second).Should(Equal(expected(all...)))
	g.Expect(stateNames(all[2])).To(Equal([]string{"STARTING", "PROCESSING", "FAILED_TEMP", "PROCESSING", "COMPLETED"}))
}

// expectRevision waits until the Service runs a revision again, healthy, with its
// objects: the app pods say the version, the broken revision's objects are gone.
func expectRevision(t *testing.T, c *framework.Cluster, ns, revision, version string) {
	t.Helper()
	g := NewWithT(t)
	svc := waitReady(t, ns, "core", time.Minute)
	g.Expect(svc.Status.LastAppliedRevision).To(Equal(revision))
	g.Expect(output(svc, "version")).To(Equal(version))
	ctx := context.Background()
	g.Eventually(func() error {
		_, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, "flagged", metav1.GetOptions{})
		return err
	}, time.Minute, time.Second).Should(Satisfy(apierrors.IsNotFound), "the broken revision's Deployment is pruned")
	_, err := c.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, "core-extra", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the broken revision's ConfigMap is pruned")
	for _, pod := range waitPods(t, c, ns, "core", "app", 1) {
		env, err := c.Exec(ctx, ns, pod, "main", "sh", "-c", "echo $VERSION")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(env.Stdout).To(Equal(version + "\n"))
	}
}
