package clusters

import (
	"context"
	"errors"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// namespaceCache holds the objects of Services in one namespace of a cluster, kind by
// kind as they are read.
type namespaceCache struct {
	cache  cache.Cache
	cancel context.CancelFunc
	mu     sync.Mutex
	// handled are the informers (by kind, typed or not) that report changes.
	handled map[string]bool
}

// namespaceCache returns the cache of a namespace, made and started when first asked
// for; nil once the cluster is closed.
func (c *Cluster) namespaceCache(namespace string) *namespaceCache {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		return nil
	}
	if nc := c.namespaces[namespace]; nc != nil {
		return nc
	}
	opts := c.pool.opts.Selector
	opts.Scheme, opts.Mapper, opts.HTTPClient = c.pool.opts.Scheme, c.Mapper, c.HTTPClient
	opts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	opts.DefaultWatchErrorHandler = c.watchFailed
	informers, err := cache.New(c.Config, opts)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(c.ctx)
	nc := &namespaceCache{cache: informers, cancel: cancel, handled: map[string]bool{}}
	go func() { _ = informers.Start(ctx) }()
	c.namespaces[namespace] = nc
	return nc
}

// watchFailed is told why a watch of the cluster broke and could not list again: when
// no answer came, the cluster is marked unreachable (its Services are told) — a Service
// whose objects did not change would otherwise not learn it from its cache. Other
// failures are logged as client-go does.
func (c *Cluster) watchFailed(ctx context.Context, r *toolscache.Reflector, err error) {
	var unreachable *UnreachableError
	if errors.As(c.Observe(err), &unreachable) {
		return
	}
	toolscache.DefaultWatchErrorHandler(ctx, r, err)
}

// synced returns the informer of obj's kind when it has listed its objects, starting it
// (and its change reports) when it was not.
func (c *Cluster) synced(ctx context.Context, nc *namespaceCache, obj client.Object) bool {
	gvk, err := apiutil.GVKForObject(obj, c.pool.opts.Scheme)
	if err != nil {
		return false
	}
	informer, err := nc.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return false
	}
	key := gvk.String()
	if _, unstructuredKind := obj.(*unstructured.Unstructured); unstructuredKind {
		key += "/unstructured"
	}
	nc.mu.Lock()
	first := !nc.handled[key]
	nc.handled[key] = true
	nc.mu.Unlock()
	if first {
		if _, err := informer.AddEventHandler(changes{cluster: c}); err != nil {
			nc.mu.Lock()
			delete(nc.handled, key)
			nc.mu.Unlock()
		}
	}
	return informer.HasSynced()
}

// changes reports the changes an informer sees (not those of its first list) to the
// pool's Changed, for the Services that use the cluster.
type changes struct{ cluster *Cluster }

func (h changes) OnAdd(obj any, isInInitialList bool) {
	if !isInInitialList {
		h.report(nil, obj)
	}
}

func (h changes) OnUpdate(old, now any) { h.report(old, now) }

func (h changes) OnDelete(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	h.report(obj, nil)
}

func (h changes) report(old, now any) {
	changed := h.cluster.pool.opts.Changed
	if changed == nil {
		return
	}
	oldObj, _ := old.(client.Object)
	nowObj, _ := now.(client.Object)
	subject := nowObj
	if subject == nil {
		subject = oldObj
	}
	if subject == nil {
		return
	}
	for _, owner := range h.cluster.ownersOf(subject) {
		changed(owner, oldObj, nowObj)
	}
}

// ownersOf are the users of the cluster that deploy into obj's namespace and whose
// object it may be (the pool's Owner says whose it claims to be).
func (c *Cluster) ownersOf(obj client.Object) []types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	var owners []types.NamespacedName
	for owner, u := range c.users {
		if u.namespace == obj.GetNamespace() && c.pool.opts.Owns(owner, obj) {
			owners = append(owners, owner)
		}
	}
	return owners
}

// reader reads one namespace of a cluster: cached where the kind's watch has listed it.
type reader struct {
	cluster   *Cluster
	namespace string
}

func (r *reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key.Namespace == r.namespace {
		if nc := r.cluster.namespaceCache(r.namespace); nc != nil && r.cluster.synced(ctx, nc, obj) {
			return nc.cache.Get(ctx, key, obj, opts...)
		}
	}
	return r.cluster.Client.Get(ctx, key, obj, opts...)
}

func (r *reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	listOpts := (&client.ListOptions{}).ApplyOptions(opts)
	if listOpts.Namespace == r.namespace && listOpts.FieldSelector == nil {
		if item := r.itemOf(list); item != nil {
			if nc := r.cluster.namespaceCache(r.namespace); nc != nil && r.cluster.synced(ctx, nc, item) {
				return nc.cache.List(ctx, list, opts...)
			}
		}
	}
	return r.cluster.Client.List(ctx, list, opts...)
}

// itemOf returns an empty object of a list's items, or nil.
func (r *reader) itemOf(list client.ObjectList) client.Object {
	gvk, err := apiutil.GVKForObject(list, r.cluster.pool.opts.Scheme)
	if err != nil || !strings.HasSuffix(gvk.Kind, "List") {
		return nil
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	if _, ok := list.(*unstructured.UnstructuredList); ok {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
	return newTyped(r.cluster.pool.opts.Scheme, gvk)
}

func newTyped(scheme *runtime.Scheme, gvk schema.GroupVersionKind) client.Object {
	obj, err := scheme.New(gvk)
	if err != nil {
		return nil
	}
	typed, _ := obj.(client.Object)
	return typed
}
