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

// An object that exists under a desired object's name and is not the Service's is never
// taken over, whether someone else made it or another Service did: the Service stalls
// with the object and its owner named, the object keeps its content and gets no field of
// Calaf's, and what the Service did create is recorded in its inventory. Once the foreign
// object is gone, a requested reconcile applies everything.
func TestTakeOverRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-top"}, Data: map[string]string{"owner": "someone"}}
	g.Expect(env.client.Create(ctx, foreign)).To(Succeed())
	demo := createService(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), nil)

	svc, message := waitRefused(t, demo)
	g.Expect(message).To(Equal(`ConfigMap "demo-top" already exists and belongs to no Calaf Service: refusing to take it over`))
	g.Expect(inventoryIDs(svc)).To(ConsistOf(ns+"_demo-base__ConfigMap", ns+"_demo-middle__Secret"))
	expectUntouched(g, client.ObjectKeyFromObject(foreign), map[string]string{"owner": "someone"})

	g.Expect(env.client.Delete(ctx, foreign)).To(Succeed())
	handledReconcile(t, demo)
	waitReady(t, demo)

	// Another Service of the same package: its raw Service manifest "front" is demo's.
	other := createService(t, ns, "other", upload(t, ns, "other", layeredPackage()), nil)
	svc, message = waitRefused(t, other)
	g.Expect(message).To(Equal(`Service "front" already exists and belongs to Service ` + ns + `/demo: refusing to take it over`))
	g.Expect(inventoryIDs(svc)).To(ConsistOf(ns+"_other-base__ConfigMap", ns+"_other-middle__Secret", ns+"_other-top__ConfigMap"))
	var front corev1.Service
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &front)).To(Succeed())
	g.Expect(front.Labels).To(HaveKeyWithValue(v1alpha1.LabelService, "demo"))
}

// waitRefused waits until a Service is stalled on an apply failure and returns it with
// the Applied condition's message.
func waitRefused(t *testing.T, key client.ObjectKey) (*v1alpha1.Service, string) {
	t.Helper()
	svc := waitStalled(t, key, v1alpha1.ReasonApplyFailed)
	applied := condition(svc, v1alpha1.ConditionApplied)
	NewWithT(t).Expect(applied.Status).To(Equal(metav1.ConditionFalse))
	return svc, applied.Message
}

func inventoryIDs(svc *v1alpha1.Service) []string {
	var ids []string
	for _, entry := range svc.Status.Inventory {
		ids = append(ids, entry.ID)
	}
	return ids
}

// expectUntouched checks that a ConfigMap kept its data, has no Calaf label and no field
// owned by Calaf's field manager.
func expectUntouched(g Gomega, key client.ObjectKey, data map[string]string) {
	var cm corev1.ConfigMap
	g.Expect(env.client.Get(context.Background(), key, &cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(data))
	g.Expect(cm.Labels).NotTo(HaveKey(v1alpha1.LabelService))
	for _, entry := range cm.ManagedFields {
		g.Expect(entry.Manager).NotTo(Equal("calaf"), "fields of %s", key)
	}
}
