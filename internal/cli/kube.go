//go:build !calaf_offline

package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/cmmode"
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

// service connects and reads the Service name of the flags' namespace: a custom
// resource, or else one kept as ConfigMaps (ConfigMap mode); the client returned speaks
// to the form the Service is kept in.
func (f *kubeFlags) service(ctx context.Context, name string) (client.WithWatch, *v1alpha1.Service, error) {
	c, namespace, err := f.client()
	if err != nil {
		return nil, nil, err
	}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	svc := &v1alpha1.Service{}
	crErr := c.Get(ctx, key, svc)
	if crErr == nil || (!apierrors.IsNotFound(crErr) && !apimeta.IsNoMatchError(crErr)) {
		return c, svc, crErr
	}
	cm, err := configMapClient(c)
	if err != nil {
		return nil, nil, err
	}
	if err := cm.Get(ctx, key, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("service %q not found in namespace %s, neither as a custom resource nor as a ConfigMap labelled %s=Service", name, namespace, cmmode.LabelKind)
		}
		return nil, nil, err
	}
	return cm, svc, nil
}

// configMapClient is c for ConfigMap mode: Services and Operations read from and written
// as their ConfigMaps, admitted as the API server would admit the custom resources.
func configMapClient(c client.WithWatch) (client.WithWatch, error) {
	schemas, err := cmmode.NewSchemas()
	if err != nil {
		return nil, err
	}
	return configMapWatch{Client: cmmode.NewClient(c, c, &cmmode.Store{Schemas: schemas, Client: c}), watch: c}, nil
}

// configMapWatch is a ConfigMap mode client that watches what c watches (the commands
// poll Services rather than watch them).
type configMapWatch struct {
	*cmmode.Client
	watch client.WithWatch
}

func (c configMapWatch) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	return c.watch.Watch(ctx, list, opts...)
}
