package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A deleted owned object is recreated, and an edited owned field is reverted, within
// seconds (through the watch on owned objects, not the 10 minute interval).
func TestDriftIsRepaired(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := createService(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), nil)
	waitReady(t, key)

	top := getConfigMap(g, ns, "demo-top")
	g.Expect(env.client.Delete(ctx, top)).To(Succeed())
	g.Eventually(func(g Gomega) {
		recreated := getConfigMap(g, ns, "demo-top")
		g.Expect(recreated.UID).NotTo(Equal(top.UID))
		g.Expect(recreated.Data).To(HaveKeyWithValue("layer", "top"))
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())

	base := getConfigMap(g, ns, "demo-base")
	base.Data["greeting"] = "tampered"
	g.Expect(env.client.Update(ctx, base, client.FieldOwner("someone-else"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getConfigMap(g, ns, "demo-base").Data).To(HaveKeyWithValue("greeting", "hello"))
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())

	front := &corev1.Service{}
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, front)).To(Succeed())
	g.Expect(env.client.Delete(ctx, front)).To(Succeed())
	g.Eventually(func() error {
		return env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &corev1.Service{})
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
}
