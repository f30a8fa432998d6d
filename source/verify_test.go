package source_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
	"calaf.io/calaf/tosca/sol004/sol004test"
)

// signedFiles is a package whose manifest is signed by creds (SOL004 option 1).
func signedFiles(t *testing.T, greeting string, creds *sol004.Credentials) map[string]string {
	t.Helper()
	entry := template(greeting)
	sum := sha256.Sum256([]byte(entry))
	manifest, err := sol004.SignManifest([]byte("Source: service.yaml\nAlgorithm: SHA-256\nHash: "+hex.EncodeToString(sum[:])+"\n"), creds)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"service.yaml": entry, "service.mf": string(manifest)}
}

func newPKI(t *testing.T, name string) *sol004test.PKI {
	t.Helper()
	p, err := sol004test.New(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func anchorsConfigMap(name string, p *sol004test.PKI) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name}, Data: map[string]string{"ca.crt": string(p.RootPEM())}}
}

func enforce(svc *v1alpha1.Service, anchors string) *v1alpha1.Service {
	svc.Spec.Verify = &v1alpha1.VerifySpec{Mode: v1alpha1.VerifyEnforce, Anchors: &v1alpha1.AnchorsReference{Kind: "ConfigMap", Name: anchors}}
	return svc
}

// Every source — upload, HTTP(S), git, OCI — passes the same policy in the fetcher: a
// signed package verifies and records its signer; an unsigned one is IntegrityFailed,
// naming the revision, and the Service gets no package.
func TestVerificationPolicyForEverySource(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := newPKI(t, "Sources")
	signed, unsigned := csarOf(t, signedFiles(t, "signed", p.Signer)), csarOf(t, map[string]string{"service.yaml": template("unsigned")})
	wrapped, err := sol004.WrapCSAR("demo", unsigned, p.Signer)
	g.Expect(err).NotTo(HaveOccurred())

	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(map[string][]byte{"/signed.csar": signed, "/unsigned.csar": unsigned, "/wrapped.zip": wrapped}[r.URL.Path])
	}))
	defer server.Close()
	gitServer, repo := newGit(t)
	files := prefixed("deploy/", signedFiles(t, "signed", p.Signer))
	files["plain/service.yaml"] = template("unsigned")
	commit := mustCommit(t, repo, "signed and unsigned", files)
	reg, _ := newRegistry(t, false)
	push(t, reg.host, "calaf/demo", "signed", signedFiles(t, "signed", p.Signer), source.OCIOptions{Insecure: true, Keychain: basicKeychain()})
	push(t, reg.host, "calaf/demo", "unsigned", map[string]string{"service.yaml": template("unsigned")}, source.OCIOptions{Insecure: true, Keychain: basicKeychain()})
	pushWrapped(t, "oci://"+reg.host+"/calaf/demo:wrapped", wrapped)
	upload := func(name string, archive []byte) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name}, BinaryData: map[string][]byte{source.UploadKey: archive}}
	}
	reader := secrets(anchorsConfigMap("anchors", p), basicAuthSecret("git", gitUser, gitPassword),
		dockerConfigSecret("registry", reg.host, "pusher", "registry-password", nil), upload("signed", signed), upload("unsigned", unsigned))
	store := newStore(t, 1<<30)
	fetcher := &source.Fetcher{Store: store, Reader: reader, Git: &source.Git{Store: store, Reader: reader}, OCI: &source.OCI{Store: store, Reader: reader}}
	uploadService := func(name string, archive []byte) *v1alpha1.Service {
		svc := urlService("", "", "")
		svc.Spec.Source = v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: name, SHA256: source.SHA256(archive)}}
		return svc
	}

	cases := []struct {
		name     string
		svc      *v1alpha1.Service
		method   string
		revision string // of an unsigned package, named in the refusal
	}{
		{name: "upload", svc: uploadService("signed", signed), method: "SignedManifest"},
		{name: "upload, unsigned", svc: uploadService("unsigned", unsigned), revision: "sha256:" + source.SHA256(unsigned)},
		{name: "HTTP", svc: urlService(server.URL+"/signed.csar", "", ""), method: "SignedManifest"},
		{name: "HTTP, option 2", svc: urlService(server.URL+"/wrapped.zip", "", ""), method: "SignedCSAR"},
		{name: "HTTP, unsigned", svc: urlService(server.URL+"/unsigned.csar", "", ""), revision: "sha256:" + source.SHA256(unsigned)},
		{name: "git", svc: gitService(gitServer.RepoURL(repo.Name), nil, "deploy", "git"), method: "SignedManifest"},
		{name: "git, unsigned", svc: gitService(gitServer.RepoURL(repo.Name), nil, "plain", "git"), revision: "main@sha1:" + commit},
		{name: "OCI", svc: ociService("oci://"+reg.host+"/calaf/demo", "signed", "", "registry", true), method: "SignedManifest"},
		{name: "OCI, option 2", svc: ociService("oci://"+reg.host+"/calaf/demo", "wrapped", "", "registry", true), method: "SignedCSAR"},
		{name: "OCI, unsigned", svc: ociService("oci://"+reg.host+"/calaf/demo", "unsigned", "", "registry", true), revision: "unsigned@sha256:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			artifact, err := fetcher.Fetch(ctx, enforce(c.svc, "anchors"))
			if c.revision != "" {
				g.Expect(err).To(HaveOccurred())
				g.Expect(sourceError(err).Reason).To(Equal(v1alpha1.ReasonIntegrityFailed))
				g.Expect(sourceError(err).Transient).To(BeFalse())
				g.Expect(err.Error()).To(ContainSubstring("revision " + c.revision))
				g.Expect(err.Error()).To(ContainSubstring("the package is not signed"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(artifact.Verification).To(HaveField("Verified", true))
			g.Expect(artifact.Verification.Method).To(Equal(c.method))
			g.Expect(artifact.Signer.Subject).To(Equal("CN=Sources Signer"))
			g.Expect(artifact.Signer.Anchor).To(Equal("CN=Sources Root CA"))
		})
	}
}

// pushWrapped pushes an option 2 zip as the layer, as calaf package push does.
func pushWrapped(t *testing.T, reference string, wrapped []byte) {
	t.Helper()
	envelope, err := sol004.Unwrap(wrapped, tosca.DefaultLimits())
	if err != nil || envelope == nil {
		t.Fatalf("not an option 2 zip: %v", err)
	}
	pkg, err := tosca.OpenArchive(envelope.CSAR, "inner.csar", tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer pkg.Close()
	ref, err := source.ParseOCIReference(reference, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := source.PushOCI(ref, wrapped, pkg, source.OCIOptions{Insecure: true, Keychain: basicKeychain()}); err != nil {
		t.Fatal(err)
	}
}

func prefixed(prefix string, files map[string]string) map[string]string {
	out := map[string]string{}
	for name, content := range files {
		out[prefix+name] = content
	}
	return out
}

// The operator's policy applies to Services that set none; a Service can make the mode
// stricter but never weaker; with service anchors ignored, only the operator's count.
func TestOperatorVerificationDefaults(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	operatorPKI, tenantPKI := newPKI(t, "Operator"), newPKI(t, "Tenant")
	byOperator := csarOf(t, signedFiles(t, "operator", operatorPKI.Signer))
	byTenant := csarOf(t, signedFiles(t, "tenant", tenantPKI.Signer))
	unsigned := csarOf(t, map[string]string{"service.yaml": template("unsigned")})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(map[string][]byte{"/operator.csar": byOperator, "/tenant.csar": byTenant, "/unsigned.csar": unsigned}[r.URL.Path])
	}))
	defer server.Close()
	fetcher := func(defaults source.VerifyDefaults) *source.Fetcher {
		return &source.Fetcher{Store: newStore(t, 1<<30), Reader: secrets(anchorsConfigMap("tenant-anchors", tenantPKI)), Verify: defaults}
	}
	enforcing := source.VerifyDefaults{Mode: sol004.Enforce, Anchors: []*x509.Certificate{operatorPKI.Root}, AnchorsFrom: "the operator's anchors"}

	_, err := fetcher(enforcing).Fetch(ctx, urlService(server.URL+"/unsigned.csar", "", ""))
	g.Expect(err).To(MatchError(ContainSubstring("the package is not signed")), "a Service without spec.verify")
	artifact, err := fetcher(enforcing).Fetch(ctx, urlService(server.URL+"/operator.csar", "", ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(artifact.Verification.Mode).To(Equal("Enforce"))

	warn := urlService(server.URL+"/unsigned.csar", "", "")
	warn.Spec.Verify = &v1alpha1.VerifySpec{Mode: v1alpha1.VerifyWarn}
	_, err = fetcher(enforcing).Fetch(ctx, warn)
	g.Expect(err).To(MatchError(ContainSubstring("the package is not signed")), "Warn weakened the operator's Enforce")
	artifact, err = fetcher(source.VerifyDefaults{}).Fetch(ctx, warn)
	g.Expect(err).NotTo(HaveOccurred(), "Warn deploys")
	g.Expect(artifact.Verification).To(HaveField("Verified", false))
	g.Expect(artifact.Verification.Message).To(ContainSubstring("NOT verified (Warn mode): the package is not signed"))

	tenant := enforce(urlService(server.URL+"/tenant.csar", "", ""), "tenant-anchors")
	artifact, err = fetcher(enforcing).Fetch(ctx, tenant)
	g.Expect(err).NotTo(HaveOccurred(), "the Service's anchors add to the operator's")
	g.Expect(artifact.Signer.Anchor).To(Equal("CN=Tenant Root CA"))
	ignoring := enforcing
	ignoring.IgnoreServiceAnchors = true
	_, err = fetcher(ignoring).Fetch(ctx, tenant)
	g.Expect(err).To(MatchError(ContainSubstring(`which is neither in the package nor a trust anchor (trusted: "CN=Operator Root CA" from the operator's anchors)`)))

	// Anchors that cannot be read are a misconfiguration of the Service, said as such.
	missingKey := enforce(urlService(server.URL+"/tenant.csar", "", ""), "tenant-anchors")
	missingKey.Spec.Verify.Anchors.Key = "bundle.pem"
	_, err = fetcher(source.VerifyDefaults{}).Fetch(ctx, missingKey)
	g.Expect(sourceError(err).Reason).To(Equal(v1alpha1.ReasonInvalidSource))
	g.Expect(err).To(MatchError(ContainSubstring(`trust anchors: ConfigMap "tenant-anchors" has no key "bundle.pem"`)))
	_, err = fetcher(source.VerifyDefaults{}).Fetch(ctx, enforce(urlService(server.URL+"/tenant.csar", "", ""), "absent"))
	g.Expect(sourceError(err).Transient).To(BeTrue())
}
