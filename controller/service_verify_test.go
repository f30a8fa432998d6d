package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/tosca/sol004/sol004test"
)

// Under the Warn policy an unsigned package deploys, its status says why it was not
// verified, and one Warning Event says so — once: the resyncs after it send nothing.
func TestWarnPolicyRecordsOneEvent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	pki, err := sol004test.New("warn-test")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "anchors"},
		Data: map[string]string{"ca.crt": string(pki.RootPEM())}})).To(Succeed())
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"}, Spec: v1alpha1.ServiceSpec{
		Source:   upload(t, ns, "demo", layeredPackage()),
		Interval: &metav1.Duration{Duration: time.Second},
		Verify:   &v1alpha1.VerifySpec{Mode: v1alpha1.VerifyWarn, Anchors: &v1alpha1.AnchorsReference{Kind: "ConfigMap", Name: "anchors"}},
	}}
	g.Expect(env.client.Create(ctx, svc)).To(Succeed())
	key := client.ObjectKeyFromObject(svc)
	ready := waitReady(t, key)
	g.Expect(ready.Status.Package.Verification).NotTo(BeNil())
	g.Expect(ready.Status.Package.Verification.Verified).To(BeFalse())

	warnings := func() int {
		list := &eventsv1.EventList{}
		g.Expect(env.client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		n := 0
		for _, e := range list.Items {
			if e.Regarding.Name == "demo" && e.Reason == "SignatureNotVerified" {
				g.Expect(e.Note).To(ContainSubstring("Warn policy"))
				n++
			}
		}
		return n
	}
	g.Eventually(warnings, 10*time.Second, 100*time.Millisecond).Should(Equal(1))
	resyncs := reconcileCount()
	g.Eventually(reconcileCount, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", resyncs+2))
	writes := writesIn(ns)
	resyncs = reconcileCount()
	g.Eventually(reconcileCount, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", resyncs+3))
	g.Expect(writesIn(ns) - writes).To(BeZero())
	g.Expect(warnings()).To(Equal(1))
}
