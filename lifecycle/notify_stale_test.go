package lifecycle

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

// A notifier whose cache is behind the status patch of its last delivery (the cursor not
// moved yet) does not deliver that notification again: it reads the subscription from
// the API server, here a client that holds the moved cursor.
func TestNotifierDoesNotRepeatWhatACacheBehindForgot(t *testing.T) {
	var mu sync.Mutex
	var states []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n Notification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		states = append(states, n.OperationState)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer server.Close()

	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "op", UID: "op-uid"},
		Spec: v1alpha1.OperationSpec{ServiceName: "svc", Type: v1alpha1.OperationModify}}
	op.Status.Transitions = []v1alpha1.StateTransition{
		{State: v1alpha1.StateStarting, Time: metav1.NewMicroTime(now)},
		{State: v1alpha1.StateProcessing, Time: metav1.NewMicroTime(now.Add(time.Second))},
	}
	stale := &v1alpha1.LifecycleSubscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nfvo"},
		Spec: v1alpha1.LifecycleSubscriptionSpec{CallbackURI: server.URL}}
	current := stale.DeepCopy()
	current.Status.Cursors = []v1alpha1.DeliveryCursor{{Operation: "op", Delivered: 1}}
	build := func(sub *v1alpha1.LifecycleSubscription) client.Client {
		return fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.LifecycleSubscription{}).
			WithObjects(sub, op.DeepCopy()).Build()
	}
	n := &Notifier{Client: build(stale), APIReader: build(current), Backoff: outbound.Backoff{Base: time.Second, Max: time.Second},
		Outbound: loopbackClient(), Now: time.Now}

	if _, err := n.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(stale)}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(states) != 1 || states[0] != string(v1alpha1.StateProcessing) {
		t.Errorf("delivered %v, want only PROCESSING (STARTING was delivered before)", states)
	}
}
