// Package framework holds the helpers of Calaf's end-to-end tests, which run against a real
// cluster (the test ground's one-node cluster, or any cluster in $KUBECONFIG): loading the
// kubeconfig, per-test namespaces, waiting for pods and exec into them.
package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigEnv names the variables the kubeconfig path is read from, in order.
var KubeconfigEnv = []string{"CALAF_E2E_KUBECONFIG", "KUBECONFIG"}

// Cluster is a connection to the cluster under test.
type Cluster struct {
	Config    *rest.Config
	Clientset kubernetes.Interface
}

// LoadConfig reads the kubeconfig named by $CALAF_E2E_KUBECONFIG or $KUBECONFIG. It is an
// error when neither is set: end-to-end tests never fall back to ~/.kube/config.
func LoadConfig() (*rest.Config, error) {
	for _, env := range KubeconfigEnv {
		if path := os.Getenv(env); path != "" {
			cfg, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				return nil, fmt.Errorf("kubeconfig %s (from $%s): %w", path, env, err)
			}
			cfg.QPS, cfg.Burst = 50, 100
			return cfg, nil
		}
	}
	return nil, errors.New("no kubeconfig: set $KUBECONFIG (make test-e2e starts a cluster and sets it)")
}

// Connect loads the kubeconfig and builds a clientset, failing t when either fails.
func Connect(t testing.TB) *Cluster {
	t.Helper()
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return &Cluster{Config: cfg, Clientset: cs}
}

// Namespace creates a namespace named after prefix with a random suffix and deletes it (without
// waiting) when t ends.
func (c *Cluster) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	ctx := context.Background()
	ns, err := c.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: map[string]string{"calaf.io/e2e": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		err := c.Clientset.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if err != nil {
			t.Logf("delete namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// BusyboxImage is the test ground's busybox-only workload image (imported into the node's
// containerd by cluster-up; pods use it with imagePullPolicy Never).
const BusyboxImage = "calaf.local/busybox:1"

// ExamplesImage is the image Calaf's examples default to. The test ground imports its busybox
// image under this name too (docker.io/library/busybox:1.36), so pods with imagePullPolicy
// IfNotPresent run it without a registry.
const ExamplesImage = "busybox:1.36"
