package controller

import (
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// impersonate returns a client acting as a service account of a namespace (uncached: it
// writes; reads for health go through the operator's cache).
func (r *ServiceReconciler) impersonate(namespace, serviceAccount string) (client.Client, error) {
	key := namespace + "/" + serviceAccount
	if c, ok := r.impersonated.Load(key); ok {
		return c.(client.Client), nil
	}
	config := rest.CopyConfig(r.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", namespace, serviceAccount)}
	c, err := client.New(config, client.Options{Scheme: r.Scheme(), Mapper: r.RESTMapper()})
	if err != nil {
		return nil, err
	}
	actual, _ := r.impersonated.LoadOrStore(key, c)
	return actual.(client.Client), nil
}

// writerFor returns the client that writes a Service's objects.
func (r *ServiceReconciler) writerFor(svc *v1alpha1.Service) (client.Client, error) {
	if svc.Spec.ServiceAccountName == "" {
		return r.Client, nil
	}
	return r.impersonate(svc.Namespace, svc.Spec.ServiceAccountName)
}

// isNoMatch tells whether err says the kind is not served by the API.
func isNoMatch(err error) bool {
	return err != nil && (apimeta.IsNoMatchError(err) || strings.Contains(err.Error(), "no matches for kind"))
}
