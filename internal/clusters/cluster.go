package clusters

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/internal/kubeconfig"
)

// Cluster is the connection to one cluster, as one kubeconfig identity.
type Cluster struct {
	pool *Pool
	key  string
	// Server is the API server's URL as the kubeconfig writes it.
	Server string
	// Address is where its name resolved to when the connection was made.
	Address netip.AddrPort
	// Config is the connection's REST config: the pinned address, the kubeconfig's
	// credentials, no proxy, guarded dials (exec streams use it).
	Config *rest.Config
	// HTTPClient is shared by the connection's clients and caches.
	HTTPClient *http.Client
	Mapper     apimeta.RESTMapper
	// Client reads from and writes to the API server directly.
	Client client.Client

	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once

	mu         sync.Mutex
	users      map[types.NamespacedName]*user
	lastUsed   time.Time
	namespaces map[string]*namespaceCache
	health     health
	stale      bool
}

// user is a Service that uses the cluster: the namespace it deploys into, and when it
// last asked for the cluster.
type user struct {
	namespace string
	seen      time.Time
}

func newCluster(p *Pool, target *kubeconfig.Target, address netip.AddrPort, config *rest.Config, httpClient *http.Client, mapper apimeta.RESTMapper, c client.Client) *Cluster {
	return &Cluster{pool: p, key: target.Digest, Server: target.Server, Address: address, Config: config, HTTPClient: httpClient,
		Mapper: mapper, Client: c, users: map[types.NamespacedName]*user{}, namespaces: map[string]*namespaceCache{}, lastUsed: p.opts.Now()}
}

// Key identifies the cluster and identity (the kubeconfig's digest).
func (c *Cluster) Key() string { return c.key }

// start gives the cluster its life: its caches end when ctx does or it is closed.
func (c *Cluster) start(ctx context.Context) {
	c.once.Do(func() { c.ctx, c.cancel = context.WithCancel(ctx) })
}

// close stops the cluster's caches and closes its idle connections.
func (c *Cluster) close() {
	c.start(context.Background())
	c.cancel()
	c.mu.Lock()
	c.namespaces = map[string]*namespaceCache{}
	c.mu.Unlock()
	c.HTTPClient.CloseIdleConnections()
}

// use records that owner uses the cluster now, deploying into namespace.
func (c *Cluster) use(owner types.NamespacedName, namespace string) {
	now := c.pool.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users[owner] = &user{namespace: namespace, seen: now}
	c.lastUsed = now
}

// forget drops a user.
func (c *Cluster) forget(owner types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.users[owner]; ok {
		delete(c.users, owner)
		c.lastUsed = c.pool.opts.Now()
	}
}

// uses tells whether owner uses the cluster.
func (c *Cluster) uses(owner types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.users[owner]
	return ok
}

// expired drops the users not seen since before and returns them.
func (c *Cluster) expired(before time.Time) []types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	var gone []types.NamespacedName
	for owner, u := range c.users {
		if u.seen.Before(before) {
			delete(c.users, owner)
			gone = append(gone, owner)
		}
	}
	if len(gone) > 0 {
		c.lastUsed = c.pool.opts.Now()
	}
	c.closeUnusedNamespaces()
	return gone
}

// closeUnusedNamespaces stops the caches of namespaces no user deploys into.
func (c *Cluster) closeUnusedNamespaces() {
	used := map[string]bool{}
	for _, u := range c.users {
		used[u.namespace] = true
	}
	for namespace, nc := range c.namespaces {
		if !used[namespace] {
			nc.cancel()
			delete(c.namespaces, namespace)
		}
	}
}

// idle tells whether no Service uses the cluster, and since when it was last used.
func (c *Cluster) idle() (bool, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.users) == 0, c.lastUsed
}

func (c *Cluster) lastUse() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastUsed
}

func (c *Cluster) isStale() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stale
}

// owners are the Services that use the cluster.
func (c *Cluster) owners() []types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	owners := make([]types.NamespacedName, 0, len(c.users))
	for owner := range c.users {
		owners = append(owners, owner)
	}
	return owners
}

// Reader reads objects of namespace: from the cluster's cache of that namespace for the
// kinds whose watch has listed them, directly from the API server otherwise (and for
// other namespaces). Reading a kind starts its watch: its changes reconcile the Services
// whose objects they are.
func (c *Cluster) Reader(namespace string) client.Reader {
	return &reader{cluster: c, namespace: namespace}
}

// discovery is a client of the API server's version (the probe).
func (c *Cluster) discovery() (*discovery.DiscoveryClient, error) {
	return discovery.NewDiscoveryClientForConfigAndClient(c.Config, c.HTTPClient)
}
