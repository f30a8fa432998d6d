//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/test/e2e/framework"
)

// teardownPackage has a front workload that depends on a back one; both have a Standard
// stop operation (every pod) and the back one a delete operation (one pod).
const teardownPackage = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  inputs:
    image:
      type: string
  node_templates:
    back:
      type: calaf.nodes.Deployment
      properties:
        image: { get_input: image }
        command: [ sh, -c, 'exec sleep 1000000' ]
      artifacts:
        stop:
          type: calaf.artifacts.JavaScript
          file: Artifacts/stop.js
        delete:
          type: calaf.artifacts.Shell
          file: Artifacts/delete.sh
          properties:
            targets: one
      interfaces:
        Standard:
          operations:
            stop:
              implementation: stop
              inputs:
                grace: 7
            delete: delete
    front:
      type: calaf.nodes.Deployment
      properties:
        image: { get_input: image }
        replicas: 2
        command: [ sh, -c, 'exec sleep 1000000' ]
      artifacts:
        stop:
          type: calaf.artifacts.JavaScript
          file: Artifacts/stop.js
      interfaces:
        Standard:
          operations:
            stop:
              implementation: stop
              inputs:
                grace: 3
      requirements:
      - dependency: back
`

// Deleting a Service runs the Standard stop operations in the pods of each node, then
// its delete operation, dependents first, before the node's objects go.
func TestTeardownOperationsRunBeforeDeletion(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-teardown")
	dir := t.TempDir()
	files := map[string]string{
		"service.yaml": teardownPackage,
		"Artifacts/stop.js": "const r = calaf.exec(['sh', '-c', 'test -d /proc/1 && echo alive && echo stopped > /tmp/calaf-teardown']);\n" +
			"calaf.log('draining ' + calaf.node.name + ' in ' + calaf.inputs.grace + 's: ' + r.stdout.trim());\n",
		"Artifacts/delete.sh": "echo \"deregistered $CALAF_POD after: $(cat /tmp/calaf-teardown 2>/dev/null || echo nothing)\"\n",
	}
	for name, content := range files {
		g.Expect(os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
	}
	calaf(t, "deploy", "tiers", dir, "-n", ns, "-i=image="+framework.BusyboxImage, "--wait", "--wait-timeout=4m")
	waitReady(t, ns, "tiers", time.Minute)

	calaf(t, "delete", "tiers", "-n", ns, "--wait")

	events := teardownEvents(t, ns)
	t.Logf("teardown events, in order:\n%s", strings.Join(events, "\n"))
	g.Expect(events).To(HaveLen(3), "%v", events)
	// The dependent first (its own job, seconds before the next node's), then back's
	// stop and delete (one job: their events may carry the same time).
	g.Expect(events[0]).To(And(ContainSubstring("Standard.stop succeeded in tiers-front-"), ContainSubstring("draining front in 3s: alive")))
	ranIn, _, _ := strings.Cut(events[0], ";") // the pods, before the log tail
	g.Expect(strings.Count(ranIn, "tiers-front-")).To(Equal(2), "stop ran in both front pods: %s", events[0])
	g.Expect(events[1:]).To(ConsistOf(
		And(ContainSubstring("Standard.stop succeeded in tiers-back-"), ContainSubstring("draining back in 7s: alive")),
		And(ContainSubstring("Standard.delete succeeded in tiers-back-"), ContainSubstring("logged: deregistered tiers-back-")),
	))
	// Within back's pod, stop ran before delete: delete found what stop left.
	g.Expect(strings.Join(events, "\n")).To(ContainSubstring("after: stopped"), "delete ran after stop in its pod")

	deployments, err := c.Clientset.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deployments.Items).To(BeEmpty())
}

// teardownEvents returns the notes of the teardown events in a namespace, oldest first.
func teardownEvents(t *testing.T, ns string) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := suite.client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var events []eventsv1.Event
	for _, e := range list.Items {
		if strings.HasPrefix(e.Note, "teardown: ") {
			events = append(events, e)
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].EventTime.Before(&events[j].EventTime) })
	notes := make([]string, len(events))
	for i, e := range events {
		notes[i] = e.Note
	}
	return notes
}
