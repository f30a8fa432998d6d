package nfvapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/outbound"
	"calaf.io/calaf/nfvapi"
)

// TestSubscriptionsOverREST: a subscription is a LifecycleSubscription; its credentials
// go to a Secret it owns, marked for that use, and are never shown.
func TestSubscriptionsOverREST(t *testing.T) {
	tn := newTenant(t, "nfvo-subs", "nfvo", nil)
	req := map[string]any{
		"callbackUri": "https://nfvo.example/notify",
		"filter": map[string]any{
			"vnfInstanceSubscriptionFilter": map[string]any{"vnfdIds": []string{"d1"}, "vnfInstanceIds": []string{"i1"}},
			"notificationTypes":             []string{"VnfLcmOperationOccurrenceNotification", "VnfIdentifierDeletionNotification"},
			"operationTypes":                []string{"SCALE", "CHANGE_VNFPKG"}, "operationStates": []string{"COMPLETED"},
		},
		"authentication": map[string]any{"authType": []string{"BASIC"}, "paramsBasic": map[string]any{"userName": "nfvo", "password": "s3cr3t-pw"}},
	}
	created := call(t, &tn, "POST", "/vnflcm/v2/subscriptions", req).expect(t, http.StatusCreated)
	if strings.Contains(string(created.body), "s3cr3t-pw") {
		t.Errorf("the answer shows the password: %s", created.body)
	}
	var sub nfvapi.LccnSubscription
	created.decode(t, &sub)
	path := location(t, created)
	ls := &v1alpha1.LifecycleSubscription{}
	must(t, env.admin.Get(context.Background(), client.ObjectKey{Namespace: tn.namespace, Name: sub.ID}, ls))
	f := ls.Spec.Filter
	if f == nil || f.OperationTypes[1] != v1alpha1.OperationChangePackage || f.ServiceNames[0] != "i1" || f.VnfdIDs[0] != "d1" ||
		len(ls.Spec.NotificationTypes) != 2 || ls.Spec.Authentication.Type != v1alpha1.AuthBasic || ls.Spec.APIRoot != env.server.URL {
		t.Errorf("the LifecycleSubscription: %+v", ls.Spec)
	}
	secret := &corev1.Secret{}
	must(t, env.admin.Get(context.Background(), client.ObjectKey{Namespace: tn.namespace, Name: ls.Spec.SecretRef.Name}, secret))
	if string(secret.Data["password"]) != "s3cr3t-pw" || secret.Labels[v1alpha1.LabelSecretUse] != v1alpha1.SecretUseSubscriptions ||
		len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].UID != ls.UID {
		t.Errorf("the credentials Secret: %+v", secret.ObjectMeta)
	}
	var shown nfvapi.LccnSubscription
	call(t, &tn, "GET", path, nil).expect(t, 200).decode(t, &shown)
	if shown.Filter == nil || shown.Filter.OperationTypes[1] != "CHANGE_VNFPKG" || shown.Verbosity != "FULL" {
		t.Errorf("shown: %+v", shown)
	}
	var list []nfvapi.LccnSubscription
	call(t, &tn, "GET", "/vnflcm/v2/subscriptions", nil).expect(t, 200).decode(t, &list)
	if len(list) != 1 {
		t.Errorf("%d subscriptions listed", len(list))
	}
	call(t, &tn, "DELETE", path, nil).expect(t, http.StatusNoContent)
	call(t, &tn, "GET", path, nil).expect(t, http.StatusNotFound)

	call(t, &tn, "POST", "/vnflcm/v2/subscriptions", map[string]any{}).expect(t, http.StatusBadRequest, "callbackUri")
	call(t, &tn, "POST", "/vnflcm/v2/subscriptions", map[string]any{"callbackUri": "https://x", "filter": map[string]any{"operationTypes": []string{"CHANGE_EXT_CONN"}}}).expect(t, http.StatusUnprocessableEntity, "never occurs")
	call(t, &tn, "POST", "/vnflcm/v2/subscriptions", map[string]any{"callbackUri": "https://x", "filter": map[string]any{"operationStates": []string{"DONE"}}}).expect(t, http.StatusBadRequest, "DONE")
	call(t, &tn, "POST", "/vnflcm/v2/subscriptions", map[string]any{"callbackUri": "https://x", "authentication": map[string]any{"authType": []string{"TLS_CERT"}}}).expect(t, http.StatusUnprocessableEntity, "TLS_CERT")
}

// TestCallbackTestedFirst: a subscription is made only once its callback answered the
// test GET with 204, with the subscription's credentials, at an address the outbound
// policy allows.
func TestCallbackTestedFirst(t *testing.T) {
	tn := newTenant(t, "nfvo-callback", "nfvo", nil)
	var gets []string
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, _ := r.BasicAuth()
		gets = append(gets, r.Method+" "+r.URL.Path+" "+user)
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusNoContent)
		case "/redirect":
			http.Redirect(w, r, "/ok", http.StatusFound)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer endpoint.Close()
	allowing := serverWith(t, nfvapi.Config{Callbacks: nfvapi.OutboundCallbacks{Client: outbound.New(outbound.Options{
		Policy: outbound.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})}})
	refusing := serverWith(t, nfvapi.Config{Callbacks: nfvapi.OutboundCallbacks{Client: outbound.New(outbound.Options{})}})

	basic := map[string]any{"authType": []string{"BASIC"}, "paramsBasic": map[string]any{"userName": "nfvo", "password": "pw"}}
	callAt(t, allowing, &tn, "POST", "/vnflcm/v2/subscriptions", map[string]any{"callbackUri": endpoint.URL + "/ok", "authentication": basic}).expect(t, http.StatusCreated)
	callAt(t, allowing, &tn, "POST", "/vnflcm/v2/subscriptions", map[string]any{"callbackUri": endpoint.URL + "/200"}).expect(t, http.StatusBadRequest, "must answer 204", "200 OK")
	callAt(t, allowing, &tn, "POST", "/vnflcm/v2/subscriptions", map[string]any{"callbackUri": endpoint.URL + "/redirect"}).expect(t, http.StatusBadRequest, "redirect")
	callAt(t, refusing, &tn, "POST", "/vnflcm/v2/subscriptions", map[string]any{"callbackUri": endpoint.URL + "/ok"}).expect(t, http.StatusBadRequest, "loopback")
	if len(gets) != 3 || gets[0] != "GET /ok nfvo" {
		t.Errorf("the endpoint saw %q; want the three tests the policy allowed, the first with the credentials", gets)
	}
	list := &v1alpha1.LifecycleSubscriptionList{}
	must(t, env.admin.List(context.Background(), list, client.InNamespace(tn.namespace)))
	if len(list.Items) != 1 {
		t.Errorf("%d subscriptions made; only the tested one should be", len(list.Items))
	}
}
