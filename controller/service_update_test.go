package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

func createService(t *testing.T, ns, name string, src v1alpha1.Source, inputs map[string]string) client.ObjectKey {
	t.Helper()
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ServiceSpec{Source: src}}
	svc.Spec.Inputs = jsonInputs(inputs)
	NewWithT(t).Expect(env.client.Create(context.Background(), svc)).To(Succeed())
	return client.ObjectKeyFromObject(svc)
}

func jsonInputs(inputs map[string]string) map[string]apiextensionsv1.JSON {
	if inputs == nil {
		return nil
	}
	out := map[string]apiextensionsv1.JSON{}
	for k, v := range inputs {
		out[k] = apiextensionsv1.JSON{Raw: []byte(v)}
	}
	return out
}

func updateService(t *testing.T, key client.ObjectKey, change func(*v1alpha1.Service)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		svc := &v1alpha1.Service{}
		if err := env.client.Get(context.Background(), key, svc); err != nil {
			return err
		}
		change(svc)
		return env.client.Update(context.Background(), svc)
	}, 10*time.Second).Should(Succeed())
}

func getConfigMap(g Gomega, ns, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm
}

// Changing an input updates the objects in place (same UID), and the new generation is
// reported Ready.
func TestInputChangeUpdatesInPlace(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	key := createService(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), map[string]string{"greeting": `"hello"`})
	waitReady(t, key)
	before := getConfigMap(g, ns, "demo-base")

	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Inputs = jsonInputs(map[string]string{"greeting": `"bonjour"`}) })
	svc := waitReady(t, key)
	g.Expect(svc.Generation).To(BeEquivalentTo(2))
	after := getConfigMap(g, ns, "demo-base")
	g.Expect(after.Data).To(HaveKeyWithValue("greeting", "bonjour"))
	g.Expect(after.UID).To(Equal(before.UID))
	g.Expect(string(svc.Status.Outputs["greeting"].Raw)).To(Equal(`"bonjour"`))
}

// Removing a node template from the package prunes its objects; the others stay.
func TestRemovedNodeIsPruned(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	key := createService(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), nil)
	waitReady(t, key)
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "front"}, &corev1.Service{})).To(Succeed())

	files := layeredPackage()
	template := files["service.yaml"]
	files["service.yaml"] = template[:strings.Index(template, "    front:")] + template[strings.Index(template, "  outputs:"):]
	delete(files, "manifests/front.yaml")
	newSource := upload(t, ns, "demo", files)
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Source = newSource })
	svc := waitReady(t, key)
	g.Expect(svc.Status.Inventory).To(HaveLen(3))
	g.Eventually(func() bool {
		err := env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "front"}, &corev1.Service{})
		return apierrors.IsNotFound(err)
	}, 10*time.Second).Should(BeTrue())
	getConfigMap(g, ns, "demo-top")
}
