package onboarding_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/nfvapi"
	"calaf.io/calaf/test/vnfpackages"
)

// nfvAPI serves the NFV interfaces for one namespace (unauthenticated: this suite is about
// what the operator does with what they write), until the test ends.
func nfvAPI(t *testing.T, namespace string) *httptest.Server {
	t.Helper()
	g := NewWithT(t)
	httpClient, err := rest.HTTPClientFor(env.config)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(env.config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	server, err := nfvapi.New(nfvapi.Config{InsecureNoAuth: true, Namespace: namespace}, env.config, operator.NewScheme(), mapper)
	g.Expect(err).NotTo(HaveOccurred())
	s := httptest.NewServer(server)
	t.Cleanup(s.Close)
	return s
}

// send makes one request and returns the status and body.
func send(t *testing.T, method, url string, body []byte, contentType string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// A package created and uploaded through the VNF package management interface is
// onboarded by the operator: ONBOARDED with its VNFD's identity; a Service naming it
// makes it IN_USE, and then it cannot be deleted (409) until no Service names it.
func TestOnboardingThroughREST(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	api := nfvAPI(t, ns)
	status, body := send(t, "POST", api.URL+"/vnfpkgm/v1/vnf_packages", []byte(`{"userDefinedData": {"owner": "core"}}`), "application/json")
	g.Expect(status).To(Equal(http.StatusCreated), "%s", body)
	var info nfvapi.VnfPkgInfo
	g.Expect(json.Unmarshal(body, &info)).To(Succeed())
	path := api.URL + "/vnfpkgm/v1/vnf_packages/" + info.ID
	archive := csar(t, "cnf-manifests", vnfpackages.Options{Manifest: "hello.mf"})
	status, body = send(t, "PUT", path+"/package_content", archive, "application/zip")
	g.Expect(status).To(Equal(http.StatusAccepted), "%s", body)

	g.Eventually(func(g Gomega) {
		status, body := send(t, "GET", path, nil, "")
		g.Expect(status).To(Equal(http.StatusOK))
		info = nfvapi.VnfPkgInfo{}
		g.Expect(json.Unmarshal(body, &info)).To(Succeed())
		g.Expect(info.OnboardingState).To(Equal("ONBOARDED"), "%s", body)
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(info.VnfdID).To(Equal(vnfpackages.HelloVnfdID))
	g.Expect(info.OperationalState).To(Equal("ENABLED"))
	g.Expect(info.Checksum.Hash).To(Equal(sha256Hex(archive)))

	svc := &v1alpha1.Service{}
	svc.Namespace, svc.Name = ns, "user"
	svc.Spec.Source.VnfPackage = &v1alpha1.VnfPackageSource{VnfdID: vnfpackages.HelloVnfdID}
	svc.Spec.InstantiationState = v1alpha1.NotInstantiated
	g.Expect(env.client.Create(context.Background(), svc)).To(Succeed())
	g.Eventually(func() string {
		_, body := send(t, "GET", path, nil, "")
		info = nfvapi.VnfPkgInfo{}
		_ = json.Unmarshal(body, &info)
		return info.UsageState
	}, 60*time.Second, 200*time.Millisecond).Should(Equal("IN_USE"))
	status, _ = send(t, "PATCH", path, []byte(`{"operationalState": "DISABLED"}`), "application/json")
	g.Expect(status).To(Equal(http.StatusOK))
	status, body = send(t, "DELETE", path, nil, "")
	g.Expect(status).To(Equal(http.StatusConflict), "%s", body)
	g.Expect(string(body)).To(ContainSubstring("IN_USE"))

	g.Expect(env.client.Delete(context.Background(), svc)).To(Succeed())
	g.Eventually(func() int {
		status, _ := send(t, "DELETE", path, nil, "")
		return status
	}, 60*time.Second, 200*time.Millisecond).Should(Equal(http.StatusNoContent))
	g.Eventually(func() int {
		status, _ := send(t, "GET", path, nil, "")
		return status
	}, 30*time.Second, 200*time.Millisecond).Should(Equal(http.StatusNotFound))
}
