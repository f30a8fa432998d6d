//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// calaf runs the calaf CLI and expects exit code 0.
func calaf(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	out, code, err := framework.Calaf(ctx, suite.calaf, suite.kubeconfig, args...)
	if err != nil || code != 0 {
		t.Fatalf("calaf %v: exit %d, %v\n%s\noperator log:\n%s", args, code, err, out, suite.operator.Tail(40))
	}
	return out
}

func getService(t *testing.T, ns, name string) *v1alpha1.Service {
	t.Helper()
	svc := &v1alpha1.Service{}
	if err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		t.Fatal(err)
	}
	return svc
}

// waitReady waits until a Service is Ready for its current generation.
func waitReady(t *testing.T, ns, name string, timeout time.Duration) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = &v1alpha1.Service{}
		g.Expect(suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, svc)).To(Succeed())
		ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s: %s", ready.Reason, ready.Message)
		g.Expect(svc.Status.ObservedGeneration).To(Equal(svc.Generation))
	}, timeout, time.Second).Should(Succeed(), "operator log:\n%s", suite.operator.Tail(30))
	return svc
}

// output decodes an output of a Service.
func output(svc *v1alpha1.Service, name string) any {
	raw, ok := svc.Status.Outputs[name]
	if !ok {
		return nil
	}
	var value any
	_ = json.Unmarshal(raw.Raw, &value)
	return value
}
