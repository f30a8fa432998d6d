package cmmode

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// Cache is the cache of a manager in ConfigMap mode: Services and Operations, read and
// watched through the cache of their ConfigMaps (ConfigMaps); every other kind through
// the manager's own cache.
type Cache struct {
	cache.Cache
	ConfigMaps cache.Cache
	Store      *Store
	reader     *Reader
}

// NewCache returns the ConfigMap mode's cache over main (every other kind).
func NewCache(main, configMaps cache.Cache, store *Store) *Cache {
	return &Cache{Cache: main, ConfigMaps: configMaps, Store: store, reader: &Reader{Reader: main, ConfigMaps: configMaps, Store: store}}
}

func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}

// GetInformer returns, for a Service or an Operation, an informer whose events carry the
// typed objects of the ConfigMaps the ConfigMap cache sees.
// Calaf's other kinds, which ConfigMap mode does not keep, have an informer that never
// tells of anything.
func (c *Cache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if k, ok := kindOf(obj); ok {
		return c.informer(ctx, k, opts...)
	}
	if otherCalafKind(obj) {
		return c.informer(ctx, kind{}, opts...)
	}
	return c.Cache.GetInformer(ctx, obj, opts...)
}

func (c *Cache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if gvk.Group == v1alpha1.GroupVersion.Group {
		return c.informer(ctx, kinds()[gvk.Kind], opts...) // kind{} for the kinds not kept
	}
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}

func (c *Cache) informer(ctx context.Context, k kind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inner, err := c.ConfigMaps.GetInformer(ctx, &corev1.ConfigMap{}, opts...)
	if err != nil {
		return nil, err
	}
	return &informer{Informer: inner, kind: k, reader: c.ConfigMaps, store: c.Store}, nil
}

// informer hands its handlers the typed objects of kind's ConfigMaps: an event of a spec
// ConfigMap as the event of its object, an event of a companion as an update of its
// object (the status or the generation moved).
type informer struct {
	cache.Informer
	kind   kind
	reader client.Reader
	store  *Store
}

func (i *informer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandler(i.translating(h))
}

func (i *informer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithResyncPeriod(i.translating(h), resync)
}

func (i *informer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithOptions(i.translating(h), options)
}

// translating wraps h; the informer of a kind not kept (kind{}) tells it nothing.
func (i *informer) translating(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	if i.kind.newObj == nil {
		return toolscache.ResourceEventHandlerFuncs{}
	}
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				if old, now := i.event(cm, nil); now != nil {
					if old != nil {
						h.OnUpdate(old, now)
					} else {
						h.OnAdd(now, initial)
					}
				}
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			oldCM, _ := oldObj.(*corev1.ConfigMap)
			newCM, ok := newObj.(*corev1.ConfigMap)
			if !ok {
				return
			}
			if old, now := i.event(newCM, oldCM); now != nil && old != nil {
				h.OnUpdate(old, now)
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok || KindOf(cm) != i.kind.name {
				return
			}
			if gone := i.object(pair{spec: cm, status: i.companion(cm)}); gone != nil {
				h.OnDelete(gone)
			}
		},
	}
}

// event returns the objects before and after a change of cm (old nil: an add): for a
// spec ConfigMap, with the companion as cached; for a companion, with its spec ConfigMap
// as cached (an add of the first companion is the add of the object). nil when cm is not
// of this kind or the object is not admitted.
func (i *informer) event(cm, old *corev1.ConfigMap) (before, after client.Object) {
	switch cm.Labels[LabelKind] {
	case i.kind.name:
		if KindOf(cm) != i.kind.name {
			return nil, nil
		}
		status := i.companion(cm)
		after = i.object(pair{spec: cm, status: status})
		if old != nil {
			before = i.object(pair{spec: old, status: status})
		}
		return before, after
	case statusKind(i.kind.name):
		spec := i.specOf(cm)
		if spec == nil {
			return nil, nil
		}
		after = i.object(pair{spec: spec, status: cm})
		if old != nil {
			before = i.object(pair{spec: spec, status: old})
		}
		if before == nil && after != nil {
			before = i.kind.newObj() // the first admission: an update from nothing
			before.SetNamespace(after.GetNamespace())
			before.SetName(after.GetName())
		}
		return before, after
	}
	return nil, nil
}

// object is the typed object of p, nil when it has none.
func (i *informer) object(p pair) client.Object {
	if !p.admitted() {
		return nil
	}
	obj, err := p.object(i.kind, ownerKinds(context.Background(), i.reader, p.spec.Namespace))
	if err != nil {
		return nil
	}
	return obj
}

// companion is the cached companion of a spec ConfigMap (nil when not cached).
func (i *informer) companion(cm *corev1.ConfigMap) *corev1.ConfigMap {
	status := &corev1.ConfigMap{}
	if err := i.reader.Get(context.Background(), client.ObjectKey{Namespace: cm.Namespace, Name: StatusName(cm.Name)}, status); err != nil {
		return nil
	}
	return status
}

// specOf is the cached spec ConfigMap a companion belongs to.
func (i *informer) specOf(status *corev1.ConfigMap) *corev1.ConfigMap {
	owner := metav1.GetControllerOf(status)
	if owner == nil {
		return nil
	}
	cm := &corev1.ConfigMap{}
	if err := i.reader.Get(context.Background(), client.ObjectKey{Namespace: status.Namespace, Name: owner.Name}, cm); err != nil || cm.UID != owner.UID {
		return nil
	}
	return cm
}
