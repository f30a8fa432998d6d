package examples_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// apiServer is the client of the real kube-apiserver (and etcd) that TestMain starts.
var apiServer client.Client

// TestMain starts a kube-apiserver and etcd from the test ground's binaries
// (KUBEBUILDER_ASSETS, by default ~/.cache/calaf/k8s-v1.37.2/bin, built by
// test/ground/build.sh) for the server-side dry-run tests of this package.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		home, _ := os.UserHomeDir()
		assets = filepath.Join(home, ".cache", "calaf", "k8s-v1.37.2", "bin")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		fmt.Fprintf(os.Stderr, "no kube-apiserver in %s: run test/ground/build.sh or set KUBEBUILDER_ASSETS (%v)\n", assets, err)
		return 1
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kube-apiserver and etcd: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping kube-apiserver and etcd: %v\n", err)
		}
	}()
	apiServer, err = client.New(cfg, client.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "client: %v\n", err)
		return 1
	}
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: goldenNamespace}}
	if err := apiServer.Create(context.Background(), namespace); err != nil {
		fmt.Fprintf(os.Stderr, "creating namespace %s: %v\n", goldenNamespace, err)
		return 1
	}
	return m.Run()
}

// dryRunApply applies obj with server-side apply in dry-run mode: the API server decodes,
// defaults, validates and admits it (unknown or mistyped fields fail) but stores nothing.
func dryRunApply(ctx context.Context, obj *unstructured.Unstructured) error {
	return apiServer.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
		client.DryRunAll, client.FieldOwner("calaf"), client.ForceOwnership)
}

// TestServerSideDryRun checks that the API server accepts every object every example (and
// fixture) renders.
func TestServerSideDryRun(t *testing.T) {
	ctx := context.Background()
	for _, dir := range packageDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			result := renderExample(t, dir, nil)
			if len(result.Objects) == 0 {
				t.Fatal("the example renders no objects")
			}
			for _, obj := range result.Objects {
				if err := dryRunApply(ctx, obj); err != nil {
					t.Errorf("%s %s/%s refused: %v", obj.GetAPIVersion(), obj.GetKind(), obj.GetName(), err)
					continue
				}
				t.Logf("accepted %s %s/%s", obj.GetAPIVersion(), obj.GetKind(), obj.GetName())
			}
			// Dry-run stores nothing: the namespace is still empty.
			var deployments unstructured.UnstructuredList
			deployments.SetAPIVersion("apps/v1")
			deployments.SetKind("DeploymentList")
			if err := apiServer.List(ctx, &deployments, client.InNamespace(goldenNamespace)); err != nil {
				t.Fatal(err)
			}
			if len(deployments.Items) > 0 {
				t.Errorf("dry-run stored %d Deployments", len(deployments.Items))
			}
		})
	}
}

// TestServerSideDryRunRefuses shows that the dry-run above really validates: broken
// variants of a rendered object are refused.
func TestServerSideDryRunRefuses(t *testing.T) {
	ctx := context.Background()
	result := renderExample(t, "hello-world", nil)
	var deployment *unstructured.Unstructured
	for _, obj := range result.Objects {
		if obj.GetKind() == "Deployment" {
			deployment = obj
		}
	}
	if deployment == nil {
		t.Fatal("hello-world renders no Deployment")
	}
	if err := dryRunApply(ctx, deployment); err != nil {
		t.Fatalf("the unchanged Deployment is refused: %v", err)
	}
	cases := map[string]struct {
		change func(obj *unstructured.Unstructured)
		want   string
	}{
		"unknown field": {
			change: func(obj *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(obj.Object, int64(3), "spec", "replicaz")
			},
			want: "replicaz",
		},
		"port name too long": {
			change: func(obj *unstructured.Unstructured) {
				containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
				ports := containers[0].(map[string]any)["ports"].([]any)
				ports[0].(map[string]any)["name"] = "a-port-name-longer-than-fifteen"
				_ = unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers")
			},
			want: "must be no more than 15 characters",
		},
		"selector not matching the pod labels": {
			change: func(obj *unstructured.Unstructured) {
				_ = unstructured.SetNestedStringMap(obj.Object, map[string]string{"calaf.io/node": "other"}, "spec", "selector", "matchLabels")
			},
			want: "does not match template",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			obj := deployment.DeepCopy()
			c.change(obj)
			err := dryRunApply(ctx, obj)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("refused, but not saying %q: %v", c.want, err)
			}
		})
	}
}
