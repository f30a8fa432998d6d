package cmmode

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// Reader reads Services and Operations from their ConfigMaps, read with ConfigMaps (a
// cache of them or the API server); it passes the reads of every other kind to Reader.
type Reader struct {
	client.Reader
	ConfigMaps client.Reader
	Store      *Store
}

// kindOf returns the ConfigMap mode's kind of obj or of a list (false for other kinds).
func kindOf(obj runtime.Object) (kind, bool) {
	var name string
	switch o := obj.(type) {
	case *v1alpha1.Service, *v1alpha1.ServiceList:
		name = "Service"
	case *v1alpha1.Operation, *v1alpha1.OperationList:
		name = "Operation"
	case *metav1.PartialObjectMetadata:
		if o.GroupVersionKind().Group == v1alpha1.GroupVersion.Group {
			name = o.Kind
		}
	}
	k, ok := kinds()[name]
	return k, ok
}

// otherCalafKind tells whether obj is one of Calaf's API types that ConfigMap mode does
// not keep (VnfPackage, LifecycleSubscription, …): they need their CRDs, absent here.
func otherCalafKind(obj runtime.Object) bool {
	if _, ok := kindOf(obj); ok {
		return false
	}
	t := reflect.TypeOf(obj)
	return t.Kind() == reflect.Pointer && t.Elem().PkgPath() == reflect.TypeFor[v1alpha1.Service]().PkgPath()
}

// Get reads a Service or an Operation from its ConfigMaps, anything else from Reader;
// Calaf's other kinds do not exist in ConfigMap mode.
func (r *Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if otherCalafKind(obj) {
		return apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: reflect.TypeOf(obj).Elem().Name()}, key.Name)
	}
	k, ok := kindOf(obj)
	if !ok {
		return r.Reader.Get(ctx, key, obj, opts...)
	}
	found, _, err := r.Store.read(ctx, r.ConfigMaps, k, key)
	if err != nil {
		return err
	}
	return copyInto(found, obj)
}

// List lists Services or Operations from their ConfigMaps, anything else from Reader;
// Calaf's other kinds have no object in ConfigMap mode.
func (r *Reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if otherCalafKind(list) {
		return apimeta.SetList(list, nil)
	}
	k, ok := kindOf(list)
	if !ok {
		return r.Reader.List(ctx, list, opts...)
	}
	objs, err := r.Store.list(ctx, r.ConfigMaps, k, opts...)
	if err != nil {
		return err
	}
	switch l := list.(type) {
	case *v1alpha1.ServiceList:
		l.Items = make([]v1alpha1.Service, 0, len(objs))
		for _, o := range objs {
			l.Items = append(l.Items, *o.(*v1alpha1.Service))
		}
	case *v1alpha1.OperationList:
		l.Items = make([]v1alpha1.Operation, 0, len(objs))
		for _, o := range objs {
			l.Items = append(l.Items, *o.(*v1alpha1.Operation))
		}
	}
	return nil
}

// copyInto copies a typed object into obj (the same type, or its metadata alone).
func copyInto(from client.Object, obj client.Object) error {
	if partial, ok := obj.(*metav1.PartialObjectMetadata); ok {
		gvk := partial.GroupVersionKind()
		if accessor, err := metaOf(from); err == nil {
			partial.ObjectMeta = *accessor.DeepCopy()
		}
		partial.SetGroupVersionKind(gvk)
		return nil
	}
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, obj)
}

func metaOf(obj client.Object) (*metav1.ObjectMeta, error) {
	switch o := obj.(type) {
	case *v1alpha1.Service:
		return &o.ObjectMeta, nil
	case *v1alpha1.Operation:
		return &o.ObjectMeta, nil
	}
	return nil, fmt.Errorf("%T has no ConfigMap mode", obj)
}

// Client is a client.Client for ConfigMap mode: Services and Operations are read through
// Reader and written as their ConfigMaps (admitted as the API server would, the status
// into the companion); every other kind goes to Client, with references to Calaf's
// objects written as references to their ConfigMaps.
type Client struct {
	client.Client
	Reader *Reader
}

// NewClient returns the ConfigMap mode's client over c (every other kind), reading
// Services and Operations from configMaps.
func NewClient(c client.Client, configMaps client.Reader, store *Store) *Client {
	return &Client{Client: c, Reader: &Reader{Reader: c, ConfigMaps: configMaps, Store: store}}
}

func (c *Client) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *Client) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Reader.List(ctx, list, opts...)
}

// IsObjectNamespaced says Calaf's kinds are namespaced without asking the API server
// (which does not know them).
func (c *Client) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	if _, ok := kindOf(obj); ok {
		return true, nil
	}
	return c.Client.IsObjectNamespaced(obj)
}

// Create admits and writes a Service or an Operation as its ConfigMaps.
func (c *Client) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	k, ok := kindOf(obj)
	if !ok {
		RewriteOwners(obj)
		return c.Client.Create(ctx, obj, opts...)
	}
	return c.Reader.Store.create(ctx, k, obj)
}

// Update writes a Service's or an Operation's metadata and spec (refused on a stale
// resourceVersion, as the API server refuses it).
func (c *Client) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	k, ok := kindOf(obj)
	if !ok {
		RewriteOwners(obj)
		return c.Client.Update(ctx, obj, opts...)
	}
	store := c.Reader.Store
	p, err := readPair(ctx, store.Client, k, client.ObjectKeyFromObject(obj))
	if err != nil {
		return err
	}
	if !p.admitted() {
		return k.notFound(obj.GetName())
	}
	if rv := obj.GetResourceVersion(); rv != "" && rv != p.resourceVersion() {
		return conflict(k, obj.GetName())
	}
	return store.update(ctx, k, p, obj)
}

// Patch applies a merge or JSON patch to a Service or an Operation as stored, then
// writes it as Update does; a merge patch without a resourceVersion is tried again on a
// conflict, as the API server does.
func (c *Client) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	k, ok := kindOf(obj)
	if !ok {
		RewriteOwners(obj)
		return c.Client.Patch(ctx, obj, patch, opts...)
	}
	store := c.Reader.Store
	return c.patch(ctx, k, obj, patch, func(p pair, patched client.Object) error { return store.update(ctx, k, p, patched) })
}

// patch reads the object, applies patch to it and hands it to write; obj receives the
// object written.
func (c *Client) patch(ctx context.Context, k kind, obj client.Object, patch client.Patch, write func(pair, client.Object) error) error {
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	var locked bool
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, p, err := c.Reader.Store.read(ctx, c.Reader.Store.Client, k, client.ObjectKeyFromObject(obj))
		if err != nil {
			return err
		}
		patched, err := applyPatch(k, current, patch.Type(), data)
		if err != nil {
			return err
		}
		if rv := patched.GetResourceVersion(); rv != p.resourceVersion() {
			locked = true
			return conflict(k, obj.GetName())
		}
		if err := write(p, patched); err != nil {
			return err
		}
		return copyInto(patched, obj)
	})
	if locked {
		return conflict(k, obj.GetName())
	}
	return err
}

// applyPatch returns current with a merge or JSON patch applied.
func applyPatch(k kind, current client.Object, patchType types.PatchType, data []byte) (client.Object, error) {
	original, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	var patched []byte
	switch patchType {
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(original, data)
	case types.JSONPatchType:
		var ops jsonpatch.Patch
		if ops, err = jsonpatch.DecodePatch(data); err == nil {
			patched, err = ops.Apply(original)
		}
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the patch type %q is not supported in ConfigMap mode (use a merge or JSON patch)", patchType))
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj := k.newObj()
	if err := json.Unmarshal(patched, obj); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return obj, nil
}

// Delete deletes the ConfigMap of a Service or an Operation (its finalizers hold it, the
// companion goes with it).
func (c *Client) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	k, ok := kindOf(obj)
	if !ok {
		return c.Client.Delete(ctx, obj, opts...)
	}
	p, err := readPair(ctx, c.Reader.Store.Client, k, client.ObjectKeyFromObject(obj))
	if err != nil {
		return err
	}
	return c.Client.Delete(ctx, p.spec, opts...)
}

// DeleteAllOf is not offered for Calaf's kinds in ConfigMap mode.
func (c *Client) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if k, ok := kindOf(obj); ok {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: k.resource}, "deletecollection")
	}
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

// Status writes the status of a Service or an Operation into its companion.
func (c *Client) Status() client.SubResourceWriter {
	return &statusWriter{SubResourceWriter: c.Client.Status(), client: c}
}

type statusWriter struct {
	client.SubResourceWriter
	client *Client
}

func (w *statusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	k, ok := kindOf(obj)
	if !ok {
		return w.SubResourceWriter.Update(ctx, obj, opts...)
	}
	store := w.client.Reader.Store
	p, err := readPair(ctx, store.Client, k, client.ObjectKeyFromObject(obj))
	if err != nil {
		return err
	}
	if !p.admitted() {
		return k.notFound(obj.GetName())
	}
	if rv := obj.GetResourceVersion(); rv != "" && rv != p.resourceVersion() {
		return conflict(k, obj.GetName())
	}
	return store.updateStatus(ctx, k, p, obj)
}

func (w *statusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	k, ok := kindOf(obj)
	if !ok {
		return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	}
	store := w.client.Reader.Store
	return w.client.patch(ctx, k, obj, patch, func(p pair, patched client.Object) error { return store.updateStatus(ctx, k, p, patched) })
}

// conflict is the API server's error for a write over a newer object.
func conflict(k kind, name string) error {
	return apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: k.resource}, name,
		fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}
