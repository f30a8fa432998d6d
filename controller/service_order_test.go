package controller_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
)

// A claim never binds on the API-server test ground (no storage controller), so a node
// depending on the storage node waits forever: exactly what this test needs.
const waitingTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
` + profileImport + `
topology_template:
  node_templates:
    storage:
      type: calaf.nodes.Volume
      properties:
        size: 1Gi
    settings:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          version: REVISION
  outputs:
    storage_phase:
      value: { get_attribute: [ storage, phase ] }
`

// A node whose dependency is not healthy waits (Pending, waiting for that node), is not
// reported Ready, and what it runs from an earlier revision is left untouched.
func TestDependentWaitsAndKeepsEarlierRevision(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	v1 := strings.Replace(waitingTemplate, "REVISION", "one", 1)
	key := createService(t, ns, "demo", upload(t, ns, "demo", map[string]string{"service.yaml": v1}), nil)
	g.Eventually(func(g Gomega) {
		svc := getService(g, key)
		g.Expect(svc.Status.Nodes).To(HaveLen(2))
		g.Expect(node(svc, "settings").Phase).To(Equal(v1alpha1.NodeReady))
		g.Expect(node(svc, "storage").Phase).To(Equal(v1alpha1.NodeProgressing))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(getConfigMap(g, ns, "demo-settings").Data).To(HaveKeyWithValue("version", "one"))
	// The output reads an attribute observed on the live claim, in the reconcile that
	// observed it.
	g.Eventually(func(g Gomega) {
		g.Expect(string(getService(g, key).Status.Outputs["storage_phase"].Raw)).To(Equal(`"Pending"`))
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())

	// Revision two makes settings depend on the storage, which never becomes healthy.
	v2 := strings.Replace(strings.Replace(waitingTemplate, "REVISION", "two", 1), "          version: two\n", "          version: two\n      requirements:\n      - dependency: storage\n", 1)
	newSource := upload(t, ns, "demo", map[string]string{"service.yaml": v2})
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Source = newSource })
	g.Eventually(func(g Gomega) {
		svc := getService(g, key)
		g.Expect(svc.Status.Package.Revision).To(Equal("sha256:" + newSource.Upload.SHA256))
		settings := node(svc, "settings")
		g.Expect(settings.Phase).To(Equal(v1alpha1.NodePending))
		g.Expect(settings.WaitingFor).To(Equal("node storage"))
		ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	handledReconcile(t, key) // one more reconcile of revision two, over and done
	g.Expect(getConfigMap(g, ns, "demo-settings").Data).To(HaveKeyWithValue("version", "one"))
}

func node(svc *v1alpha1.Service, name string) v1alpha1.NodeStatus {
	for _, n := range svc.Status.Nodes {
		if n.Name == name {
			return n
		}
	}
	return v1alpha1.NodeStatus{}
}
