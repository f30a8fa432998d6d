package controller_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// What a new Service costs the API server, from its creation until it is Ready and a
// reconcile requested after that was handled, when its objects are healthy as soon as
// they exist (the layered package: four objects in four dependency stages): one apply
// per object, all in one reconcile; one status patch to Ready and one for the handled
// request; its state Secret created once; no read: the take-over check is the apply's
// own (create-only, as nothing is recorded or cached), there is no state Secret to read
// yet, and the cache or an apply's answer holds the rest; the requested reconcile, a
// no-op, sends nothing but its status patch.
func TestNewServiceRequests(t *testing.T) {
	g := NewWithT(t)
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
		"APPLY configmaps":      2,
		"APPLY secrets":         1,
		"APPLY services":        1,
		"POST secrets":          1,
		"PATCH services/status": 2,
	}))
}
