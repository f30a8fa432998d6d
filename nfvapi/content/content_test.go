package content_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/nfvapi/content"
	"calaf.io/calaf/source"
	"calaf.io/calaf/test/ociregistry"
	"calaf.io/calaf/test/vnfpackages"
	"calaf.io/calaf/tosca"
)

const (
	registryUser = "nfv-api"
	registryPass = "content-registry-password-for-tests"
)

// env is a real kube-apiserver and etcd, and a real OCI registry on loopback.
var env struct {
	config   *rest.Config
	client   client.Client
	registry *ociregistry.Registry
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run `make test-unit` (it builds kube-apiserver and etcd and sets it)")
		return 1
	}
	testEnv := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "deploy", "crd")}, ErrorIfCRDPathMissing: true}
	config, err := testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	defer testEnv.Stop()
	root, err := os.MkdirTemp("", "calaf-content-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	if env.registry, err = ociregistry.Start(filepath.Join(root, "registry"), registryUser, registryPass); err != nil {
		fmt.Fprintln(os.Stderr, "OCI registry:", err)
		return 1
	}
	defer env.registry.Stop()
	env.config = config
	if env.client, err = client.New(config, client.Options{Scheme: operator.NewScheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// caller makes a namespace with a service account that may create and get ConfigMaps
// there (as the NFV API's callers may), and returns the namespace and a client acting as
// the account.
func caller(t *testing.T, verbs ...string) (string, client.Client) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "calaf-content-"}}
	g.Expect(env.client.Create(ctx, ns)).To(Succeed())
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "nfvo"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "nfvo"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "nfvo"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "nfvo"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "nfvo", Namespace: ns.Name}}},
	} {
		g.Expect(env.client.Create(ctx, obj)).To(Succeed())
	}
	config := rest.CopyConfig(env.config)
	config.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns.Name + ":nfvo"}
	c, err := client.New(config, client.Options{Scheme: operator.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	return ns.Name, c
}

// newStore makes a store spooling into a directory of the test's, and returns the
// directory (empty once every upload ended).
func newStore(t *testing.T, cfg content.Config) (*content.Store, string) {
	t.Helper()
	cfg.TempDir = t.TempDir()
	store, err := content.New(cfg)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return store, cfg.TempDir
}

func registryConfig() content.Config {
	return content.Config{Registry: "oci://" + env.registry.Host + "/vnf-packages", Insecure: true, PullSecret: "content-registry",
		Keychain: source.DockerConfig{env.registry.Host: authn.AuthConfig{Username: registryUser, Password: registryPass}}}
}

func helloCSAR(t *testing.T) []byte {
	t.Helper()
	archive, err := vnfpackages.CSAR("cnf-manifests", vnfpackages.Options{Manifest: "hello.mf"})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return archive
}

func vnfPackage(ns, name string) *v1alpha1.VnfPackage {
	return &v1alpha1.VnfPackage{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-of-" + name)}}
}

// A small package is kept in an upload ConfigMap written as the caller and owned by the
// package; read back, it is the same bytes, its VNFD's files, and its files by path.
func TestSmallPackageInAConfigMap(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, asCaller := caller(t, "create", "get")
	store, spool := newStore(t, content.Config{InlineBytes: content.MaxInlineBytes})
	archive := helloCSAR(t)
	g.Expect(int64(len(archive))).To(BeNumerically("<=", content.MaxInlineBytes), "the test package fits a ConfigMap")
	pkg := vnfPackage(ns, "hello")
	src, err := store.Put(ctx, asCaller, pkg, bytes.NewReader(archive))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(src.Upload).NotTo(BeNil())
	g.Expect(src.Upload.SHA256).To(Equal(source.SHA256(archive)))
	cm := &corev1.ConfigMap{}
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: src.Upload.ConfigMapName}, cm)).To(Succeed())
	g.Expect(cm.BinaryData[source.UploadKey]).To(Equal(archive))
	g.Expect(cm.OwnerReferences).To(HaveLen(1))
	g.Expect(cm.OwnerReferences[0].UID).To(Equal(pkg.UID))
	g.Expect(os.ReadDir(spool)).To(BeEmpty(), "nothing left spooled")

	pkg.Spec.Source = &src
	read, err := store.Open(ctx, asCaller, pkg)
	g.Expect(err).NotTo(HaveOccurred())
	defer read.Close()
	g.Expect(read.SHA256).To(Equal(source.SHA256(archive)))
	g.Expect(read.Size).To(BeEquivalentTo(len(archive)))
	vnfd, err := read.VNFD()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(vnfd).To(HaveKey("Definitions/hello_top.vnfd.yaml"))
	g.Expect(vnfd).To(HaveKey(tosca.MetaPath))
	g.Expect(vnfd).NotTo(HaveKey("Files/kubernetes/front.yaml"))
	front, err := read.File("Files/kubernetes/front.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(front)).To(ContainSubstring("kind: ReplicaSet"))
	for _, name := range []string{"../../etc/passwd", "/etc/passwd", "Files/kubernetes", "Files/nothing.yaml"} {
		_, err := read.File(name)
		var notFound *content.NotFoundError
		g.Expect(errors.As(err, &notFound)).To(BeTrue(), "%s: %v", name, err)
	}
}

// The ConfigMap is written as the caller: one who may not create ConfigMaps is refused
// by the API server, and one who may not read them cannot read the content back.
func TestContentAsTheCaller(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, readOnly := caller(t, "get")
	store, _ := newStore(t, content.Config{})
	_, err := store.Put(ctx, readOnly, vnfPackage(ns, "hello"), bytes.NewReader(helloCSAR(t)))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)

	ns, writeOnly := caller(t, "create")
	pkg := vnfPackage(ns, "hello")
	src, err := store.Put(ctx, writeOnly, pkg, bytes.NewReader(helloCSAR(t)))
	g.Expect(err).NotTo(HaveOccurred())
	pkg.Spec.Source = &src
	_, err = store.Open(ctx, writeOnly, pkg)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
}

// A package larger than the ConfigMap bound goes to the registry, as `calaf package push`
// writes it: the OCI source names it by digest, the operator's OCI fetcher reads it (the
// same package), and the store reads it back.
func TestLargePackageInTheRegistry(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, asCaller := caller(t, "create", "get")
	cfg := registryConfig()
	cfg.InlineBytes = 1024
	store, spool := newStore(t, cfg)
	archive := helloCSAR(t)
	pkg := vnfPackage(ns, "hello")
	src, err := store.Put(ctx, asCaller, pkg, bytes.NewReader(archive))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(src.OCI).NotTo(BeNil())
	g.Expect(src.OCI.URL).To(Equal("oci://" + env.registry.Host + "/vnf-packages/" + ns))
	g.Expect(src.OCI.Digest).To(HavePrefix("sha256:"))
	g.Expect(src.OCI.SecretRef.Name).To(Equal("content-registry"))
	g.Expect(os.ReadDir(spool)).To(BeEmpty(), "nothing left spooled")

	// The operator pulls it with the Secret the admin put in the namespace.
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + registryPass))
	dockerConfig, _ := json.Marshal(map[string]any{"auths": map[string]any{env.registry.Host: map[string]string{"auth": auth}}})
	g.Expect(env.client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "content-registry"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig}})).To(Succeed())
	packages, err := source.NewStore(t.TempDir(), 1<<30, tosca.DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	fetcher := &source.Fetcher{Store: packages, Reader: env.client}
	fetcher.OCI = &source.OCI{Store: packages, Reader: env.client}
	pkg.Spec.Source = &src
	fetched, err := fetcher.FetchPackage(ctx, pkg)
	g.Expect(err).NotTo(HaveOccurred())
	original, err := tosca.OpenArchive(archive, "hello.csar", tosca.DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	defer original.Close()
	g.Expect(fetched.Package.Digest).To(Equal(original.Digest))
	g.Expect(fetched.Revision).To(Equal(src.OCI.Digest))
	g.Expect(fetched.Archive.SHA256).To(Equal(source.SHA256(archive)))

	read, err := store.Open(ctx, asCaller, pkg)
	g.Expect(err).NotTo(HaveOccurred())
	defer read.Close()
	g.Expect(read.SHA256).To(Equal(source.SHA256(archive)))

	// Content of another namespace's repository is not read with the store's credentials.
	other := pkg.DeepCopy()
	other.Namespace = "elsewhere"
	_, err = store.Open(ctx, asCaller, other)
	var notHeld *content.NotHeldError
	g.Expect(errors.As(err, &notHeld)).To(BeTrue(), "%v", err)
}

// Content beyond the bounds is refused, and nothing of it is kept: past MaxBytes; past
// the ConfigMap bound without a registry.
func TestOversizedContent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, asCaller := caller(t, "create", "get", "list")
	archive := helloCSAR(t)
	cases := []struct {
		name string
		cfg  content.Config
	}{
		{"past MaxBytes", content.Config{MaxBytes: int64(len(archive)) - 1}},
		{"past the ConfigMap bound, no registry", content.Config{InlineBytes: 1024}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store, spool := newStore(t, c.cfg)
			_, err := store.Put(ctx, asCaller, vnfPackage(ns, "big"), bytes.NewReader(archive))
			var tooLarge *content.TooLargeError
			g.Expect(errors.As(err, &tooLarge)).To(BeTrue(), "%v", err)
			g.Expect(os.ReadDir(spool)).To(BeEmpty())
		})
	}
	list := &corev1.ConfigMapList{}
	g.Expect(env.client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{content.LabelVnfPackage: "big"})).To(Succeed())
	g.Expect(list.Items).To(BeEmpty())
}

// Hostile uploads are refused with one line saying why, before anything is kept.
func TestHostileContent(t *testing.T) {
	ctx := context.Background()
	ns, asCaller := caller(t, "create", "get", "list")
	limits := tosca.Limits{MaxTotalBytes: 4 << 20, MaxFileBytes: 1 << 20, MaxFiles: 64}
	cases := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"empty", nil, "the package is empty"},
		{"not an archive", []byte("tosca_definitions_version: tosca_simple_yaml_1_3\n"), "neither a zip (CSAR) nor a tar archive"},
		{"zip bomb", zipOf(t, map[string]string{"TOSCA-Metadata/TOSCA.meta": "Entry-Definitions: a.yaml\n", "a.yaml": strings.Repeat("0", 8<<20)}), "a.yaml: decompresses to more than 1048576 bytes"},
		{"leaves the package", zipOf(t, map[string]string{"../escape.yaml": "x: 1\n"}), "escape.yaml"},
		{"too many files", zipOf(t, manyFiles(100)), "files"},
		{"truncated zip", helloCSAR(t)[:2000], "the package cannot be read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			store, spool := newStore(t, content.Config{Limits: limits})
			_, err := store.Put(ctx, asCaller, vnfPackage(ns, "hostile"), bytes.NewReader(c.archive))
			var invalid *content.InvalidError
			g.Expect(errors.As(err, &invalid)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(c.want))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			g.Expect(os.ReadDir(spool)).To(BeEmpty())
		})
	}
	list := &corev1.ConfigMapList{}
	NewWithT(t).Expect(env.client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	for _, cm := range list.Items {
		NewWithT(t).Expect(cm.BinaryData).NotTo(HaveKey(source.UploadKey), "nothing was kept")
	}
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buffer bytes.Buffer
	zw := zip.NewWriter(&buffer)
	for name, data := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buffer.Bytes()
}

func manyFiles(n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("f%03d.yaml", i)] = "x: 1\n"
	}
	return files
}
