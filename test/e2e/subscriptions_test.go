//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/test/e2e/framework"
)

// counter is an HTTP endpoint that counts what it gets, when, with which credentials,
// and answers status.
type counter struct {
	mu     sync.Mutex
	status int
	times  []time.Time
	auth   []string
	server *httptest.Server
}

func newCounter(t *testing.T, ip string, status int) *counter {
	t.Helper()
	listener, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s := &counter{status: status}
	s.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.times = append(s.times, time.Now())
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		w.WriteHeader(s.status)
	}))
	s.server.Listener.Close()
	s.server.Listener = listener
	s.server.Start()
	t.Cleanup(s.server.Close)
	return s
}

func (s *counter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.times)
}

// within counts the requests that came within window of the first.
func (s *counter) within(window time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, at := range s.times {
		if at.Sub(s.times[0]) < window {
			n++
		}
	}
	return n
}

func createSubscription(t *testing.T, c client.Client, ns, name, url, secret string) *v1alpha1.LifecycleSubscription {
	t.Helper()
	sub := &v1alpha1.LifecycleSubscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.LifecycleSubscriptionSpec{CallbackURI: url}}
	if secret != "" {
		sub.Spec.SecretRef = &v1alpha1.LocalObjectReference{Name: secret}
	}
	NewWithT(t).Expect(c.Create(context.Background(), sub)).To(Succeed())
	return sub
}

// subscriptionReady is the subscription's Ready condition, as the API server has it.
func subscriptionReady(g Gomega, sub *v1alpha1.LifecycleSubscription) (metav1.Condition, *v1alpha1.LifecycleSubscription) {
	current := &v1alpha1.LifecycleSubscription{}
	g.Expect(suite.client.Get(context.Background(), client.ObjectKeyFromObject(sub), current)).To(Succeed())
	ready := apimeta.FindStatusCondition(current.Status.Conditions, v1alpha1.ConditionReady)
	g.Expect(ready).NotTo(BeNil())
	return *ready, current
}

// notifyOnce makes an occurrence whose transitions the namespace's subscriptions are
// notified of: a MODIFY of a Service that does not exist, which fails at once.
func notifyOnce(t *testing.T, ns string) {
	t.Helper()
	op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "modify-"},
		Spec: v1alpha1.OperationSpec{ServiceName: "absent", Type: v1alpha1.OperationModify,
			Modify: &v1alpha1.ModifyRequest{Inputs: map[string]apiextensionsv1.JSON{"greeting": {Raw: []byte(`"hello"`)}}}}}
	NewWithT(t).Expect(suite.client.Create(context.Background(), op)).To(Succeed())
}

// Notifications go only where the outbound policy allows, with only the credentials the
// subscription may use, and never faster than the backoff: callbacks to the operator's
// own webhook port, etcd, the node's addresses and the cloud metadata address are refused
// with a condition and reach nothing; a user who cannot read a Secret gets nothing sent
// with it; an endpoint answering 500 gets at most the backoff's attempts in a minute.
// The subtests run side by side: the minute of the last is the test's wall time.
func TestSubscriptionsOutbound(t *testing.T) {
	c := framework.Connect(t)
	t.Run("refused callbacks", func(t *testing.T) {
		t.Parallel()
		testRefusedCallbacks(t, c)
	})
	t.Run("credentials of another", func(t *testing.T) {
		t.Parallel()
		testCredentialsOfAnother(t, c)
	})
	t.Run("backoff", func(t *testing.T) {
		t.Parallel()
		testBackoffOfAFailingEndpoint(t, c)
	})
}

func testRefusedCallbacks(t *testing.T, c *framework.Cluster) {
	g := NewWithT(t)
	ns := c.Namespace(t, "e2e-outbound")
	nodes := &corev1.NodeList{}
	g.Expect(suite.client.List(context.Background(), nodes)).To(Succeed())
	g.Expect(nodes.Items).NotTo(BeEmpty())
	var nodeIP string
	for _, a := range nodes.Items[0].Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			nodeIP = a.Address
		}
	}
	// Listeners with counters on the node's address and this host's own (the operator
	// runs on the node): nothing may reach them.
	onNode := newCounter(t, nodeIP, http.StatusNoContent)
	hostIP := hostAddress(t)
	onHost := newCounter(t, hostIP, http.StatusNoContent)
	callbacks := map[string]struct{ url, refusedAs string }{
		// 127.0.0.1 is loopback, the node's address on the test ground and one of the
		// operator's: the most specific of them names the refusal.
		"webhook":  {suite.webhook + "/hooks/alertmanager", ""},
		"etcd":     {"http://127.0.0.1:2379/v3/kv/put", ""},
		"node":     {onNode.server.URL + "/", ""},
		"host":     {onHost.server.URL + "/", "the operator's own address"},
		"metadata": {"http://169.254.169.254/latest/meta-data/iam/security-credentials/", "cloud metadata service"},
		"mapped":   {"http://[::ffff:169.254.169.254]/latest/meta-data/", "cloud metadata service"},
		// A name the resolver does not take: no connection either.
		"decimal": {"http://2130706433:2379/v3/kv/put", "-"},
	}
	subs := map[string]*v1alpha1.LifecycleSubscription{}
	for name, cb := range callbacks {
		subs[name] = createSubscription(t, suite.client, ns, name, cb.url, "")
	}
	notifyOnce(t, ns)
	for name, sub := range subs {
		g.Eventually(func(g Gomega) {
			ready, current := subscriptionReady(g, sub)
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			if callbacks[name].refusedAs == "-" {
				g.Expect(current.Status.Failures).To(BeNumerically(">", 0))
				return
			}
			g.Expect(ready.Reason).To(Equal(v1alpha1.SubscriptionCallbackRefused), ready.Message)
			g.Expect(ready.Message).To(ContainSubstring("refused by the outbound policy: " + callbacks[name].refusedAs))
		}, time.Minute, 250*time.Millisecond).Should(Succeed(), name)
	}
	g.Expect(onNode.count()).To(BeZero(), "requests reached the node's address")
	g.Expect(onHost.count()).To(BeZero(), "requests reached the host's address")
}

// hostAddress is an address of this host that is not loopback.
func hostAddress(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
			return ip.IP.String()
		}
	}
	t.Skip("no address besides loopback on this host")
	return ""
}

func testCredentialsOfAnother(t *testing.T, c *framework.Cluster) {
	g := NewWithT(t)
	ns := c.Namespace(t, "e2e-creds")
	ctx := context.Background()
	g.Expect(suite.client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nfvo-admin-creds"},
		StringData: map[string]string{"token": "admin-token-e2e"}})).To(Succeed())
	// A user who may manage subscriptions and read nothing else.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "subscriber"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"calaf.io"}, Resources: []string{"lifecyclesubscriptions"}, Verbs: []string{"get", "list", "create"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "subscriber"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "subscriber"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "mallory"}}}
	g.Expect(suite.client.Create(ctx, role)).To(Succeed())
	g.Expect(suite.client.Create(ctx, binding)).To(Succeed())
	config, err := framework.LoadConfig()
	g.Expect(err).NotTo(HaveOccurred())
	mallory := rest.CopyConfig(config)
	mallory.Impersonate = rest.ImpersonationConfig{UserName: "mallory"}
	asMallory, err := client.New(mallory, client.Options{Scheme: operator.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(asMallory.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nfvo-admin-creds"}, &corev1.Secret{})).NotTo(Succeed(), "mallory may not read the Secret")

	endpoint := newCounter(t, subscriberAddress, http.StatusNoContent)
	sub := createSubscription(t, asMallory, ns, "borrowed", endpoint.server.URL, "nfvo-admin-creds")
	notifyOnce(t, ns)
	g.Eventually(func(g Gomega) {
		ready, _ := subscriptionReady(g, sub)
		g.Expect(ready.Reason).To(Equal(v1alpha1.SubscriptionCredentialsRefused), ready.Message)
		g.Expect(ready.Message).To(ContainSubstring("not labelled calaf.io/use=lifecycle-subscriptions"))
	}, time.Minute, 250*time.Millisecond).Should(Succeed())
	g.Expect(endpoint.count()).To(BeZero(), "the endpoint got a notification without the credentials or with them")
}

func testBackoffOfAFailingEndpoint(t *testing.T, c *framework.Cluster) {
	g := NewWithT(t)
	ns := c.Namespace(t, "e2e-backoff")
	endpoint := newCounter(t, subscriberAddress, http.StatusInternalServerError)
	sub := createSubscription(t, suite.client, ns, "failing", endpoint.server.URL, "")
	notifyOnce(t, ns)
	g.Eventually(endpoint.count, time.Minute, 100*time.Millisecond).Should(BeNumerically(">", 0))
	// The operator's schedule (notifyBackoff): attempts at 0, 1, 3, 7, 15, 31 and 51 s.
	limit := notifyBackoff.AttemptsWithin(time.Minute)
	endpointSaw := func() int { return endpoint.within(time.Minute) }
	// A minute after the first attempt, by the endpoint's clock: marked by a request the
	// endpoint timestamps itself.
	g.Eventually(func() bool {
		endpoint.mu.Lock()
		defer endpoint.mu.Unlock()
		return time.Since(endpoint.times[0]) > time.Minute
	}, 2*time.Minute, time.Second).Should(BeTrue())
	got := endpointSaw()
	g.Expect(got).To(BeNumerically("<=", limit), fmt.Sprintf("%d attempts in the first minute, the backoff allows %d", got, limit))
	g.Expect(got).To(BeNumerically(">=", 2), "the endpoint was retried")
	// Every attempt is accounted for in the status: failures in a row, and when the next is.
	var current *v1alpha1.LifecycleSubscription
	g.Eventually(func(g Gomega) {
		_, current = subscriptionReady(g, sub)
		g.Expect(int(current.Status.Failures)).To(Equal(endpoint.count()))
	}, 20*time.Second, 250*time.Millisecond).Should(Succeed())
	g.Expect(current.Status.NextAttemptTime).NotTo(BeNil())
	g.Expect(current.Status.LastError).To(ContainSubstring("answered 500 Internal Server Error"))
	t.Logf("%d attempts in the first minute (at most %d); status: %s", got, limit, strings.TrimSpace(current.Status.LastError))
}
