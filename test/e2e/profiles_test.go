//go:build e2e

package e2e

import (
	"context"
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
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
	"calaf.io/calaf/test/ociregistry"
	"calaf.io/calaf/tosca/sol004"
)

// The vendor's whole path: a profile scaffolded, a type derived in it with a test case,
// its tests passed, its reference written, signed and pushed to a registry; a package
// imports it by reference, is locked, signed and pushed too, and a Service in Enforce
// mode deploys it on the cluster (the operator fetches the profile by its locked digest
// and verifies its signature). The profile then changes under the same tag: the Service
// refuses the digest mismatch and keeps what it deployed. A package locked to an unsigned
// profile is refused under Enforce.
func TestProfileVendorPath(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-profiles")
	work := t.TempDir()
	t.Setenv("CALAF_PROFILE_CACHE", filepath.Join(work, "profile-cache"))
	reg := startRegistry(t, work)
	signing := newSigningPKI(t)
	key, cert, chain, anchors := writeSigner(t, work, signing.RootPEM(), signing.SignerKeyPEM(),
		sol004.EncodeCertificates(signing.Signer.Certificate), sol004.EncodeCertificates(signing.Signer.Chain...))
	signFlags := []string{"--key", key, "--cert", cert, "--chain", chain}

	profile := filepath.Join(work, "acme")
	calaf(t, "profile", "init", "acme", "--dir", profile)
	deriveGreeter(t, profile)
	tested := calaf(t, "profile", "test", profile)
	g.Expect(tested).To(ContainSubstring("3 passed, 0 failed"))
	calaf(t, "profile", "doc", profile, "-o", filepath.Join(work, "REFERENCE.md"))
	reference, err := os.ReadFile(filepath.Join(work, "REFERENCE.md"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(reference)).To(ContainSubstring("### acme.nodes.Greeter"))
	g.Expect(string(reference)).To(ContainSubstring("- Renders (on the profile's test cases): ConfigMap, Deployment"))

	profileURL := "oci://" + reg.Host + "/acme/profile:1.0"
	first := pushedDigest(calaf(t, append([]string{"profile", "push", profile, profileURL, "--insecure"}, signFlags...)...))
	pkg := sitePackage(t, work, "site", profileURL)
	locked := calaf(t, "package", "lock", pkg, "--insecure", "--anchors", anchors)
	g.Expect(locked).To(ContainSubstring("locked " + profileURL + " at " + first + " (signed by " + signing.Signer.Certificate.Subject.String() + ", verified)"))
	pushSignedPackage(t, work, pkg, "oci://"+reg.Host+"/acme/site:1", signFlags)
	checkSchemaInTheEditor(t, work, pkg)

	createRegistrySecret(t, ns, reg)
	createAnchors(t, ns, signing.RootPEM())
	svc := createOCIService(t, ns, "site", reg.Host, "1")
	waitReady(t, ns, "site", 3*time.Minute)
	greeting := func() string {
		cm, err := c.Clientset.CoreV1().ConfigMaps(ns).Get(context.Background(), "site-web-greeting", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return cm.Data["greeting"]
	}
	g.Expect(greeting()).To(Equal("bonjour"))

	replaceInFile(t, filepath.Join(profile, "profile.yaml"), "default: bonjour", "default: salut")
	moved := pushedDigest(calaf(t, append([]string{"profile", "push", profile, profileURL, "--insecure"}, signFlags...)...))
	refused := waitReason(t, svc, v1alpha1.ReasonIntegrityFailed)
	ready := apimeta.FindStatusCondition(refused.Status.Conditions, v1alpha1.ConditionReady)
	g.Expect(ready.Message).To(ContainSubstring("profile " + profileURL + ": digest mismatch: it names " + moved + " now, the package's lock says " + first))
	g.Expect(greeting()).To(Equal("bonjour"), "what the Service deployed is kept")

	unsignedURL := "oci://" + reg.Host + "/acme/profile:1.0-unsigned"
	calaf(t, "profile", "push", profile, unsignedURL, "--insecure")
	unsignedPkg := sitePackage(t, work, "site-unsigned", unsignedURL)
	calaf(t, "package", "lock", unsignedPkg, "--insecure")
	pushSignedPackage(t, work, unsignedPkg, "oci://"+reg.Host+"/acme/site:2", signFlags)
	unsigned := waitReason(t, createOCIService(t, ns, "unsigned", reg.Host, "2"), v1alpha1.ReasonIntegrityFailed)
	ready = apimeta.FindStatusCondition(unsigned.Status.Conditions, v1alpha1.ConditionReady)
	g.Expect(ready.Message).To(ContainSubstring("profile " + unsignedURL + ": signature: the profile is not signed"))
	g.Expect(unsigned.Status.Inventory).To(BeEmpty())
}

// checkSchemaInTheEditor writes the JSON Schema of a package's types (those of the profile
// it imports by reference included) and has yaml-language-server check its template
// against it: as it is, it passes; a misspelt property and a value of the wrong type are
// reported at their lines.
func checkSchemaInTheEditor(t *testing.T, work, pkg string) {
	t.Helper()
	schema := filepath.Join(work, "site.schema.json")
	calaf(t, "profile", "schema", pkg, "-o", schema)
	server := startYAMLLanguageServer(t, work)
	template, err := os.ReadFile(filepath.Join(pkg, "service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := "# yaml-language-server: $schema=file://" + schema + "\n" + string(template)
	wrong := strings.Replace(text, "        ports: [ { name: http, port: 8080 } ]", "        prots: [ { name: http, port: 8080 } ]\n        greeting: [ bonjour ]", 1)
	expectDiagnostics(t, server, filepath.Join(work, "wrong.yaml"), wrong, map[int]string{
		11: "Property prots is not allowed.",
		12: `Incorrect type. Expected "string | function".`,
	})
	expectDiagnostics(t, server, filepath.Join(work, "site.yaml"), text, nil)
}

// startYAMLLanguageServer installs yaml-language-server (test/ground/yaml-language-server.sh,
// from npm, once) and starts it for the test.
func startYAMLLanguageServer(t *testing.T, root string) *framework.YAMLLanguageServer {
	t.Helper()
	path, err := framework.InstallYAMLLanguageServer()
	if err != nil {
		t.Fatal(err)
	}
	server, err := framework.StartYAMLLanguageServer(path, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Stop)
	return server
}

// expectDiagnostics opens a document in the language server and expects exactly the
// diagnostics given (0-based line → message); none for nil. A document with mistakes is
// opened first in a session, so that the schema is loaded when the clean ones are.
func expectDiagnostics(t *testing.T, server *framework.YAMLLanguageServer, path, text string, want map[int]string) {
	t.Helper()
	diags, err := server.Diagnostics(path, text, want != nil, time.Minute)
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, server.Stderr.String())
	}
	got := map[int]string{}
	for _, d := range diags {
		got[d.Line] = d.Message
	}
	if len(want) == 0 && len(got) == 0 {
		return
	}
	NewWithT(t).Expect(got).To(Equal(want), "%s", path)
}

// The schemas of the examples' packages, checked by yaml-language-server as an editor
// checks a template: every template of the examples passes; in the vendor's, a misspelt
// property and a value of the wrong type are reported at their lines.
func TestProfileSchemaOfTheExamplesInTheEditor(t *testing.T) {
	work := t.TempDir()
	server := startYAMLLanguageServer(t, work)
	vendor := filepath.Join(framework.RepoRoot(), "examples", "vendor-profile")
	vendorSchema := filepath.Join(work, "vendor.schema.json")
	calaf(t, "profile", "schema", vendor, "-o", vendorSchema)
	template, err := os.ReadFile(filepath.Join(vendor, "Definitions", "service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := "# yaml-language-server: $schema=file://" + vendorSchema + "\n" + string(template)
	wrong := strings.Replace(strings.Replace(text, "        max_memory: 48Mi", "        max_memroy: 48Mi", 1), "          ttl_seconds: 600", "          ttl_seconds: ten minutes", 1)
	expectDiagnostics(t, server, filepath.Join(work, "wrong.yaml"), wrong, map[int]string{
		46: "Property max_memroy is not allowed.",
		49: `Incorrect type. Expected "integer | function".`,
	})
	checked := 0
	for _, pkg := range []string{"hello-world/service.yaml", "network-service", "vendor-profile", "testdata/profile-types"} {
		dir := filepath.Join(framework.RepoRoot(), "examples", pkg)
		schema := filepath.Join(work, strings.ReplaceAll(pkg, "/", "-")+".schema.json")
		calaf(t, "profile", "schema", dir, "-o", schema)
		var files []string
		if strings.HasSuffix(pkg, ".yaml") {
			files = []string{dir}
		} else {
			files, _ = filepath.Glob(filepath.Join(dir, "*.yaml"))
			more, _ := filepath.Glob(filepath.Join(dir, "Definitions", "*.yaml"))
			files = append(files, more...)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil || !strings.Contains(string(data), "node_templates:") {
				continue
			}
			text := "# yaml-language-server: $schema=file://" + schema + "\n" + string(data)
			expectDiagnostics(t, server, filepath.Join(work, strings.ReplaceAll(strings.TrimPrefix(file, framework.RepoRoot()), "/", "_")), text, nil)
			checked++
		}
	}
	NewWithT(t).Expect(checked).To(BeNumerically(">=", 4))
}

// startRegistry runs an OCI registry for the test, its credentials in a Docker config the
// calaf commands read ($DOCKER_CONFIG).
func startRegistry(t *testing.T, work string) *ociregistry.Registry {
	t.Helper()
	reg, err := ociregistry.Start(filepath.Join(work, "registry"), "vendor", "e2e-registry-pass")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	config := filepath.Join(work, "docker")
	if err := os.MkdirAll(config, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(config, "config.json"), dockerConfig(reg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", config)
	return reg
}

func dockerConfig(reg *ociregistry.Registry) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(reg.User + ":" + reg.Password))
	data, _ := json.Marshal(map[string]any{"auths": map[string]any{reg.Host: map[string]string{"auth": auth}}})
	return data
}

// createRegistrySecret stores the registry's credentials in Secret "registry".
func createRegistrySecret(t *testing.T, ns string, reg *ociregistry.Registry) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig(reg)}}
	NewWithT(t).Expect(suite.client.Create(context.Background(), secret)).To(Succeed())
}

// createOCIService creates a Service of the package at acme/site:tag in the registry, in
// Enforce mode with the anchors of ConfigMap "anchors".
func createOCIService(t *testing.T, ns, name, host, tag string) client.ObjectKey {
	t.Helper()
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ServiceSpec{
		Source: v1alpha1.Source{OCI: &v1alpha1.OCISource{URL: "oci://" + host + "/acme/site", Tag: tag, Insecure: true,
			SecretRef: &v1alpha1.LocalObjectReference{Name: "registry"}}},
		Interval:      &metav1.Duration{Duration: 2 * time.Second},
		RetryInterval: &metav1.Duration{Duration: 2 * time.Second},
		Verify:        &v1alpha1.VerifySpec{Mode: v1alpha1.VerifyEnforce, Anchors: &v1alpha1.AnchorsReference{Kind: "ConfigMap", Name: "anchors"}},
	}}
	NewWithT(t).Expect(suite.client.Create(context.Background(), svc)).To(Succeed())
	return client.ObjectKeyFromObject(svc)
}

// deriveGreeter adds a type derived from the scaffold's, and a test case of it.
func deriveGreeter(t *testing.T, profile string) {
	t.Helper()
	file := filepath.Join(profile, "profile.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	greeter := `
  acme.nodes.Greeter:
    description: An app that greets in French unless told otherwise.
    derived_from: acme.nodes.App
    properties:
      greeting:
        type: string
        default: bonjour
`
	if err := os.WriteFile(file, append(data, greeter...), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := `tests:
- name: a greeter says bonjour
  nodes:
    hi:
      type: acme.nodes.Greeter
      properties: { image: busybox:1.36 }
  assert:
  - object: ConfigMap/test-hi-greeting
    path: data.greeting
    equals: bonjour
  - object: Deployment/test-hi
`
	if err := os.WriteFile(filepath.Join(profile, "tests", "greeter.yaml"), []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sitePackage writes a package whose web node is an acme.nodes.Greeter of the profile at
// url, serving its greeting.
func sitePackage(t *testing.T, work, name, url string) string {
	t.Helper()
	dir := filepath.Join(work, name)
	template := `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- ` + url + `
topology_template:
  node_templates:
    web:
      type: acme.nodes.Greeter
      properties:
        image: ` + framework.ExamplesImage + `
        command: [ sh, -c, 'mkdir -p /www && echo "$GREETING" > /www/index.html && exec httpd -f -p 8080 -h /www' ]
        ports: [ { name: http, port: 8080 } ]
        readiness_probe: { http_path: /, period_seconds: 2 }
`
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pushSignedPackage signs a package (its lock with it) and pushes it to ref.
func pushSignedPackage(t *testing.T, work, pkg, ref string, signFlags []string) {
	t.Helper()
	csar := filepath.Join(work, filepath.Base(pkg)+".csar")
	calaf(t, append([]string{"package", "sign", pkg, "-o", csar}, signFlags...)...)
	calaf(t, "package", "push", csar, ref, "--insecure")
}

// pushedDigest reads the manifest digest calaf profile push printed.
func pushedDigest(out string) string {
	m := regexp.MustCompile(`@(sha256:[0-9a-f]{64})`).FindStringSubmatch(out)
	if m == nil {
		return "(no digest in: " + out + ")"
	}
	return m[1]
}

// writeSigner writes the signer's key, certificate and chain and the anchors as files.
func writeSigner(t *testing.T, dir string, anchors, key, cert, chain []byte) (keyFile, certFile, chainFile, anchorsFile string) {
	t.Helper()
	files := map[string][]byte{"signer.key": key, "signer.pem": cert, "chain.pem": chain, "anchors.pem": anchors}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "signer.key"), filepath.Join(dir, "signer.pem"), filepath.Join(dir, "chain.pem"), filepath.Join(dir, "anchors.pem")
}

func replaceInFile(t *testing.T, file, from, to string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(data), from) {
		t.Fatalf("%s has no %q (%v)", file, from, err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}
