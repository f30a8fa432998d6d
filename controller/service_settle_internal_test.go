package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
)

// A reconcile that applied changes holds its status patch once per generation for the
// objects' controllers, unless the settle delay is negative: then the status says Applied
// at once and Ready when it is.
func TestHoldStatusFollowsTheSettleDelay(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	settling := func(generation int64) *scope {
		svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{UID: "uid", Generation: generation}}
		return &scope{Service: svc, settling: true, changes: []string{"ConfigMap/a"}}
	}
	for _, c := range []struct {
		delay time.Duration
		want  []bool // generation 1, generation 1 again, generation 2
	}{
		{0, []bool{true, false, true}},
		{500 * time.Millisecond, []bool{true, false, true}},
		{-1, []bool{false, false, false}},
	} {
		r := &ServiceReconciler{SettleDelay: c.delay}
		got := []bool{r.holdStatus(settling(1), now), r.holdStatus(settling(1), now), r.holdStatus(settling(2), now)}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("settle delay %v: held %v, want %v", c.delay, got, c.want)
				break
			}
		}
	}
	r := &ServiceReconciler{}
	if s := settling(1); r.holdStatus(&scope{Service: s.Service}, now) {
		t.Error("a reconcile that applied nothing held its status")
	}
}
