package cmmode

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"calaf.io/calaf/api/v1alpha1"
)

// View is a manager as the reconcilers of ConfigMap mode see it: its client, cache, API
// reader and event recorders speak Service and Operation and keep them as ConfigMaps of
// one namespace; all else is the manager's. Reconcilers set up with a View run on
// ConfigMaps unchanged.
type View struct {
	ctrl.Manager
	client    *Client
	cache     *Cache
	apiReader *Reader
}

func (v *View) GetClient() client.Client             { return v.client }
func (v *View) GetCache() cache.Cache                { return v.cache }
func (v *View) GetFieldIndexer() client.FieldIndexer { return v.cache }
func (v *View) GetAPIReader() client.Reader          { return v.apiReader }

// GetEventRecorder records the events of a Service or an Operation on its ConfigMap.
func (v *View) GetEventRecorder(name string) recorder.EventRecorder {
	return eventRecorder{v.Manager.GetEventRecorder(name)}
}

// NewView adds ConfigMap mode for namespace to mgr — a cache of the ConfigMaps labelled
// calaf.io/kind, and the admission of their specs — and returns the view its reconcilers
// are set up with.
func NewView(mgr ctrl.Manager, namespace string) (*View, error) {
	if namespace == "" {
		return nil, fmt.Errorf("ConfigMap mode needs a namespace")
	}
	schemas, err := NewSchemas()
	if err != nil {
		return nil, err
	}
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()})
	if err != nil {
		return nil, err
	}
	labelled, err := labels.NewRequirement(LabelKind, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	configMaps, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces:    map[string]cache.Config{namespace: {}},
		DefaultLabelSelector: labels.NewSelector().Add(*labelled),
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(configMaps); err != nil {
		return nil, err
	}
	store := &Store{Schemas: schemas, Client: direct}
	v := &View{
		Manager:   mgr,
		client:    NewClient(mgr.GetClient(), configMaps, store),
		cache:     NewCache(mgr.GetCache(), configMaps, store),
		apiReader: &Reader{Reader: mgr.GetAPIReader(), ConfigMaps: direct, Store: store},
	}
	admission := &Admission{Store: store, Recorder: mgr.GetEventRecorder("calaf-operator")}
	return v, admission.setup(mgr, configMaps)
}

// Admission admits the specs of ConfigMaps as they are written (Store.Admit), and records
// a Warning event Invalid on a ConfigMap whose spec is refused.
type Admission struct {
	Store    *Store
	Recorder recorder.EventRecorder
}

func (a *Admission) setup(mgr ctrl.Manager, configMaps cache.Cache) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("configmap-admission").
		WatchesRawSource(source.Kind(configMaps, &corev1.ConfigMap{}, handler.TypedEnqueueRequestsFromMapFunc(specConfigMap))).
		Complete(a)
}

// specConfigMap maps a ConfigMap to the spec ConfigMap it is or belongs to.
func specConfigMap(_ context.Context, cm *corev1.ConfigMap) []reconcile.Request {
	if KindOf(cm) != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(cm)}}
	}
	for _, ref := range cm.OwnerReferences {
		if ref.Kind == "ConfigMap" && ref.Controller != nil && *ref.Controller {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: cm.Namespace, Name: ref.Name}}}
		}
	}
	return nil
}

// Reconcile admits the spec of one ConfigMap.
func (a *Admission) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := a.Store.Client.Get(ctx, req.NamespacedName, cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	refused, err := a.Store.Admit(ctx, cm)
	if refused != nil && a.Recorder != nil {
		a.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonInvalid, "Admit", "%s", oneLine(refused.Error()))
	}
	return ctrl.Result{}, err
}

// eventRecorder records an event of a Service or an Operation on its ConfigMap.
type eventRecorder struct {
	recorder.EventRecorder
}

func (r eventRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(asConfigMap(regarding), asConfigMap(related), eventtype, reason, action, note, args...)
}

// asConfigMap is the ConfigMap standing for a Service or an Operation, obj itself else.
func asConfigMap(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *v1alpha1.Service:
		return &corev1.ConfigMap{ObjectMeta: *o.ObjectMeta.DeepCopy()}
	case *v1alpha1.Operation:
		return &corev1.ConfigMap{ObjectMeta: *o.ObjectMeta.DeepCopy()}
	}
	return obj
}
