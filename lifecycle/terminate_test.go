package lifecycle_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// TERMINATE deletes the Service and everything it runs, then completes: the occurrence
// outlives its Service (no owner reference) and says so; an occurrence that comes after it
// (queued behind it, or once it completed) is refused, its Service gone.
func TestTerminate(t *testing.T) {
	for _, kind := range []v1alpha1.TerminationType{v1alpha1.TerminationGraceful, v1alpha1.TerminationForceful} {
		t.Run(string(kind), func(t *testing.T) {
			g := NewWithT(t)
			ns := newNamespace(t)
			deploy(t, ns, "cfg", configTemplate("1", addedConfig), nil)
			op := occurrence(t, ns, "cfg", v1alpha1.OperationSpec{Type: v1alpha1.OperationTerminate,
				Terminate: &v1alpha1.TerminateRequest{TerminationType: kind, GracefulTerminationTimeout: 30}})
			waitReached(t, op, v1alpha1.StateProcessing, time.Minute) // the Service may be gone already
			late := occurrence(t, ns, "cfg", scaleOp("smf", v1alpha1.ScaleOut, 1))
			op = waitState(t, op, v1alpha1.StateCompleted, time.Minute)
			g.Expect(op.Status.Message).To(Equal("Service cfg terminated"))
			g.Expect(op.OwnerReferences).To(BeEmpty())
			err := env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cfg"}, &v1alpha1.Service{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Service is gone: %v", err)
			for _, name := range []string{"cfg-config", "cfg-added"} {
				g.Expect(exists(ns, &corev1.ConfigMap{}, name)).To(BeFalse(), name)
			}
			// The late one went with its Service (owned by it), or was refused.
			current := &v1alpha1.Operation{}
			if err := env.client.Get(context.Background(), client.ObjectKeyFromObject(late), current); err == nil {
				g.Eventually(func(g Gomega) v1alpha1.OperationState {
					if err := env.client.Get(context.Background(), client.ObjectKeyFromObject(late), current); apierrors.IsNotFound(err) {
						return v1alpha1.StateFailed
					}
					return current.Status.OperationState
				}, 30*time.Second).Should(Equal(v1alpha1.StateFailed))
			}
		})
	}
}
