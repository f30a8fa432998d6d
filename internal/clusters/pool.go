// Package clusters keeps the connections to the clusters Services deploy into besides the
// operator's own (a Service's spec.kubeConfig): per cluster a client, a REST mapper and,
// per namespace, a cache whose watches bring the drift and health of the Services'
// objects there. Connections are made when a Service first needs one, shared by the
// Services whose kubeconfigs grant the same identity on the same API server, bounded in
// number, and torn down once no Service has used them for a while. A cluster whose API
// server stops answering is marked unreachable — the Services that use it fail fast
// instead of waiting on the network — and probed with backoff; when it answers again its
// Services are reconciled at once.
//
// The API server's name is resolved once, when the connection is made, and every
// connection (requests, watches, exec streams) goes to that address, which the admin's
// policy must allow (package outbound): a name that resolves elsewhere later reaches
// nothing new.
package clusters

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/internal/kubeconfig"
	"calaf.io/calaf/internal/outbound"
)

// Options configure a Pool; zero values take the defaults said.
type Options struct {
	Scheme *runtime.Scheme
	// Policy is the admin's policy of the addresses API servers may be at, read when a
	// connection is made and by every dial.
	Policy func() outbound.Policy
	// Selector selects the objects the caches hold (the objects of Services).
	Selector cache.Options
	// Owns tells whether an object of a cluster is one of owner's (by its labels).
	Owns func(owner types.NamespacedName, obj client.Object) bool
	// Changed is called with every change the caches see of an object a Service that
	// uses the cluster owns (old nil: added; now nil: deleted), and with owner, that
	// Service.
	Changed func(owner types.NamespacedName, old, now client.Object)
	// HealthChanged is called for each Service that uses a cluster when the cluster is
	// found unreachable, and when it answers again.
	HealthChanged func(owner types.NamespacedName)
	// MaxClusters bounds the clusters connected at once (default 64).
	MaxClusters int
	// IdleAfter is how long a cluster no Service uses stays connected (default 5 min).
	IdleAfter time.Duration
	// UserTTL forgets a Service that has not used its cluster for so long (it was deleted
	// without the operator seeing it go; default 24 h).
	UserTTL time.Duration
	// Timeout bounds one request (default 30 s); DialTimeout a connection (default 10 s).
	Timeout, DialTimeout time.Duration
	// ProbeBackoff is the wait between probes of an unreachable cluster, by probes failed
	// in a row (default 1 s doubling to 30 s).
	ProbeBackoff outbound.Backoff
	// CheckInterval is how often a cluster in use that answers is asked whether it still
	// does (default 10 s): one small request per cluster, whatever the Services using it.
	CheckInterval time.Duration
	// QPS and Burst limit the requests to one cluster (default 50 and 100).
	QPS   float32
	Burst int
	// Resolve resolves an API server's host name (default net.DefaultResolver).
	Resolve func(ctx context.Context, host string) ([]string, error)
	Log     logr.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.MaxClusters <= 0 {
		o.MaxClusters = 64
	}
	if o.IdleAfter <= 0 {
		o.IdleAfter = 5 * time.Minute
	}
	if o.UserTTL <= 0 {
		o.UserTTL = 24 * time.Hour
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.ProbeBackoff.Base <= 0 {
		o.ProbeBackoff = outbound.Backoff{Base: time.Second, Max: 30 * time.Second}
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = 10 * time.Second
	}
	if o.QPS <= 0 {
		o.QPS, o.Burst = 50, 100
	}
	if o.Policy == nil {
		o.Policy = func() outbound.Policy { return outbound.Policy{} }
	}
	if o.Resolve == nil {
		o.Resolve = defaultResolve
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Owns == nil {
		o.Owns = func(types.NamespacedName, client.Object) bool { return false }
	}
	return o
}

// Pool holds the connected clusters. Start runs its probes and its sweeps; Acquire and
// Release are safe for concurrent use.
type Pool struct {
	opts     Options
	mu       sync.Mutex
	clusters map[string]*Cluster             // by kubeconfig digest
	users    map[types.NamespacedName]string // Service → the digest of its cluster
	building singleflight.Group
	// ctx is the pool's life (Start's); caches end with it.
	ctx    context.Context
	wake   chan struct{}
	closed bool
}

// New returns a pool; its caches run once Start runs.
func New(opts Options) *Pool {
	return &Pool{opts: opts.withDefaults(), clusters: map[string]*Cluster{}, users: map[types.NamespacedName]string{},
		ctx: context.Background(), wake: make(chan struct{}, 1)}
}

// ErrTooMany says that the pool holds as many clusters as it may, all in use.
var ErrTooMany = errors.New("too many target clusters in use")

// Acquire returns the cluster a kubeconfig reaches, for owner (a Service) deploying into
// namespace: connected now, or as connected before. A Service that used another cluster
// until now is released from it. The cluster may be unreachable (Cluster.Unreachable).
func (p *Pool) Acquire(ctx context.Context, owner types.NamespacedName, namespace string, target *kubeconfig.Target) (*Cluster, error) {
	if c := p.lookup(owner, target.Digest); c != nil {
		c.use(owner, namespace)
		return c, nil
	}
	built, err, _ := p.building.Do(target.Digest, func() (any, error) {
		if c := p.existing(target.Digest); c != nil {
			return c, nil
		}
		c, err := p.connect(ctx, target)
		if err != nil {
			return nil, err
		}
		return p.add(c)
	})
	if err != nil {
		return nil, err
	}
	c := built.(*Cluster)
	p.mu.Lock()
	if previous, ok := p.users[owner]; ok && previous != c.key {
		if old := p.clusters[previous]; old != nil {
			old.forget(owner)
		}
	}
	p.users[owner] = c.key
	p.mu.Unlock()
	c.use(owner, namespace)
	return c, nil
}

// lookup returns the connected cluster of digest when owner already uses it.
func (p *Pool) lookup(owner types.NamespacedName, digest string) *Cluster {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.users[owner] != digest {
		return nil
	}
	c := p.clusters[digest]
	if c == nil || c.isStale() {
		return nil
	}
	return c
}

func (p *Pool) existing(digest string) *Cluster {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.clusters[digest]; c != nil && !c.isStale() {
		return c
	}
	return nil
}

// add puts a connected cluster in the pool, making room by tearing down an idle one
// (or a stale one of the same digest) when it is full.
func (p *Pool) add(c *Cluster) (*Cluster, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.clusters[c.key]; old != nil {
		delete(p.clusters, c.key)
		old.close()
	}
	if len(p.clusters) >= p.opts.MaxClusters {
		victim := p.idlest()
		if victim == nil {
			c.close()
			return nil, fmt.Errorf("%w (%d): the operator connects to at most %d clusters at once (--max-target-clusters)", ErrTooMany, len(p.clusters), p.opts.MaxClusters)
		}
		delete(p.clusters, victim.key)
		victim.close()
	}
	c.start(p.ctx)
	p.clusters[c.key] = c
	return c, nil
}

// idlest is the cluster unused for longest among those no Service uses, or nil.
func (p *Pool) idlest() *Cluster {
	var victim *Cluster
	for _, c := range p.clusters {
		if idle, since := c.idle(); idle && (victim == nil || since.Before(victim.lastUse())) {
			victim = c
		}
	}
	return victim
}

// Release says that owner uses no target cluster any more (it was deleted, or deploys
// into the operator's own cluster now).
func (p *Pool) Release(owner types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	digest, ok := p.users[owner]
	if !ok {
		return
	}
	delete(p.users, owner)
	if c := p.clusters[digest]; c != nil {
		c.forget(owner)
	}
}

// Len is how many clusters are connected.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clusters)
}

// Start probes the unreachable clusters and tears down the idle ones until ctx ends, then
// tears every cluster down.
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			p.closeAll()
			return nil
		case <-ticker.C:
		case <-p.wake:
		}
		p.sweep()
		p.probeDue(ctx)
	}
}

// NeedLeaderElection: the pool serves whichever reconcilers run.
func (p *Pool) NeedLeaderElection() bool { return false }

// sweep tears down the clusters idle for longer than IdleAfter and forgets the users
// not seen within UserTTL.
func (p *Pool) sweep() {
	now := p.opts.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, c := range p.clusters {
		for _, owner := range c.expired(now.Add(-p.opts.UserTTL)) {
			if p.users[owner] == key {
				delete(p.users, owner)
			}
		}
		if idle, since := c.idle(); idle && now.Sub(since) >= p.opts.IdleAfter {
			delete(p.clusters, key)
			c.close()
		}
	}
}

// probeDue probes the unreachable clusters whose next probe is due, each in its own
// goroutine (at most one probe per cluster at a time).
func (p *Pool) probeDue(ctx context.Context) {
	p.mu.Lock()
	var due []*Cluster
	for _, c := range p.clusters {
		if c.probeDue(p.opts.Now()) {
			due = append(due, c)
		}
	}
	p.mu.Unlock()
	for _, c := range due {
		go c.probe(ctx)
	}
}

// poke makes Start look at the clusters now (a cluster was found unreachable).
func (p *Pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Pool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, c := range p.clusters {
		delete(p.clusters, key)
		c.close()
	}
	p.closed = true
}
