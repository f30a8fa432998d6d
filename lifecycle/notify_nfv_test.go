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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
)

// rawEndpoint records every notification as it came (JSON objects).
type rawEndpoint struct {
	mu       sync.Mutex
	received []map[string]any
	server   *httptest.Server
}

func newRawEndpoint(t *testing.T) *rawEndpoint {
	e := &rawEndpoint{}
	e.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var n map[string]any
		if json.Unmarshal(data, &n) != nil {
			http.Error(w, "bad notification", http.StatusBadRequest)
			return
		}
		e.mu.Lock()
		e.received = append(e.received, n)
		e.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(e.server.Close)
	return e
}

// summary is "type state instance" for each notification, in order.
func (e *rawEndpoint) summary() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, n := range e.received {
		s := n["notificationType"].(string)
		if state, ok := n["operationState"]; ok {
			s += " " + state.(string)
		}
		out = append(out, s+" "+n["vnfInstanceId"].(string))
	}
	return out
}

func (e *rawEndpoint) all() []map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]map[string]any(nil), e.received...)
}

// A subscription made through the NFV API (spec.apiRoot) is told, in order, that a Service
// was made, every state of its occurrences and that it was deleted — with the NFV API's
// ids and links; the deleted Service waits for that delivery (calaf.io/vnf-identifier) and
// then goes. A subscription that asks for the deletions of another instance name gets that
// one's alone.
func TestNFVSubscriptionIdentifiersAndOccurrences(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	e := newRawEndpoint(t)
	other := newRawEndpoint(t)
	root := "https://vnfm.example:9443"
	sub := &v1alpha1.LifecycleSubscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nfvo"},
		Spec: v1alpha1.LifecycleSubscriptionSpec{CallbackURI: e.server.URL, APIRoot: root}}
	g.Expect(env.client.Create(context.Background(), sub)).To(Succeed())
	elsewhere := &v1alpha1.LifecycleSubscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "elsewhere"},
		Spec: v1alpha1.LifecycleSubscriptionSpec{CallbackURI: other.server.URL, APIRoot: root,
			NotificationTypes: []v1alpha1.NotificationType{v1alpha1.NotificationDeletion},
			Filter:            &v1alpha1.SubscriptionFilter{VnfInstanceNames: []string{"edge-1"}}}}
	g.Expect(env.client.Create(context.Background(), elsewhere)).To(Succeed())
	deploy(t, ns, "core", configTemplate("1", ""), func(svc *v1alpha1.Service) {
		svc.Finalizers = []string{v1alpha1.FinalizerVnfIdentifier}
		svc.Annotations = map[string]string{v1alpha1.AnnotationVnfInstanceName: "core-1"}
	})
	op := occurrence(t, ns, "core", modifyOp("two"))
	waitState(t, op, v1alpha1.StateCompleted, time.Minute)
	svc := &v1alpha1.Service{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "core"}, svc)).To(Succeed())
	g.Expect(env.client.Delete(context.Background(), svc)).To(Succeed())

	g.Eventually(e.summary, time.Minute).Should(Equal([]string{
		"VnfIdentifierCreationNotification core",
		"VnfLcmOperationOccurrenceNotification STARTING core",
		"VnfLcmOperationOccurrenceNotification PROCESSING core",
		"VnfLcmOperationOccurrenceNotification COMPLETED core",
		"VnfIdentifierDeletionNotification core",
	}))
	g.Eventually(func() bool {
		return env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "core"}, &v1alpha1.Service{}) != nil
	}, time.Minute).Should(BeTrue(), "the Service did not go after its deletion was delivered")

	all := e.all()
	completed := all[3]
	g.Expect(completed["vnfLcmOpOccId"]).To(Equal(op.Name))
	g.Expect(completed["subscriptionId"]).To(Equal("nfvo"))
	links := completed["_links"].(map[string]any)
	g.Expect(links["vnfInstance"].(map[string]any)["href"]).To(Equal(root + "/vnflcm/v2/vnf_instances/core"))
	g.Expect(links["vnfLcmOpOcc"].(map[string]any)["href"]).To(Equal(root + "/vnflcm/v2/vnf_lcm_op_occs/" + op.Name))
	g.Expect(links["subscription"].(map[string]any)["href"]).To(Equal(root + "/vnflcm/v2/subscriptions/nfvo"))
	g.Expect(all[0]["_links"].(map[string]any)).NotTo(HaveKey("vnfLcmOpOcc"))
	g.Expect(all[4]["id"]).To(HaveSuffix("-deleted"))

	// The other subscription asks for the deletions of edge-1 alone: deleted after core, its
	// deletion is the first and only one it gets (core's, earlier, would have come first).
	deploy(t, ns, "edge", configTemplate("1", ""), func(svc *v1alpha1.Service) {
		svc.Annotations = map[string]string{v1alpha1.AnnotationVnfInstanceName: "edge-1"}
	})
	edge := &v1alpha1.Service{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "edge"}, edge)).To(Succeed())
	g.Expect(env.client.Delete(context.Background(), edge)).To(Succeed())
	g.Eventually(other.summary, time.Minute).Should(Equal([]string{"VnfIdentifierDeletionNotification edge"}))
}

// A deleted Service that holds calaf.io/vnf-identifier without any subscription asking for
// deletions goes at once.
func TestIdentifierFinalizerWithoutSubscribers(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	deploy(t, ns, "lone", configTemplate("1", ""), func(svc *v1alpha1.Service) {
		svc.Finalizers = []string{v1alpha1.FinalizerVnfIdentifier}
	})
	svc := &v1alpha1.Service{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "lone"}, svc)).To(Succeed())
	g.Expect(controllerutil.ContainsFinalizer(svc, v1alpha1.FinalizerVnfIdentifier)).To(BeTrue())
	g.Expect(env.client.Delete(context.Background(), svc)).To(Succeed())
	g.Eventually(func() bool {
		return env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "lone"}, &v1alpha1.Service{}) != nil
	}, time.Minute).Should(BeTrue())
}
