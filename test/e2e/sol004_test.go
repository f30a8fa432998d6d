//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
	"calaf.io/calaf/test/gitserver"
	"calaf.io/calaf/tosca/sol004"
	"calaf.io/calaf/tosca/sol004/sol004test"
)

// A Service in Enforce mode never applies an unsigned package: it stalls with
// IntegrityFailed saying the package is not signed, and nothing of it reaches the cluster.
func TestSignedPackagesEnforceRefusesUnsigned(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-sol004-unsigned")
	signing := newSigningPKI(t)
	git := startGit(t, ns)
	createAnchors(t, ns, signing.RootPEM())
	repo, err := git.NewRepo("unsigned")
	g.Expect(err).NotTo(HaveOccurred())
	files := signedFiles(t, "v1", nil)
	files["deploy/service.mf"] = files["deploy/service.mf"][:strings.Index(files["deploy/service.mf"], "-----BEGIN CMS-----")]
	commit := push(t, repo, files)

	key := createSignedService(t, ns, "core", git.RepoURL(repo.Name))
	svc := waitReason(t, key, v1alpha1.ReasonIntegrityFailed)
	ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
	g.Expect(ready.Message).To(ContainSubstring("revision main@sha1:" + commit))
	g.Expect(ready.Message).To(ContainSubstring("the package is not signed"))
	g.Expect(apimeta.IsStatusConditionTrue(svc.Status.Conditions, v1alpha1.ConditionStalled)).To(BeTrue())
	g.Expect(svc.Status.LastAppliedRevision).To(BeEmpty())
	g.Expect(svc.Status.Inventory).To(BeEmpty())
	g.Expect(svc.Status.Nodes).To(BeEmpty())
	_, err = c.Clientset.CoreV1().ConfigMaps(ns).Get(context.Background(), "core-config", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the unsigned package's ConfigMap exists: %v", err)
}

// A Service following a branch runs a signed revision and records its signer; when the
// branch moves to a tampered revision (a file changed and its digest in the manifest too,
// the signature left as it was) it keeps running the old revision with IntegrityFailed;
// a correctly signed revision then applies.
func TestSignedPackagesTamperedRevisionKeepsTheOldOne(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-sol004-git")
	signing := newSigningPKI(t)
	git := startGit(t, ns)
	createAnchors(t, ns, signing.RootPEM())
	repo, err := git.NewRepo("signed")
	g.Expect(err).NotTo(HaveOccurred())
	first := push(t, repo, signedFiles(t, "v1", signing.Signer))

	key := createSignedService(t, ns, "core", git.RepoURL(repo.Name))
	svc := waitReady(t, ns, "core", 3*time.Minute)
	g.Expect(svc.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
	g.Expect(svc.Status.Package.Signer).NotTo(BeNil())
	g.Expect(svc.Status.Package.Signer.Subject).To(Equal(signing.Signer.Certificate.Subject.String()))
	g.Expect(svc.Status.Package.Signer.Issuer).To(Equal(signing.Signer.Chain[0].Subject.String()))
	g.Expect(svc.Status.Package.Signer.Serial).To(Equal(strings.ToUpper(signing.Signer.Certificate.SerialNumber.Text(16))))
	g.Expect(svc.Status.Package.Signer.NotAfter.Time.Equal(signing.Signer.Certificate.NotAfter)).To(BeTrue())
	g.Expect(svc.Status.Package.Verification).To(Equal(&v1alpha1.PackageVerification{
		Mode: "Enforce", Method: "SignedManifest", Verified: true,
		Message: `signed manifest (SOL004 option 1) by "` + signing.Signer.Certificate.Subject.String() + `", verified against anchor "` + signing.Root.Subject.String() + `"`,
	}))
	running := configMap(g, c, ns)
	g.Expect(running.Data).To(HaveKeyWithValue("version", "v1"))

	tampered := signedFiles(t, "v1", signing.Signer)
	evil := strings.Replace(tampered["deploy/service.yaml"], "version: 'v1'", "version: 'evil'", 1)
	tampered["deploy/service.mf"] = strings.Replace(tampered["deploy/service.mf"], sha256Hex(tampered["deploy/service.yaml"]), sha256Hex(evil), 1)
	tampered["deploy/service.yaml"] = evil
	second := push(t, repo, tampered)
	svc = waitReason(t, key, v1alpha1.ReasonIntegrityFailed)
	ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
	g.Expect(ready.Message).To(ContainSubstring("revision main@sha1:" + second))
	g.Expect(ready.Message).To(ContainSubstring("service.mf:8: the CMS signature does not sign the manifest"))
	g.Expect(svc.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
	g.Expect(svc.Status.Package.Revision).To(Equal("main@sha1:" + first))
	resync(t, ns, "core", 2) // reconciles of the tampered revision change nothing
	still := configMap(g, c, ns)
	g.Expect(still.Data).To(HaveKeyWithValue("version", "v1"))
	g.Expect(still.ResourceVersion).To(Equal(running.ResourceVersion))

	third := push(t, repo, signedFiles(t, "v3", signing.Signer))
	NewWithT(t).Eventually(func(g Gomega) {
		svc := &v1alpha1.Service{}
		g.Expect(suite.client.Get(context.Background(), key, svc)).To(Succeed())
		g.Expect(svc.Status.LastAppliedRevision).To(Equal("main@sha1:" + third))
		g.Expect(apimeta.IsStatusConditionTrue(svc.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
	}, 2*time.Minute, time.Second).Should(Succeed(), "operator log:\n%s", suite.operator.Tail(30))
	g.Expect(configMap(g, c, ns).Data).To(HaveKeyWithValue("version", "v3"))
}

// newSigningPKI makes a root CA (the anchor), an intermediate and a signer.
func newSigningPKI(t *testing.T) *sol004test.PKI {
	t.Helper()
	p, err := sol004test.New("E2E")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// signedFiles is a package (one ConfigMap node, "<service>-config", whose data holds the
// version) under deploy/, with a manifest signed by creds (unsigned when creds is nil:
// the CMS block is then made with throwaway credentials and cut by the caller).
func signedFiles(t *testing.T, version string, creds *sol004.Credentials) map[string]string {
	t.Helper()
	template := "tosca_definitions_version: tosca_simple_yaml_1_3\nmetadata:\n  template_name: sol004-e2e\n  template_version: '" + version + "'\n" +
		"imports:\n- https://calaf.io/profiles/kubernetes/1.0/profile.yaml\n" +
		"topology_template:\n  node_templates:\n    config:\n      type: calaf.nodes.ConfigMap\n      properties:\n        data:\n          version: '" + version + "'\n"
	manifest := "metadata:\n  vnf_product_name: sol004-e2e\n\nSource: service.yaml\nAlgorithm: SHA-256\nHash: " + sha256Hex(template) + "\n"
	if creds == nil {
		creds = newSigningPKI(t).Signer
	}
	signed, err := sol004.SignManifest([]byte(manifest), creds)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"deploy/service.yaml": template, "deploy/service.mf": string(signed)}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// startGit starts a git server for the test, with its credentials in Secret "git".
func startGit(t *testing.T, ns string) *gitserver.Server {
	t.Helper()
	server, err := gitserver.Start(t.TempDir(), "calaf", "e2e-password")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git"},
		Data: map[string][]byte{"username": []byte("calaf"), "password": []byte("e2e-password")}}
	NewWithT(t).Expect(suite.client.Create(context.Background(), secret)).To(Succeed())
	return server
}

// createAnchors stores the trust anchors in ConfigMap "anchors" (key ca.crt).
func createAnchors(t *testing.T, ns string, pemBundle []byte) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "anchors"}, Data: map[string]string{"ca.crt": string(pemBundle)}}
	NewWithT(t).Expect(suite.client.Create(context.Background(), cm)).To(Succeed())
}

func push(t *testing.T, repo *gitserver.Repo, files map[string]string) string {
	t.Helper()
	commit, err := repo.Commit("package", files)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push("main"); err != nil {
		t.Fatal(err)
	}
	return commit
}

// createSignedService creates a Service following main of a repository, in Enforce mode
// with the anchors of ConfigMap "anchors".
func createSignedService(t *testing.T, ns, name, url string) client.ObjectKey {
	t.Helper()
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ServiceSpec{
		Source:        v1alpha1.Source{Git: &v1alpha1.GitSource{URL: url, Path: "deploy", SecretRef: &v1alpha1.LocalObjectReference{Name: "git"}}},
		Interval:      &metav1.Duration{Duration: 2 * time.Second},
		RetryInterval: &metav1.Duration{Duration: 2 * time.Second},
		Verify:        &v1alpha1.VerifySpec{Mode: v1alpha1.VerifyEnforce, Anchors: &v1alpha1.AnchorsReference{Kind: "ConfigMap", Name: "anchors"}},
	}}
	NewWithT(t).Expect(suite.client.Create(context.Background(), svc)).To(Succeed())
	return client.ObjectKeyFromObject(svc)
}

// waitReason waits until the Service's Ready condition is False with reason.
func waitReason(t *testing.T, key client.ObjectKey, reason string) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = &v1alpha1.Service{}
		g.Expect(suite.client.Get(context.Background(), key, svc)).To(Succeed())
		ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(reason), "Ready: %s", ready.Message)
	}, 2*time.Minute, time.Second).Should(Succeed(), "operator log:\n%s", suite.operator.Tail(30))
	return svc
}

func configMap(g Gomega, c *framework.Cluster, ns string) *corev1.ConfigMap {
	cm, err := c.Clientset.CoreV1().ConfigMaps(ns).Get(context.Background(), "core-config", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return cm
}
