package source_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

type ociRegistry struct {
	host      string
	manifests atomic.Int64 // GET of manifests
	blobs     atomic.Int64 // GET of blobs
	heads     atomic.Int64
	// tamper flips a byte of every blob served: what a corrupt mirror or a man in the
	// middle would serve.
	tamper atomic.Bool
}

// newRegistry serves go-containerregistry's registry over plain HTTP or TLS, with basic
// auth, counting what clients read.
func newRegistry(t *testing.T, tls bool) (*ociRegistry, []byte) {
	t.Helper()
	r := &ociRegistry{}
	backend := registry.New()
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if user, password, ok := req.BasicAuth(); !ok || user != "pusher" || password != "registry-password" {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return
		}
		switch {
		case req.Method == http.MethodHead && strings.Contains(req.URL.Path, "/manifests/"):
			r.heads.Add(1)
		case req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/manifests/"):
			r.manifests.Add(1)
		case req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/"):
			r.blobs.Add(1)
			if r.tamper.Load() {
				recorder := httptest.NewRecorder()
				backend.ServeHTTP(recorder, req)
				body := recorder.Body.Bytes()
				if len(body) > 0 {
					body[len(body)/2] ^= 0xff
				}
				for key, values := range recorder.Header() {
					w.Header()[key] = values
				}
				w.WriteHeader(recorder.Code)
				w.Write(body)
				return
			}
		}
		backend.ServeHTTP(w, req)
	})
	var server *httptest.Server
	var ca []byte
	if tls {
		server = httptest.NewTLSServer(handler)
		ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	} else {
		server = httptest.NewServer(handler)
	}
	t.Cleanup(server.Close)
	r.host = strings.TrimPrefix(strings.TrimPrefix(server.URL, "https://"), "http://")
	return r, ca
}

func dockerConfigSecret(name, host, user, password string, ca []byte) *corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	config, _ := json.Marshal(map[string]any{"auths": map[string]any{"https://" + host + "/v1/": map[string]string{"auth": auth}}})
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: config}}
	if ca != nil {
		s.Data["ca.crt"] = ca
	}
	return s
}

func ociService(url, tag, digest, secret string, insecure bool) *v1alpha1.Service {
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "demo"}}
	svc.Spec.Source.OCI = &v1alpha1.OCISource{URL: url, Tag: tag, Digest: digest, Insecure: insecure}
	if secret != "" {
		svc.Spec.Source.OCI.SecretRef = &v1alpha1.LocalObjectReference{Name: secret}
	}
	return svc
}

func push(t *testing.T, host, repo, tag string, files map[string]string, opts source.OCIOptions) string {
	t.Helper()
	csar := csarOf(t, files)
	pkg, err := tosca.OpenArchive(csar, "package.csar", tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer pkg.Close()
	ref, err := source.ParseOCIReference("oci://"+host+"/"+repo+":"+tag, opts.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := source.PushOCI(ref, csar, pkg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return digest.String()
}

type staticKeychain struct{ auth authn.Authenticator }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.auth, nil }

func basicKeychain() authn.Keychain {
	return staticKeychain{authn.FromConfig(authn.AuthConfig{Username: "pusher", Password: "registry-password"})}
}

// Push a package, then fetch it by tag (one HEAD per reconcile, the download only once)
// and by digest (no request once stored), over TLS with the CA and the credentials of a
// dockerconfigjson Secret.
func TestOCIPushAndFetchOverTLS(t *testing.T) {
	g := NewWithT(t)
	reg, ca := newRegistry(t, true)
	opts := source.OCIOptions{Keychain: basicKeychain(), CABundle: ca}
	digest := push(t, reg.host, "calaf/demo", "v1", map[string]string{"service.yaml": template("from a registry")}, opts)
	g.Expect(digest).To(HavePrefix("sha256:"))

	fetcher := &source.OCI{Store: newStore(t, 1<<30), Reader: secrets(
		dockerConfigSecret("registry", reg.host, "pusher", "registry-password", ca),
		dockerConfigSecret("wrong", reg.host, "pusher", "guess", ca),
	)}
	url := "oci://" + reg.host + "/calaf/demo"
	for i := 0; i < 3; i++ {
		artifact, err := fetcher.Fetch(context.Background(), ociService(url, "v1", "", "registry", false))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(artifact.Revision).To(Equal("v1@" + digest))
		g.Expect(readTemplate(g, artifact)).To(ContainSubstring("from a registry"))
	}
	g.Expect(reg.heads.Load()).To(BeEquivalentTo(3), "one HEAD per fetch")
	g.Expect(reg.blobs.Load()).To(BeEquivalentTo(1), "the package is downloaded once")

	heads, blobs := reg.heads.Load(), reg.blobs.Load()
	fresh := &source.OCI{Store: newStore(t, 1<<30), Reader: secrets(dockerConfigSecret("registry", reg.host, "pusher", "registry-password", ca))}
	for i := 0; i < 2; i++ {
		artifact, err := fresh.Fetch(context.Background(), ociService(url, "", digest, "registry", false))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(artifact.Revision).To(Equal(digest))
	}
	g.Expect(reg.heads.Load()).To(Equal(heads), "a digest needs no HEAD")
	g.Expect(reg.blobs.Load()).To(Equal(blobs + 1))

	// A new push to the tag is seen at the next fetch.
	newDigest := push(t, reg.host, "calaf/demo", "v1", map[string]string{"service.yaml": template("second push")}, opts)
	artifact, err := fetcher.Fetch(context.Background(), ociService(url, "v1", "", "registry", false))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(artifact.Revision).To(Equal("v1@" + newDigest))
	g.Expect(readTemplate(g, artifact)).To(ContainSubstring("second push"))

	// Wrong credentials, no credentials, a missing tag.
	for _, c := range []struct {
		svc    *v1alpha1.Service
		reason string
	}{
		{ociService(url, "v1", "", "wrong", false), v1alpha1.ReasonAuthenticationFailed},
		{ociService(url, "v9", "", "registry", false), v1alpha1.ReasonInvalidSource},
	} {
		_, err := fetcher.Fetch(context.Background(), c.svc)
		e := sourceError(err)
		g.Expect(e).NotTo(BeNil(), "%v", err)
		g.Expect(e.Reason).To(Equal(c.reason), "%v", err)
		g.Expect(e.Transient).To(BeFalse())
	}
}

// A plain-HTTP registry is used only when the source says insecure: true.
func TestOCIPlainHTTPOnlyWhenInsecure(t *testing.T) {
	g := NewWithT(t)
	reg, _ := newRegistry(t, false)
	digest := push(t, reg.host, "calaf/demo", "v1", map[string]string{"service.yaml": template("plain")}, source.OCIOptions{Insecure: true, Keychain: basicKeychain()})
	fetcher := &source.OCI{Store: newStore(t, 1<<30), Reader: secrets(dockerConfigSecret("registry", reg.host, "pusher", "registry-password", nil))}
	url := "oci://" + reg.host + "/calaf/demo"

	_, err := fetcher.Fetch(context.Background(), ociService(url, "v1", "", "registry", false))
	e := sourceError(err)
	g.Expect(e).NotTo(BeNil(), "%v", err)
	g.Expect(e.Reason).To(Equal(v1alpha1.ReasonInvalidSource))
	g.Expect(err.Error()).To(ContainSubstring("plain HTTP"))
	g.Expect(reg.heads.Load()).To(BeZero(), "no plain-HTTP request was sent")

	artifact, err := fetcher.Fetch(context.Background(), ociService(url, "v1", "", "registry", true))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(artifact.Revision).To(Equal("v1@" + digest))

	// Pushing over plain HTTP needs insecure too.
	csar := csarOf(t, map[string]string{"service.yaml": template("plain")})
	pkg, err := tosca.OpenArchive(csar, "p.csar", tosca.DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	defer pkg.Close()
	ref, err := source.ParseOCIReference("oci://"+reg.host+"/calaf/demo:v2", false)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = source.PushOCI(ref, csar, pkg, source.OCIOptions{Keychain: basicKeychain()})
	g.Expect(err).To(MatchError(ContainSubstring("plain HTTP")))
}

// Docker config keys name registries in several spellings.
func TestDockerConfigKeys(t *testing.T) {
	g := NewWithT(t)
	auth := base64.StdEncoding.EncodeToString([]byte("u:p"))
	config, err := source.ParseDockerConfig([]byte(`{"auths":{"https://Registry.Example:5000/v1/":{"auth":"`+auth+`"},"plain.example":{"username":"a","password":"b"}}}`), false)
	g.Expect(err).NotTo(HaveOccurred())
	for host, want := range map[string]string{"registry.example:5000": "u", "plain.example": "a", "other.example": ""} {
		ref, err := source.ParseOCIRepository("oci://"+host+"/repo", false)
		g.Expect(err).NotTo(HaveOccurred())
		authenticator, err := config.Resolve(ref)
		g.Expect(err).NotTo(HaveOccurred())
		cfg, err := authenticator.Authorization()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.Username).To(Equal(want), host)
	}
	_, err = source.ParseDockerConfig([]byte(`{"auths":{"x":{"auth":"not base64!"}}}`), false)
	g.Expect(err).To(HaveOccurred())
}

// A layer whose bytes do not match its digest (a corrupt mirror, a tampered transfer) is
// refused with IntegrityFailed and never stored: a later fetch of the intact layer works.
func TestOCILayerDigestMismatch(t *testing.T) {
	g := NewWithT(t)
	reg, _ := newRegistry(t, false)
	opts := source.OCIOptions{Insecure: true, Keychain: basicKeychain()}
	digest := push(t, reg.host, "calaf/demo", "v1", map[string]string{"service.yaml": template("intact")}, opts)
	fetcher := &source.OCI{Store: newStore(t, 1<<30), Reader: secrets(dockerConfigSecret("registry", reg.host, "pusher", "registry-password", nil))}
	svc := ociService("oci://"+reg.host+"/calaf/demo", "", digest, "registry", true)

	reg.tamper.Store(true)
	_, err := fetcher.Fetch(context.Background(), svc)
	e := sourceError(err)
	g.Expect(e).NotTo(BeNil(), "%v", err)
	g.Expect(e.Reason).To(Equal(v1alpha1.ReasonIntegrityFailed), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("digest"))

	reg.tamper.Store(false)
	artifact, err := fetcher.Fetch(context.Background(), svc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readTemplate(g, artifact)).To(ContainSubstring("intact"))
}
