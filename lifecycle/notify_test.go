package lifecycle_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/lifecycle"
)

// endpoint is a subscriber's HTTP server: it records the notifications it accepts, and can
// be down (answering 503).
type endpoint struct {
	mu       sync.Mutex
	down     bool
	received []lifecycle.Notification
	refused  int
	auth     []string
	server   *httptest.Server
}

func newEndpoint(t *testing.T) *endpoint {
	e := &endpoint{}
	e.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.down {
			e.refused++
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		var n lifecycle.Notification
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &n); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad notification", http.StatusBadRequest)
			return
		}
		e.received = append(e.received, n)
		e.auth = append(e.auth, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(e.server.Close)
	return e
}

func (e *endpoint) setDown(down bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.down = down
}

// states returns the states notified for an occurrence, in the order they came.
func (e *endpoint) states(occurrence string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, n := range e.received {
		if n.Calaf.Occurrence == occurrence {
			out = append(out, n.OperationState)
		}
	}
	return out
}

func (e *endpoint) all() []lifecycle.Notification {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]lifecycle.Notification(nil), e.received...)
}

func subscribe(t *testing.T, ns, name, url string, filter *v1alpha1.SubscriptionFilter, secret string) *v1alpha1.LifecycleSubscription {
	t.Helper()
	sub := &v1alpha1.LifecycleSubscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.LifecycleSubscriptionSpec{CallbackURI: url, Filter: filter}}
	if secret != "" {
		sub.Spec.SecretRef = &v1alpha1.LocalObjectReference{Name: secret}
	}
	NewWithT(t).Expect(env.client.Create(context.Background(), sub)).To(Succeed())
	return sub
}

func modifyOp(greeting string) v1alpha1.OperationSpec {
	return v1alpha1.OperationSpec{Type: v1alpha1.OperationModify,
		Modify: &v1alpha1.ModifyRequest{Inputs: map[string]apiextensionsv1.JSON{"greeting": {Raw: []byte(`"` + greeting + `"`)}}}}
}

// A subscription's endpoint receives a SOL003 VnfLcmOperationOccurrenceNotification for
// every transition, in order, with the subscription's credentials; while the endpoint is
// down nothing is lost: the subscription says what failed and how many wait, and once the
// endpoint is back every notification arrives, still in order. A filter selects by state.
func TestSubscriptionReceivesEveryTransition(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	deploy(t, ns, "cfg", configTemplate("1", ""), nil)
	g.Expect(env.client.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nfvo",
		Labels: map[string]string{v1alpha1.LabelSecretUse: v1alpha1.SecretUseSubscriptions}},
		StringData: map[string]string{"token": "s3cr3t-token"}})).To(Succeed())
	e := newEndpoint(t)
	results := newEndpoint(t)
	sub := subscribe(t, ns, "nfvo", e.server.URL+"/callback", nil, "nfvo")
	subscribe(t, ns, "results", results.server.URL, &v1alpha1.SubscriptionFilter{OperationStates: []v1alpha1.OperationState{v1alpha1.StateCompleted}}, "")

	op := occurrence(t, ns, "cfg", modifyOp("one"))
	waitState(t, op, v1alpha1.StateCompleted, time.Minute)
	g.Eventually(func() []string { return e.states(op.Name) }, 30*time.Second).Should(Equal([]string{"STARTING", "PROCESSING", "COMPLETED"}))
	first := e.all()[0]
	g.Expect(first.NotificationType).To(Equal("VnfLcmOperationOccurrenceNotification"))
	g.Expect(first.NotificationStatus).To(Equal("START"))
	g.Expect(first.Operation).To(Equal("MODIFY_INFO"))
	g.Expect(first.VnfInstanceID).To(Equal(ns + "/cfg"))
	g.Expect(first.VnfLcmOpOccID).To(Equal(ns + "/" + op.Name))
	g.Expect(first.SubscriptionID).To(Equal(string(getSubscription(g, sub).UID)))
	g.Expect(first.Links.VnfLcmOpOcc.Href).To(Equal("/apis/calaf.io/v1alpha1/namespaces/" + ns + "/operations/" + op.Name))
	g.Expect(e.all()[2].NotificationStatus).To(Equal("RESULT"))
	g.Expect(e.auth).To(HaveEach("Bearer s3cr3t-token"))
	g.Eventually(func() []string { return results.states(op.Name) }, 30*time.Second).Should(Equal([]string{"COMPLETED"}))

	// Down for a while: two more occurrences; nothing arrives, the subscription says why.
	e.setDown(true)
	second := occurrence(t, ns, "cfg", modifyOp("two"))
	waitState(t, second, v1alpha1.StateCompleted, time.Minute)
	third := occurrence(t, ns, "cfg", modifyOp("three"))
	waitState(t, third, v1alpha1.StateCompleted, time.Minute)
	g.Eventually(func(g Gomega) {
		s := getSubscription(g, sub)
		g.Expect(s.Status.Failures).To(BeNumerically(">=", 2))
		g.Expect(s.Status.LastError).To(ContainSubstring("answered 503 Service Unavailable"))
		g.Expect(s.Status.Pending).To(BeEquivalentTo(6))
		ready := findSubscriptionCondition(s, v1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal("DeliveryFailed"))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(e.states(second.Name)).To(BeEmpty())

	e.setDown(false)
	g.Eventually(func() []string { return e.states(third.Name) }, time.Minute).Should(Equal([]string{"STARTING", "PROCESSING", "COMPLETED"}))
	g.Expect(e.states(second.Name)).To(Equal([]string{"STARTING", "PROCESSING", "COMPLETED"}))
	var order []string
	for _, n := range e.all() {
		order = append(order, n.Calaf.Occurrence+" "+n.OperationState)
	}
	g.Expect(order).To(Equal([]string{op.Name + " STARTING", op.Name + " PROCESSING", op.Name + " COMPLETED",
		second.Name + " STARTING", second.Name + " PROCESSING", second.Name + " COMPLETED",
		third.Name + " STARTING", third.Name + " PROCESSING", third.Name + " COMPLETED"}))
	g.Eventually(func(g Gomega) {
		s := getSubscription(g, sub)
		g.Expect(s.Status.Delivered).To(BeEquivalentTo(9))
		g.Expect(s.Status.Pending).To(BeZero())
		g.Expect(s.Status.Failures).To(BeZero())
		g.Expect(findSubscriptionCondition(s, v1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}

func getSubscription(g Gomega, sub *v1alpha1.LifecycleSubscription) *v1alpha1.LifecycleSubscription {
	current := &v1alpha1.LifecycleSubscription{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKeyFromObject(sub), current)).To(Succeed())
	return current
}

func findSubscriptionCondition(sub *v1alpha1.LifecycleSubscription, conditionType string) *metav1.Condition {
	for i := range sub.Status.Conditions {
		if sub.Status.Conditions[i].Type == conditionType {
			return &sub.Status.Conditions[i]
		}
	}
	return &metav1.Condition{}
}

// A subscription sends no Secret its namespace's owner did not mark for subscriptions: one
// that names an unmarked Secret (which its creator may not be able to read) gets nothing
// sent, and says why; once the Secret is labelled, its token goes with the notifications.
func TestSubscriptionSendsOnlySecretsMarkedForIt(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	deploy(t, ns, "cfg", configTemplate("1", ""), nil)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nfvo-admin-creds"},
		StringData: map[string]string{"token": "admin-token"}}
	g.Expect(env.client.Create(context.Background(), secret)).To(Succeed())
	e := newEndpoint(t)
	sub := subscribe(t, ns, "borrower", e.server.URL, nil, "nfvo-admin-creds")

	op := occurrence(t, ns, "cfg", modifyOp("one"))
	waitState(t, op, v1alpha1.StateCompleted, time.Minute)
	g.Eventually(func(g Gomega) {
		ready := findSubscriptionCondition(getSubscription(g, sub), v1alpha1.ConditionReady)
		g.Expect(ready.Reason).To(Equal(v1alpha1.SubscriptionCredentialsRefused))
		g.Expect(ready.Message).To(ContainSubstring("credentials Secret nfvo-admin-creds: not labelled calaf.io/use=lifecycle-subscriptions"))
		g.Expect(ready.Message).NotTo(ContainSubstring("admin-token"))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(e.all()).To(BeEmpty())

	secret.Labels = map[string]string{v1alpha1.LabelSecretUse: v1alpha1.SecretUseSubscriptions}
	g.Expect(env.client.Update(context.Background(), secret)).To(Succeed())
	g.Eventually(func() []string { return e.states(op.Name) }, time.Minute).Should(Equal([]string{"STARTING", "PROCESSING", "COMPLETED"}))
	g.Expect(e.auth).To(HaveEach("Bearer admin-token"))
}
