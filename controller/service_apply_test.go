package controller_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// A Service becomes Ready with its objects applied, labelled, inventoried, and its nodes
// reported in dependency order.
func TestServiceApplies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	svc := &v1alpha1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec:       v1alpha1.ServiceSpec{Source: upload(t, ns, "demo", layeredPackage())},
	}
	g.Expect(env.client.Create(ctx, svc)).To(Succeed())
	key := client.ObjectKeyFromObject(svc)
	svc = waitReady(t, key)

	var names []string
	for _, node := range svc.Status.Nodes {
		names = append(names, node.Name)
		g.Expect(node.Phase).To(Equal(v1alpha1.NodeReady), "node %s: %s", node.Name, node.Message)
	}
	g.Expect(names).To(Equal([]string{"base", "middle", "top", "front"}))
	g.Expect(svc.Status.Inventory).To(HaveLen(4))
	g.Expect(svc.Status.Package).NotTo(BeNil())
	g.Expect(svc.Status.Package.TemplateName).To(Equal("layered"))
	g.Expect(svc.Status.LastAppliedRevision).To(Equal(svc.Status.Package.Revision))
	g.Expect(string(svc.Status.Outputs["greeting"].Raw)).To(Equal(`"hello"`))
	for _, conditionType := range []string{v1alpha1.ConditionSourceReady, v1alpha1.ConditionCompiled, v1alpha1.ConditionApplied, v1alpha1.ConditionHealthy} {
		c := condition(svc, conditionType)
		g.Expect(c).NotTo(BeNil(), conditionType)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), conditionType)
	}
	g.Expect(condition(svc, v1alpha1.ConditionStalled)).To(BeNil())
	g.Expect(condition(svc, v1alpha1.ConditionReconciling)).To(BeNil())

	var cm corev1.ConfigMap
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "demo-base"}, &cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("calaf.io/service", "demo"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("calaf.io/node", "base"))
	var front corev1.Service
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &front)).To(Succeed())
	g.Expect(front.Labels).To(HaveKeyWithValue("calaf.io/node", "front"))
}
