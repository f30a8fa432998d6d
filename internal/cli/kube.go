//go:build !calaf_offline

package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
)

// kubeFlags select the cluster and namespace, as kubectl's do.
type kubeFlags struct {
	kubeconfig string
	context    string
	namespace  string
}

func (f *kubeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "path of the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&f.context, "context", "", "kubeconfig context to use")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "namespace (default: the context's namespace)")
}

func (f *kubeFlags) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f.kubeconfig != "" {
		rules.ExplicitPath = f.kubeconfig
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
}

// config returns the REST config of the selected cluster.
func (f *kubeFlags) config() (*rest.Config, error) {
	config, err := f.loader().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to talk to: %w", err)
	}
	config.UserAgent = "calaf-cli"
	return config, nil
}

// client returns a client of the selected cluster and the namespace to use.
func (f *kubeFlags) client() (client.WithWatch, string, error) {
	config, err := f.config()
	if err != nil {
		return nil, "", err
	}
	if f.namespace != "" {
		if err := checkNamespace("--namespace", f.namespace); err != nil {
			return nil, "", err
		}
	}
	c, err := client.NewWithWatch(config, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		return nil, "", err
	}
	namespace := f.namespace
	if namespace == "" {
		if namespace, _, err = f.loader().Namespace(); err != nil || namespace == "" {
			namespace = "default"
		}
	}
	return c, namespace, nil
}

// service connects and reads the Service name of the flags' namespace.
func (f *kubeFlags) service(ctx context.Context, name string) (client.WithWatch, *v1alpha1.Service, error) {
	c, namespace, err := f.client()
	if err != nil {
		return nil, nil, err
	}
	svc := &v1alpha1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, svc); err != nil {
		return nil, nil, err
	}
	return c, svc, nil
}
