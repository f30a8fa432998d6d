package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OperatorNamespace and OperatorServiceAccount are where deploy/ installs the operator.
const (
	OperatorNamespace      = "calaf-system"
	OperatorServiceAccount = "calaf-operator"
)

// InstallOperatorRBAC creates the operator's namespace and service account and applies the
// RBAC of deploy/rbac/cluster (its ClusterRole and binding, and the leader election Role),
// as users install them.
func InstallOperatorRBAC(ctx context.Context, c client.Client) error {
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: OperatorNamespace, Name: OperatorServiceAccount}},
	} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for _, file := range []string{"deploy/rbac/cluster/role.yaml", "deploy/rbac/cluster/binding.yaml", "deploy/rbac/leader-election/role.yaml"} {
		if err := applyFile(ctx, c, filepath.Join(RepoRoot(), file)); err != nil {
			return err
		}
	}
	return nil
}

// InstallLockdownRBAC creates the service account account in the operator's namespace and
// gives it the RBAC of deploy/rbac/lockdown as shipped: its roles unchanged, its bindings
// made for account (named after it), so that an operator in lockdown mode can run beside
// the suite's.
func InstallLockdownRBAC(ctx context.Context, c client.Client, account string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: OperatorNamespace, Name: account}}
	if err := c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, file := range []string{"role.yaml", "binding.yaml", "state.yaml"} {
		err := forEachObject(filepath.Join(RepoRoot(), "deploy", "rbac", "lockdown", file), func(obj *unstructured.Unstructured) error {
			if kind := obj.GetKind(); kind == "ClusterRoleBinding" || kind == "RoleBinding" {
				obj.SetName(obj.GetName() + "-" + account)
				subjects := []any{map[string]any{"kind": "ServiceAccount", "name": account, "namespace": OperatorNamespace}}
				if err := unstructured.SetNestedSlice(obj.Object, subjects, "subjects"); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, client.Apply, client.FieldOwner("calaf-e2e"), client.ForceOwnership)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// applyFile server-side applies every object of a multi-document YAML file.
func applyFile(ctx context.Context, c client.Client, file string) error {
	return forEachObject(file, func(obj *unstructured.Unstructured) error {
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("calaf-e2e"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s from %s: %w", obj.GetKind(), obj.GetName(), file, err)
		}
		return nil
	})
}

// forEachObject calls do with every object of a multi-document YAML file.
func forEachObject(file string, do func(*unstructured.Unstructured) error) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := do(obj); err != nil {
			return err
		}
	}
}

// OperatorKubeconfig writes into dir a kubeconfig that acts as the operator's service
// account (a token from the TokenRequest API) on the cluster of adminKubeconfig, and
// returns its path: the operator then has exactly the rights deploy/ gives it.
func OperatorKubeconfig(ctx context.Context, cs kubernetes.Interface, adminKubeconfig, dir string) (string, error) {
	return AccountKubeconfig(ctx, cs, adminKubeconfig, dir, OperatorNamespace, OperatorServiceAccount)
}

// AccountKubeconfig writes into dir a kubeconfig that acts as a service account (a token
// from the TokenRequest API) on the cluster of adminKubeconfig, and returns its path.
func AccountKubeconfig(ctx context.Context, cs kubernetes.Interface, adminKubeconfig, dir, namespace, account string) (string, error) {
	token, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token for %s/%s: %w", namespace, account, err)
	}
	admin, err := clientcmd.LoadFromFile(adminKubeconfig)
	if err != nil {
		return "", err
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	config := clientcmdapi.NewConfig()
	config.Clusters["cluster"] = cluster
	config.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	config.Contexts["operator"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "operator"}
	config.CurrentContext = "operator"
	path := filepath.Join(dir, account+".kubeconfig")
	return path, clientcmd.WriteToFile(*config, path)
}

// ApplyFile creates (or updates) every object of a YAML file of the repository's, as a user
// would apply it.
func ApplyFile(ctx context.Context, c client.Client, file string) error {
	return applyFile(ctx, c, file)
}

// ForEachObject calls do with every object of a multi-document YAML file.
func ForEachObject(file string, do func(*unstructured.Unstructured) error) error {
	return forEachObject(file, do)
}
