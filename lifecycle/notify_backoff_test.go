package lifecycle

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/outbound"
)

// loopbackClient is an outbound client that may reach this host's test servers
// (127.0.0.1, named in its allowlist).
func loopbackClient() *outbound.Client {
	return outbound.New(outbound.Options{Policy: outbound.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
}

// recorder is an endpoint that records the notifications it gets and answers status.
type recorder struct {
	mu       sync.Mutex
	status   int
	received []Notification
}

func newRecorder(t *testing.T) (*recorder, *httptest.Server) {
	r := &recorder{status: http.StatusNoContent}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var n Notification
		if err := json.NewDecoder(req.Body).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.received = append(r.received, n)
		w.WriteHeader(r.status)
	}))
	t.Cleanup(server.Close)
	return r, server
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.received)
}

// fakeClock is a clock the test moves.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// notifierOn is a notifier whose client holds objs, on a clock the test moves.
func notifierOn(t *testing.T, clock *fakeClock, objs ...client.Object) (*Notifier, client.Client) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.LifecycleSubscription{}, &v1alpha1.Operation{}).
		WithObjects(objs...).Build()
	out := outbound.New(outbound.Options{Policy: outbound.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, Now: clock.Now})
	return &Notifier{Client: c, APIReader: c, Outbound: out, Backoff: outbound.Backoff{Base: time.Second, Max: time.Minute}, Now: clock.Now}, c
}

func reconcileSubscription(t *testing.T, n *Notifier, sub *v1alpha1.LifecycleSubscription) ctrl.Result {
	t.Helper()
	result, err := n.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sub)})
	if err != nil {
		t.Fatal(err)
	}
	return result
}

// An occurrence that retries 99 times records 200 transitions, of which it keeps the last
// 64: a subscription gets every one of them, in order, each with its own id.
func TestNotificationsGoOnPastTheTrimmedHistory(t *testing.T) {
	endpoint, server := newRecorder(t)
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	sub := &v1alpha1.LifecycleSubscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nfvo", UID: "sub-uid",
		CreationTimestamp: metav1.NewTime(clock.now.Add(-time.Hour))}, Spec: v1alpha1.LifecycleSubscriptionSpec{CallbackURI: server.URL}}
	op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "op", UID: "op-uid"},
		Spec: v1alpha1.OperationSpec{ServiceName: "svc", Type: v1alpha1.OperationModify}}
	n, c := notifierOn(t, clock, sub, op)
	states := []v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateProcessing}
	for len(states) < 200 {
		states = append(states, v1alpha1.StateFailedTemp, v1alpha1.StateProcessing)
	}
	for _, state := range states {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(op), op); err != nil {
			t.Fatal(err)
		}
		clock.now = clock.now.Add(time.Second)
		if _, err := enter(op, state, "", "", metav1.NewTime(clock.now)); err != nil {
			t.Fatal(err)
		}
		if err := c.Status().Update(context.Background(), op); err != nil {
			t.Fatal(err)
		}
		reconcileSubscription(t, n, sub)
	}
	if len(op.Status.Transitions) != maxTransitions {
		t.Fatalf("the occurrence keeps %d transitions, want %d: the test trims nothing", len(op.Status.Transitions), maxTransitions)
	}
	if got := endpoint.count(); got != 200 {
		t.Fatalf("the endpoint got %d notifications, want 200", got)
	}
	ids := map[string]bool{}
	for i, notification := range endpoint.received {
		if notification.OperationState != string(states[i]) || notification.Calaf.Transition != int64(i+1) || ids[notification.ID] {
			t.Fatalf("notification %d: %s (transition %d, id %s), want %s, transition %d, a new id", i, notification.OperationState,
				notification.Calaf.Transition, notification.ID, states[i], i+1)
		}
		ids[notification.ID] = true
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(sub), sub); err != nil {
		t.Fatal(err)
	}
	if sub.Status.Delivered != 200 || sub.Status.LastDelivered != "op-uid-200" || sub.Status.Cursors[0].Delivered != 200 {
		t.Errorf("status: delivered %d, last %s, cursors %v", sub.Status.Delivered, sub.Status.LastDelivered, sub.Status.Cursors)
	}
}

// An endpoint answering 500 gets one attempt per step of the backoff, however often the
// subscription is reconciled meanwhile (every change of an occurrence reconciles it): the
// status says when the next attempt is, and it is not made before.
func TestFailedDeliveryWaitsItsBackoff(t *testing.T) {
	endpoint, server := newRecorder(t)
	endpoint.status = http.StatusInternalServerError
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	sub := &v1alpha1.LifecycleSubscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nfvo", Generation: 1,
		CreationTimestamp: metav1.NewTime(clock.now.Add(-time.Hour))}, Spec: v1alpha1.LifecycleSubscriptionSpec{CallbackURI: server.URL}}
	op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "op", UID: "op-uid"},
		Spec: v1alpha1.OperationSpec{ServiceName: "svc", Type: v1alpha1.OperationModify}}
	if _, err := enter(op, v1alpha1.StateStarting, "", "", metav1.NewTime(clock.now)); err != nil {
		t.Fatal(err)
	}
	n, c := notifierOn(t, clock, sub, op)
	for failures := 1; failures <= 8; failures++ {
		for range 10 {
			reconcileSubscription(t, n, sub)
		}
		if got := endpoint.count(); got != failures {
			t.Fatalf("after %d steps of the backoff the endpoint got %d attempts", failures, got)
		}
		current := &v1alpha1.LifecycleSubscription{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(sub), current); err != nil {
			t.Fatal(err)
		}
		wait := n.Backoff.Delay(failures)
		if current.Status.Failures != int32(failures) || current.Status.NextAttemptTime == nil || !current.Status.NextAttemptTime.Time.Equal(clock.now.Add(wait)) {
			t.Fatalf("status after %d failures: %d failures, next attempt %v, want at %v", failures, current.Status.Failures, current.Status.NextAttemptTime, clock.now.Add(wait))
		}
		clock.now = clock.now.Add(wait)
	}
	// A new callback is tried at once.
	endpoint.mu.Lock()
	endpoint.status = http.StatusNoContent
	endpoint.mu.Unlock()
	current := &v1alpha1.LifecycleSubscription{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(sub), current); err != nil {
		t.Fatal(err)
	}
	current.Spec.CallbackURI = server.URL + "/v2"
	current.Generation = 2
	if err := c.Update(context.Background(), current); err != nil {
		t.Fatal(err)
	}
	reconcileSubscription(t, n, sub)
	if got := endpoint.count(); got != 9 {
		t.Errorf("a changed callback: the endpoint got %d attempts, want 9", got)
	}
}
