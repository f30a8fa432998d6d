package nfvapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
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
	if string(secret.Data["password"]) != "s3cr3t-pw" || secret.Labels[nfvapi.SubscriptionSecretLabel] != nfvapi.SubscriptionSecretUse ||
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
