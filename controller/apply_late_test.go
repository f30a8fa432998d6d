package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// An object this process applied, which the cache does not hold yet because its watch has
// not brought the applied version (a loaded API server), is not applied again: it is as
// the apply left it, and waits to be observed. Once its watch brought its deletion, an
// object the cache does not hold is gone, and is applied again.
func TestLateObjectsNotAppliedAgain(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	applies := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			applies++
			return nil
		},
	}).Build()
	r := &ServiceReconciler{Client: c}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	r.watched.Store(gvk, true)
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", UID: "uid-1"}}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace("ns")
	obj.SetName("cm")
	obj.SetLabels(map[string]string{v1alpha1.LabelService: "svc", v1alpha1.LabelServiceNamespace: "ns"})
	id := render.ObjectID(obj)
	inv := indexInventory([]v1alpha1.InventoryEntry{{ID: id, Version: "v1"}})
	// This process applied it, and the apply answered resource version 20.
	key := echoKey(gvk, "ns", "cm")
	r.fingerprints.set(string(svc.UID)+"/"+id, fingerprint{desired: desiredHash(obj), live: "fields"})
	r.echoes.begin(key)
	r.echoes.done(key, "20")
	a := &access{cached: c, direct: c, writer: c}

	result, err := r.applyObjects(ctx, a, svc, inv, []*unstructured.Unstructured{obj})
	if err != nil || applies != 0 || !result.unseen["ConfigMap/cm"] || !result.done[id] {
		t.Fatalf("late in the cache: err %v, %d applies, unseen %v, done %v; want no apply, unseen and done", err, applies, result.unseen, result.done)
	}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", ResourceVersion: "25"}}
	r.ownedChanges(gvk).Delete(event.DeleteEvent{Object: other})
	if result, err = r.applyObjects(ctx, a, svc, inv, []*unstructured.Unstructured{obj}); err != nil || applies != 0 || !result.unseen["ConfigMap/cm"] {
		t.Fatalf("another object's deletion: err %v, %d applies, unseen %v; want it still late", err, applies, result.unseen)
	}
	deleted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: "25"}}
	r.ownedChanges(gvk).Delete(event.DeleteEvent{Object: deleted})
	result, err = r.applyObjects(ctx, a, svc, inv, []*unstructured.Unstructured{obj})
	if err != nil || applies != 1 || len(result.unseen) != 0 {
		t.Fatalf("gone after its watch brought its deletion: err %v, %d applies, unseen %v; want it applied again", err, applies, result.unseen)
	}
}

// Only applies of watched kinds wait for their echo: the watch of a kind not watched yet
// starts after the apply and lists the object as it is then (at or after the apply, the
// version a controller gave it since included), so nothing of it is remembered — nor
// held back, nor taken to be late.
func TestEchoesOnlyOfWatchedKinds(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	r := &ServiceReconciler{Client: c}
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", UID: "uid-1"}}
	a := &access{cached: c, direct: c, writer: c}
	object := func(kind, name string) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: kind})
		obj.SetNamespace("ns")
		obj.SetName(name)
		obj.SetLabels(map[string]string{v1alpha1.LabelService: "svc", v1alpha1.LabelServiceNamespace: "ns"})
		return obj
	}
	r.watched.Store(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, true)
	objects := []*unstructured.Unstructured{object("ConfigMap", "watched"), object("Endpoints", "not-watched")}
	if _, err := r.applyObjects(ctx, a, svc, indexInventory(nil), objects); err != nil {
		t.Fatal(err)
	}
	if got := r.echoes.size(); got != 1 {
		t.Errorf("%d objects wait for their echo, want 1 (the ConfigMap's)", got)
	}
	if !r.echoes.unseen(echoKey(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "ns", "watched"), "", time.Now()) {
		t.Error("the watched kind's apply is not waited for")
	}
}
