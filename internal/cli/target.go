//go:build !calaf_offline

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/kubeconfig"
	"calaf.io/calaf/internal/operator"
)

// The cluster a Service deploys into: spec.kubeConfig, named by --kubeconfig-secret, or
// made of the Kubernetes VIM of the instantiate request's vimConnectionInfo (a Secret
// <service>-vim owned by the Service, as Tacker reads a VIM: endpoint, CA, bearer token).

// requestVIM reads the Kubernetes VIM of an instantiate request file's vimConnectionInfo;
// nil when there is no file or no Kubernetes VIM in it.
func requestVIM(file string) (*kubeconfig.VIM, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, usageError{fmt.Errorf("instantiate request: %w", err)}
	}
	raw, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil // etsi.ParseRequest said what is wrong with it already
	}
	var request struct {
		VimConnectionInfo json.RawMessage `json:"vimConnectionInfo"`
	}
	if err := json.Unmarshal(raw, &request); err != nil {
		return nil, nil
	}
	vim, err := kubeconfig.FromVimConnectionInfo(request.VimConnectionInfo)
	switch {
	case errors.Is(err, kubeconfig.ErrNoVIM):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return vim, nil
}

// kubeConfigOf is the spec.kubeConfig a command asks for: the Secret named, or the VIM's
// (both is an error); nil for neither.
func kubeConfigOf(secret string, vim *kubeconfig.VIM, service string) (*v1alpha1.KubeConfigReference, error) {
	switch {
	case secret != "" && vim != nil:
		return nil, usageError{fmt.Errorf("--kubeconfig-secret and the instantiate request's vimConnectionInfo (%s) both name a cluster: give one", vim.Name)}
	case secret != "":
		return &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: secret}}, nil
	case vim != nil:
		return &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: kubeconfig.SecretName(service), Key: kubeconfig.SecretKey}}, nil
	}
	return nil, nil
}

// storeVIMSecret creates or replaces the Secret of a Service's VIM, owned by the Service
// when it exists (svc.UID set), so that they are deleted together.
func storeVIMSecret(ctx context.Context, c client.Client, svc *v1alpha1.Service, vim *kubeconfig.VIM) error {
	want := vim.Secret(svc.Namespace, svc.Name)
	secret := &corev1.Secret{ObjectMeta: want.ObjectMeta}
	_, err := controllerutil.CreateOrUpdate(ctx, c, secret, func() error {
		secret.Labels, secret.Annotations, secret.Type, secret.Data = want.Labels, want.Annotations, want.Type, want.Data
		if svc.UID == "" {
			return nil
		}
		return controllerutil.SetOwnerReference(svc, secret, operator.NewScheme())
	})
	if err != nil {
		return fmt.Errorf("storing the VIM's kubeconfig in Secret %s: %w", want.Name, err)
	}
	return nil
}

// targetVIM makes a NOT_INSTANTIATED Service deploy into the Kubernetes VIM of an
// instantiate request file, if it names one: its Secret stored, spec.kubeConfig set
// before the INSTANTIATE occurrence starts.
func targetVIM(ctx context.Context, c client.Client, svc *v1alpha1.Service, file string) error {
	vim, err := requestVIM(file)
	if err != nil || vim == nil {
		return err
	}
	if err := storeVIMSecret(ctx, c, svc, vim); err != nil {
		return err
	}
	kubeConfig, _ := kubeConfigOf("", vim, svc.Name)
	patch := client.MergeFrom(svc.DeepCopy())
	svc.Spec.KubeConfig = kubeConfig
	if err := c.Patch(ctx, svc, patch); err != nil {
		return fmt.Errorf("setting spec.kubeConfig of Service %s: %w", svc.Name, err)
	}
	return nil
}
