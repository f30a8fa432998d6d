package source_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// csarOf packs files into a CSAR.
func csarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := writeFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer pkg.Close()
	data, err := source.PackCSAR(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func urlService(url, sha256, secret string) *v1alpha1.Service {
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "demo"}}
	svc.Spec.Source = v1alpha1.Source{URL: url, SHA256: sha256}
	if secret != "" {
		svc.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: secret}
	}
	return svc
}

// A real HTTPS server whose certificate only the CA in the source Secret vouches for, and
// that wants basic auth.
func TestHTTPSWithCAAndBasicAuthFromSecret(t *testing.T) {
	g := NewWithT(t)
	csar := csarOf(t, map[string]string{"service.yaml": template("over https")})
	var requests atomic.Int64
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if user, password, ok := r.BasicAuth(); !ok || user != "vendor" || password != "catalog-password" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Write(csar)
	}))
	defer server.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	secret := func(name, password string, withCA bool) *corev1.Secret {
		s := basicAuthSecret(name, "vendor", password)
		if withCA {
			s.Data["ca.crt"] = ca
		}
		return s
	}
	fetcher := &source.Fetcher{Store: newStore(t, 1<<30), Reader: secrets(secret("good", "catalog-password", true), secret("wrong", "guess", true), secret("no-ca", "catalog-password", false))}
	url := server.URL + "/packages/demo.csar"

	artifact, err := fetcher.Fetch(context.Background(), urlService(url, source.SHA256(csar), "good"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(artifact.Revision).To(Equal("sha256:" + source.SHA256(csar)))
	g.Expect(readTemplate(g, artifact)).To(ContainSubstring("over https"))

	// A known digest is never downloaded again.
	before := requests.Load()
	_, err = fetcher.Fetch(context.Background(), urlService(url, source.SHA256(csar), "good"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(requests.Load()).To(Equal(before))

	// Wrong password: refused, permanently.
	_, err = fetcher.Fetch(context.Background(), urlService(url, "", "wrong"))
	g.Expect(sourceError(err)).NotTo(BeNil())
	g.Expect(sourceError(err).Reason).To(Equal(v1alpha1.ReasonAuthenticationFailed))
	g.Expect(sourceError(err).Transient).To(BeFalse())

	// Without the CA the certificate is not trusted: the source must change (InvalidSource,
	// as docs/sources.md says), not retried as a network failure.
	_, err = fetcher.Fetch(context.Background(), urlService(url, "", "no-ca"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("certificate"))
	g.Expect(sourceError(err).Reason).To(Equal(v1alpha1.ReasonInvalidSource))
	g.Expect(sourceError(err).Transient).To(BeFalse())

	// A wrong sha256 is an integrity failure.
	_, err = fetcher.Fetch(context.Background(), urlService(url, strings.Repeat("0", 64), "good"))
	g.Expect(sourceError(err).Reason).To(Equal(v1alpha1.ReasonIntegrityFailed))
}

// A CSAR whose SOL004 manifest does not match its files is refused, whatever the source,
// and never stored.
func TestTamperedCSARIsRefused(t *testing.T) {
	g := NewWithT(t)
	original := template("original")
	manifest := "Source: service.yaml\nAlgorithm: SHA-256\nHash: " + source.SHA256([]byte(original)) + "\n"
	good := csarOf(t, map[string]string{"service.yaml": original, "service.mf": manifest})
	tampered := csarOf(t, map[string]string{"service.yaml": template("tampered"), "service.mf": manifest})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "tampered") {
			w.Write(tampered)
			return
		}
		w.Write(good)
	}))
	defer server.Close()
	store := newStore(t, 1<<30)
	fetcher := &source.Fetcher{Store: store, Reader: secrets()}

	_, err := fetcher.Fetch(context.Background(), urlService(server.URL+"/good.csar", "", ""))
	g.Expect(err).NotTo(HaveOccurred())

	_, err = fetcher.Fetch(context.Background(), urlService(server.URL+"/tampered.csar", "", ""))
	e := sourceError(err)
	g.Expect(e).NotTo(BeNil())
	g.Expect(e.Reason).To(Equal(v1alpha1.ReasonIntegrityFailed))
	g.Expect(e.Transient).To(BeFalse())
	g.Expect(err.Error()).To(ContainSubstring("service.mf:1: service.yaml: SHA-256 mismatch"))
	count, _ := store.Len()
	g.Expect(count).To(Equal(1), "the tampered package is not stored")
}
