package lifecycle

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
)

// TestFailedRollbackWaitsForARetry: an occurrence whose rollback failed stays FAILED_TEMP —
// its resolution (Rollback) does not start the rollback again by itself; a retry does.
func TestFailedRollbackWaitsForARetry(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &Reconciler{Now: func() time.Time { return now }}
	op := &v1alpha1.Operation{Spec: v1alpha1.OperationSpec{Type: v1alpha1.OperationChangePackage, Resolution: v1alpha1.ResolutionRollback}}
	for _, to := range []v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateFailedTemp, v1alpha1.StateRollingBack, v1alpha1.StateFailedTemp} {
		if _, err := enter(op, to, "", "", metav1.NewTime(now)); err != nil {
			t.Fatal(err)
		}
	}
	rn := &run{r: r, op: op}
	if err := rn.decide(context.Background()); err != nil {
		t.Fatal(err)
	}
	if op.Status.OperationState != v1alpha1.StateFailedTemp || len(rn.events) != 0 {
		t.Fatalf("a failed rollback went on by itself: %s", op.Status.OperationState)
	}
	op.Spec.Retries = 1
	if err := rn.decide(context.Background()); err != nil {
		t.Fatal(err)
	}
	if op.Status.OperationState != v1alpha1.StateRollingBack {
		t.Fatalf("a retry of a failed rollback: %s, want ROLLING_BACK", op.Status.OperationState)
	}
}
