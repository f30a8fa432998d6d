package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
