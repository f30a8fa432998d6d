package nfvapi

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/internal/lru"
)

// clients makes the Kubernetes client each caller acts with: the server's own connection
// with the caller impersonated, so the API server applies the caller's RBAC. Clients share
// one HTTP transport and one REST mapper, and the most recent ones are kept.
type clients struct {
	config *rest.Config
	base   *http.Client
	mapper meta.RESTMapper
	scheme *runtime.Scheme
	cache  *lru.Cache[client.Client]
}

func newClients(config *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper) (*clients, error) {
	base, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("a client of the Kubernetes API: %w", err)
	}
	return &clients{config: config, base: base, mapper: mapper, scheme: scheme, cache: lru.New[client.Client](1024)}, nil
}

// For returns the client a caller acts with.
func (c *clients) For(caller *Caller) (client.Client, error) {
	key := caller.key()
	if cl, ok := c.cache.Get(key); ok {
		return cl, nil
	}
	httpClient := c.base
	if !caller.Anonymous {
		imp := transport.ImpersonationConfig{UserName: caller.User, UID: caller.UID, Groups: caller.Groups, Extra: caller.Extra}
		httpClient = &http.Client{Transport: transport.NewImpersonatingRoundTripper(imp, c.base.Transport), Timeout: c.base.Timeout}
	}
	cl, err := client.New(c.config, client.Options{HTTPClient: httpClient, Scheme: c.scheme, Mapper: c.mapper})
	if err != nil {
		return nil, err
	}
	c.cache.Put(key, cl)
	return cl, nil
}
