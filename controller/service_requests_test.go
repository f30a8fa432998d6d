package controller_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// What a new Service of a package the operator compiled before costs the API server,
// from its creation until it is Ready and a reconcile requested after that was handled,
// when its objects are healthy as soon as they exist (the layered package: four objects
// in four dependency stages): one apply per object, all in one reconcile; one status
// patch to Ready and one for the handled request; no state Secret (its inputs are bound
// onto the package's compile, which a restarted operator makes again with one compile of
// the package; the first Service of a package writes one, TestStateKeptUnlessBound); no
// read: the take-over check is the apply's own (create-only, as nothing is recorded or
// cached), and the cache or an apply's answer holds the rest; the requested reconcile, a
// no-op, sends nothing but its status patch. A status patch asks for the Service's
// metadata alone in answer (the operator reads nothing else of it).
func TestNewServiceRequests(t *testing.T) {
	g := NewWithT(t)
	first := newNamespace(t) // the operator compiled the package before (for the first Service of it)
	waitReady(t, createService(t, first, "first", upload(t, first, "first", layeredPackage()), nil))
	ns := newNamespace(t)
	src := upload(t, ns, "demo", layeredPackage())
	svc := &v1alpha1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo", Finalizers: []string{v1alpha1.ServiceFinalizer}},
		Spec:       v1alpha1.ServiceSpec{Source: src, Inputs: jsonInputs(map[string]string{"greeting": `"hello from ` + ns + `"`})},
	}
	g.Expect(env.client.Create(context.Background(), svc)).To(Succeed())
	key := client.ObjectKeyFromObject(svc)
	waitReady(t, key)
	handledReconcile(t, key)

	counts := map[string]int{}
	for class, n := range requestsIn(ns) {
		verb, rest, _ := strings.Cut(class, " ")
		resource, name, _ := strings.Cut(rest, " ")
		switch {
		case verb == "POST" && strings.HasPrefix(resource, "events"), verb == "LIST", verb == "WATCH":
			continue // events go out asynchronously; the cache's reads are not per Service
		case verb == "GET" && name == src.Upload.ConfigMapName:
			continue // the package, read once per operator and package
		case verb == "GET":
			verb += strings.TrimPrefix(name, strings.Fields(name)[0])
		}
		counts[verb+" "+resource] += n
	}
	g.Expect(counts).To(Equal(map[string]int{
		"APPLY configmaps":               2,
		"APPLY secrets":                  1,
		"APPLY services":                 1,
		"PATCH:metadata services/status": 2,
	}))
}

// The compiled package is kept in the Service's state Secret only when it was compiled
// in full: the first Service of a package has one; a later Service whose inputs are
// bound onto the package's compile has none (one compile of the package binds them again
// after a restart).
func TestStateKeptUnlessBound(t *testing.T) {
	g := NewWithT(t)
	ns, other := newNamespace(t), newNamespace(t) // the package's Service "front" is one per namespace
	plain := createService(t, ns, "plain", upload(t, ns, "plain", layeredPackage()), nil)
	waitReady(t, plain)
	bound := createService(t, other, "bound", upload(t, other, "bound", layeredPackage()), map[string]string{"greeting": `"hi"`})
	waitReady(t, bound)
	var state corev1.Secret
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "plain" + v1alpha1.StateSecretSuffix}, &state)).To(Succeed())
	g.Expect(state.Data).To(HaveKey("clout.json.gz"))
	err := env.client.Get(context.Background(), client.ObjectKey{Namespace: other, Name: "bound" + v1alpha1.StateSecretSuffix}, &state)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the bound Service's state Secret: %v", err)
}
