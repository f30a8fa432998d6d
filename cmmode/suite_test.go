package cmmode_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/cmmode"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// env is a real kube-apiserver and etcd with Calaf's CRDs installed, so that what the API
// server says of a custom resource can be set beside what ConfigMap mode says.
var env struct {
	config *rest.Config
	client client.Client
	store  *cmmode.Store
	// cm is ConfigMap mode's client, reading straight from the API server.
	cm *cmmode.Client
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run `make test-unit` (it builds kube-apiserver and etcd and sets it)")
		return 1
	}
	testEnv := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "deploy", "crd")}, ErrorIfCRDPathMissing: true}
	config, err := testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	defer testEnv.Stop()
	env.config = config
	if env.client, err = client.New(config, client.Options{Scheme: operator.NewScheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	schemas, err := cmmode.NewSchemas()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.store = &cmmode.Store{Schemas: schemas, Client: env.client}
	env.cm = cmmode.NewClient(env.client, env.client, env.store)
	return m.Run()
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cmmode-"}}
	if err := env.client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// upload packs files into a package kept in a ConfigMap, as `calaf deploy` does, and
// returns the Source naming it.
func upload(t *testing.T, namespace string, files map[string]string) v1alpha1.Source {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	for path, content := range files {
		full := filepath.Join(dir, path)
		g.Expect(os.MkdirAll(filepath.Dir(full), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(full, []byte(content), 0o644)).To(Succeed())
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	archive, err := source.Pack(pkg)
	g.Expect(err).NotTo(HaveOccurred())
	sum := source.SHA256(archive)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "package-" + sum[:8]}, BinaryData: map[string][]byte{source.UploadKey: archive}}
	if err := env.client.Create(context.Background(), cm); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	return v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: cm.Name, SHA256: sum}}
}

// companion reads the companion ConfigMap of the object name.
func companion(g Gomega, namespace, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: cmmode.StatusName(name)}, cm)).To(Succeed())
	return cm
}
