package sources

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/cli"
	"calaf.io/calaf/test/gitserver"
)

// pushWithCLI runs `calaf package push DIR oci://...` and returns the digest it prints.
func pushWithCLI(t *testing.T, version, ref string) string {
	t.Helper()
	dir := t.TempDir()
	for path, content := range packageFiles(version) {
		if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	code := cli.Run([]string{"package", "push", dir, ref, "--insecure", "--username", registryUser, "--password-stdin"},
		cli.Streams{In: strings.NewReader(registryPass + "\n"), Out: &out, Err: &errOut})
	if code != 0 {
		t.Fatalf("calaf package push: exit %d: %s%s", code, out.String(), errOut.String())
	}
	digest := regexp.MustCompile(`@(sha256:[a-f0-9]{64})`).FindStringSubmatch(out.String())
	if digest == nil {
		t.Fatalf("no digest in %q", out.String())
	}
	return digest[1]
}

func registrySecret(namespace, name, password string) *corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + password))
	config, _ := json.Marshal(map[string]any{"auths": map[string]any{env.registry.Host: map[string]string{"auth": auth}}})
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: config}}
}

func ociSource(repository, tag, digest, secret string, insecure bool) v1alpha1.Source {
	src := &v1alpha1.OCISource{URL: "oci://" + env.registry.Host + "/" + repository, Tag: tag, Digest: digest, Insecure: insecure}
	if secret != "" {
		src.SecretRef = &v1alpha1.LocalObjectReference{Name: secret}
	}
	return v1alpha1.Source{OCI: src}
}

// Push with the CLI to a real registry, deploy by tag and by digest; a new push to the
// tag is followed, the digest stays; plain HTTP only with insecure; wrong credentials
// stall; an unreachable registry is retried and leaves what runs alone.
func TestOCIPushAndDeploy(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	createSecret(t, registrySecret(ns, "registry", registryPass))
	createSecret(t, registrySecret(ns, "wrong", "guess"))
	ref := "oci://" + env.registry.Host + "/calaf/sources-test"
	first := pushWithCLI(t, "v1", ref+":stable")

	const interval = 2 * time.Second
	byTag := createService(t, ns, "by-tag", ociSource("calaf/sources-test", "stable", "", "registry", true), interval)
	byDigest := createService(t, ns, "by-digest", ociSource("calaf/sources-test", "", first, "registry", true), interval)
	svc := waitReady(t, byTag, "stable@"+first)
	g.Expect(svc.Status.Package.Revision).To(Equal("stable@" + first))
	waitReady(t, byDigest, first)
	g.Expect(getConfigMap(g, ns, "by-tag-config").Data).To(HaveKeyWithValue("version", "v1"))
	pinned := getConfigMap(g, ns, "by-digest-config")

	second := pushWithCLI(t, "v2", ref+":stable")
	g.Expect(second).NotTo(Equal(first))
	waitVersion(t, ns, "by-tag", "v2", interval+interval/10+5*time.Second)
	waitReady(t, byTag, "stable@"+second)
	handledReconcile(t, byDigest) // a reconcile of the pinned Service after the push
	g.Expect(getConfigMap(g, ns, "by-digest-config").ResourceVersion).To(Equal(pinned.ResourceVersion), "the digest pins v1")

	// Without insecure: true the plain-HTTP registry is refused.
	plain := createService(t, ns, "plain", ociSource("calaf/sources-test", "stable", "", "registry", false), interval)
	svc = waitStalled(t, plain, v1alpha1.ReasonInvalidSource)
	g.Expect(condition(svc, v1alpha1.ConditionReady).Message).To(ContainSubstring("plain HTTP"))

	// Wrong credentials stall.
	wrong := createService(t, ns, "wrong", ociSource("calaf/sources-test", "stable", "", "wrong", true), interval)
	svc = waitStalled(t, wrong, v1alpha1.ReasonAuthenticationFailed)
	g.Expect(condition(svc, v1alpha1.ConditionReady).Message).To(ContainSubstring("refused the credentials"))

	// An unreachable registry: Ready=False with the reason, retried, objects untouched.
	running := getConfigMap(g, ns, "by-tag-config")
	gone, err := gitserver.FreePort()
	g.Expect(err).NotTo(HaveOccurred())
	updateService(t, byTag, func(svc *v1alpha1.Service) {
		svc.Spec.Source.OCI.URL = "oci://" + gone + "/calaf/sources-test"
	})
	g.Eventually(func(g Gomega) {
		svc := getService(g, byTag)
		ready := condition(svc, v1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonFetchFailed))
		g.Expect(ready.Message).To(ContainSubstring("connection refused"))
		g.Expect(condition(svc, v1alpha1.ConditionStalled)).To(BeNil())
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	handledReconcile(t, byTag) // another failed fetch, over and done
	g.Expect(getConfigMap(g, ns, "by-tag-config").ResourceVersion).To(Equal(running.ResourceVersion))
}

// A real HTTPS server whose CA comes from the Secret, with basic auth.
func TestHTTPSWithCAFromSecret(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	server, ca, csar := httpsCatalog(t, packageFiles("v1"))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "catalog"},
		Data: map[string][]byte{"username": []byte("vendor"), "password": []byte("catalog-password"), "ca.crt": ca}}
	createSecret(t, secret)
	src := v1alpha1.Source{URL: server + "/demo.csar", SHA256: sha256Hex(csar), SecretRef: &v1alpha1.LocalObjectReference{Name: "catalog"}}
	key := createService(t, ns, "demo", src, time.Hour)
	waitReady(t, key, "sha256:"+sha256Hex(csar))
	g.Expect(getConfigMap(g, ns, "demo-config").Data).To(HaveKeyWithValue("version", "v1"))
}
