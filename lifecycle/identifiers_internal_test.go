package lifecycle

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
)

// TestReleaserWaitsOrGivesUp: a deleted Service waits for a subscription that asks for its
// deletion and has not delivered it — unless its endpoint has failed for an hour.
func TestReleaserWaitsOrGivesUp(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r := &IdentifierReleaser{Now: func() time.Time { return now }}
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Name: "core"}}
	failing := func(since time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-since))}}
	}
	cases := []struct {
		name string
		sub  v1alpha1.LifecycleSubscription
		want bool
	}{
		{"NFV API subscription, not delivered", v1alpha1.LifecycleSubscription{Spec: v1alpha1.LifecycleSubscriptionSpec{APIRoot: "https://x"}}, true},
		{"occurrences only", v1alpha1.LifecycleSubscription{}, false},
		{"delivered", v1alpha1.LifecycleSubscription{Spec: v1alpha1.LifecycleSubscriptionSpec{APIRoot: "https://x"},
			Status: v1alpha1.LifecycleSubscriptionStatus{Cursors: []v1alpha1.DeliveryCursor{{Operation: "service/core", Delivered: 2}}}}, false},
		{"only created delivered", v1alpha1.LifecycleSubscription{Spec: v1alpha1.LifecycleSubscriptionSpec{APIRoot: "https://x"},
			Status: v1alpha1.LifecycleSubscriptionStatus{Cursors: []v1alpha1.DeliveryCursor{{Operation: "service/core", Delivered: 1}}}}, true},
		{"failing for 10 minutes", v1alpha1.LifecycleSubscription{Spec: v1alpha1.LifecycleSubscriptionSpec{APIRoot: "https://x"},
			Status: v1alpha1.LifecycleSubscriptionStatus{Conditions: failing(10 * time.Minute)}}, true},
		{"failing for two hours", v1alpha1.LifecycleSubscription{Spec: v1alpha1.LifecycleSubscriptionSpec{APIRoot: "https://x"},
			Status: v1alpha1.LifecycleSubscriptionStatus{Conditions: failing(2 * time.Hour)}}, false},
		{"another instance", v1alpha1.LifecycleSubscription{Spec: v1alpha1.LifecycleSubscriptionSpec{APIRoot: "https://x",
			Filter: &v1alpha1.SubscriptionFilter{ServiceNames: []string{"edge"}}}}, false},
	}
	for _, c := range cases {
		if got := r.waitsFor(&c.sub, svc); got != c.want {
			t.Errorf("%s: waits %v, want %v", c.name, got, c.want)
		}
	}
}
