package contract

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestValidatorCatchesBreaches: the contract check fails answers that break the document
// (so a run that passes it says something).
func TestValidatorCatchesBreaches(t *testing.T) {
	v, err := New()
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("/vnflcm/v2/vnf_instances/x")
	h := http.Header{"Version": {"2.0.0"}}
	json := http.Header{"Content-Type": {"application/json"}}
	good := `{"id":"x","vnfdId":"d","vnfProvider":"p","vnfProductName":"n","vnfSoftwareVersion":"1","vnfdVersion":"1","instantiationState":"NOT_INSTANTIATED","_links":{"self":{"href":"http://h/x"}}}`
	if err := v.Response("GET", u, h, 200, json, []byte(good)); err != nil {
		t.Errorf("a conforming instance was refused: %v", err)
	}
	breaches := map[string]string{
		"a mandatory attribute missing": strings.Replace(good, `"vnfProvider":"p",`, "", 1),
		"a state out of its enum":       strings.Replace(good, "NOT_INSTANTIATED", "RUNNING", 1),
		"a link without href":           strings.Replace(good, `{"href":"http://h/x"}`, `{}`, 1),
	}
	for name, body := range breaches {
		if err := v.Response("GET", u, h, 200, json, []byte(body)); err == nil {
			t.Errorf("%s passed", name)
		}
	}
	problem := http.Header{"Content-Type": {"application/problem+json"}}
	if err := v.Response("GET", u, h, 404, problem, []byte(`{"status":404}`)); err == nil {
		t.Error("a ProblemDetails without detail passed")
	}
	if err := v.Notification("VnfIdentifierCreationNotification", []byte(`{"id":"1","notificationType":"VnfIdentifierCreationNotification","subscriptionId":"s","timeStamp":"2026-11-27T12:00:00Z","vnfInstanceId":"x"}`)); err == nil {
		t.Error("a notification without _links passed")
	}
}
