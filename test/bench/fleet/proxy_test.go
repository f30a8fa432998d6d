package main

import (
	"net/http/httptest"
	"testing"
)

// The counting proxy names each request by verb, resource (with its subresource) and
// outcome, and the report puts it in its column.
func TestClassify(t *testing.T) {
	cases := []struct {
		method, url, contentType string
		code                     int
		key, column              string
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/app", "", 404, "GET configmaps 404", "GET 404"},
		{"GET", "/api/v1/namespaces/ns/secrets/app.calaf-state", "", 200, "GET secrets", "GET"},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments?watch=true&resourceVersion=5", "", 200, "WATCH deployments", "LIST+WATCH"},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments", "", 200, "LIST deployments", "LIST+WATCH"},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/app", "application/apply-patch+yaml", 201, "APPLY deployments", "apply"},
		{"PATCH", "/apis/calaf.io/v1alpha1/namespaces/ns/services/app/status", "application/merge-patch+json", 200, "PATCH services/status", "status patch"},
		{"PATCH", "/apis/calaf.io/v1alpha1/namespaces/ns/services/app", "application/merge-patch+json", 200, "PATCH services", "other patch"},
		{"POST", "/apis/events.k8s.io/v1/namespaces/ns/events", "application/json", 201, "POST events", "POST event"},
		{"POST", "/api/v1/namespaces/ns/secrets", "application/json", 201, "POST secrets", "other POST"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/calaf", "application/json", 200, "PUT leases", "PUT"},
		{"GET", "/apis/apps/v1", "", 200, "GET discovery", "discovery"},
		{"GET", "/api/v1/namespaces/ns", "", 200, "GET namespaces", "GET"},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.url, nil)
		if c.contentType != "" {
			r.Header.Set("Content-Type", c.contentType)
		}
		key := classify(r, c.code)
		if key != c.key || column(key) != c.column {
			t.Errorf("%s %s: %q in column %q, want %q in %q", c.method, c.url, key, column(key), c.key, c.column)
		}
	}
	if got := perColumn(map[string]int64{"APPLY deployments": 10, "APPLY services": 10, "PATCH services/status": 5}, 10); got["apply"] != 2 || writes(got) != 2.5 {
		t.Errorf("per column %v, writes %v", got, writes(got))
	}
}
