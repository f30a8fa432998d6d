package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"calaf.io/calaf/api/v1alpha1"
)

// TestServiceTally checks the counts of Services Applied and Ready that the bench keeps
// from the events of their changes: a Service counts once whatever its events repeat, a
// condition of an older generation does not count, and a deleted one no longer counts.
func TestServiceTally(t *testing.T) {
	service := func(name string, generation, observed int64, conditions ...string) *v1alpha1.Service {
		svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: generation}}
		svc.Status.ObservedGeneration = observed
		for _, condition := range conditions {
			svc.Status.Conditions = append(svc.Status.Conditions, metav1.Condition{Type: condition, Status: metav1.ConditionTrue, ObservedGeneration: observed})
		}
		return svc
	}
	tally := newServiceTally()
	steps := []struct {
		event          func()
		ready, applied int
	}{
		{func() { tally.note(service("a", 1, 0)) }, 0, 0},
		{func() { tally.note(service("a", 1, 1, v1alpha1.ConditionApplied)) }, 0, 1},
		{func() { tally.note(service("a", 1, 1, v1alpha1.ConditionApplied)) }, 0, 1},
		{func() { tally.note(service("b", 1, 1, v1alpha1.ConditionApplied, v1alpha1.ConditionReady)) }, 1, 2},
		{func() { tally.note(service("b", 2, 1, v1alpha1.ConditionApplied, v1alpha1.ConditionReady)) }, 0, 1},
		{func() { tally.note(service("a", 1, 1, v1alpha1.ConditionApplied, v1alpha1.ConditionReady)) }, 1, 1},
		{func() { tally.forget(service("a", 1, 1)) }, 0, 0},
		{func() { tally.note(service("c", 1, 1, v1alpha1.ConditionApplied)) }, 0, 1},
		{func() { tally.forget(toolscache.DeletedFinalStateUnknown{Key: "ns/c"}) }, 0, 0},
		{func() { tally.note("not a Service") }, 0, 0},
	}
	for i, step := range steps {
		step.event()
		if ready, applied := tally.counts(); ready != step.ready || applied != step.applied {
			t.Errorf("after event %d: %d Ready and %d Applied, want %d and %d", i, ready, applied, step.ready, step.applied)
		}
	}
}
