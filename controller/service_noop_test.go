package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// Once a Service is Ready and settled, its periodic resyncs compile nothing and send no
// write request at all to the API server (no apply, no dry-run, no status patch, no event).
func TestNoOpResyncWritesNothing(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	key := createService(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), nil)
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Interval = &metav1.Duration{Duration: time.Second} })
	waitReady(t, key)
	// Let the first resyncs verify what was applied: two of them.
	resyncs := reconcileCount()
	g.Eventually(reconcileCount, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", resyncs+2))

	writes, compiles := writesIn(ns), env.compile.Load()
	resyncs = reconcileCount()
	g.Eventually(reconcileCount, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", resyncs+4), "the Service must be resynced several times")
	g.Expect(env.compile.Load()-compiles).To(BeZero(), "compiles during no-op resyncs")
	g.Expect(writesIn(ns)-writes).To(BeZero(), "write requests during no-op resyncs")
	g.Expect(isReady(getService(g, key))).To(BeTrue())
}

// An operator that restarts remembers nothing of what it applied, yet its resyncs of a
// settled Service send no write either, from the first one on: what each object's last
// apply was is rebuilt from the Service's inventory and the live objects.
func TestNoOpResyncWritesNothingAfterRestart(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	key := createService(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), nil)
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Interval = &metav1.Duration{Duration: time.Second} })
	waitReady(t, key)
	resyncs := reconcileCount()
	g.Eventually(reconcileCount, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", resyncs+2))
	for _, entry := range getService(g, key).Status.Inventory {
		g.Expect(entry.Applied).NotTo(BeEmpty(), "inventory entry %s records no applied fingerprint", entry.ID)
	}

	writes := writesIn(ns)
	restartOperator(t)
	resyncs = reconcileCount()
	g.Eventually(reconcileCount, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", resyncs+4), "the restarted operator must resync the Service several times")
	g.Expect(writesIn(ns)-writes).To(BeZero(), "write requests by the restarted operator")
	g.Expect(isReady(getService(g, key))).To(BeTrue())

}

// Drift made while the operator was down is repaired by the operator that starts: the
// inventory's fingerprints do not hide a field someone else changed.
func TestDriftWhileStoppedIsRepairedAfterRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := createService(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), nil)
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Interval = &metav1.Duration{Duration: time.Second} })
	waitReady(t, key)
	resyncs := reconcileCount()
	g.Eventually(reconcileCount, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", resyncs+2))

	env.stop()
	base := getConfigMap(g, ns, "demo-base")
	base.Data["greeting"] = "tampered"
	g.Expect(env.client.Update(ctx, base, client.FieldOwner("someone-else"))).To(Succeed())
	g.Expect(startOperator(false)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getConfigMap(g, ns, "demo-base").Data).To(HaveKeyWithValue("greeting", "hello"))
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
}
