package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
)

// notInstantiated tells whether a Service says, for its current generation, that nothing
// of it is deployed.
func notInstantiated(g Gomega, key client.ObjectKey) *v1alpha1.Service {
	svc := getService(g, key)
	ready := condition(svc, v1alpha1.ConditionReady)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonNotInstantiated), "Ready: %s", ready.Message)
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s", ready.Message)
	g.Expect(ready.ObservedGeneration).To(Equal(svc.Generation))
	g.Expect(svc.Status.InstantiationState).To(Equal(v1alpha1.NotInstantiated))
	g.Expect(svc.Status.ObservedGeneration).To(Equal(svc.Generation))
	return svc
}

// ownedConfigMaps lists the ConfigMaps that carry a Service's label.
func ownedConfigMaps(g Gomega, ns, service string) []string {
	list := &corev1.ConfigMapList{}
	g.Expect(env.client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelService: service})).To(Succeed())
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	return names
}

// A Service created NOT_INSTANTIATED deploys nothing and does not even fetch its package
// (it names an upload that does not exist), yet it is Ready for what it asks and keeps its
// finalizer; once INSTANTIATED it fetches, deploys and says INSTANTIATED.
func TestCreatedNotInstantiated(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	key := client.ObjectKey{Namespace: ns, Name: "vnf"}
	missing := v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: "not-uploaded", SHA256: strings.Repeat("0", 64)}}
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: v1alpha1.ServiceSpec{Source: missing, InstantiationState: v1alpha1.NotInstantiated}}
	g.Expect(env.client.Create(context.Background(), svc)).To(Succeed())

	var got *v1alpha1.Service
	g.Eventually(func(g Gomega) { got = notInstantiated(g, key) }, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(controllerutil.ContainsFinalizer(got, v1alpha1.ServiceFinalizer)).To(BeTrue())
	g.Expect(got.Status.Package).To(BeNil(), "the package is not fetched")
	g.Expect(got.Status.LastAttemptedRevision).To(BeEmpty())
	g.Expect(condition(got, v1alpha1.ConditionSourceReady)).To(BeNil())

	// A new package named while NOT_INSTANTIATED is not deployed either.
	src := upload(t, ns, "vnf", layeredPackage())
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Source = src })
	handledReconcile(t, key)
	g.Eventually(func(g Gomega) { notInstantiated(g, key) }, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(ownedConfigMaps(g, ns, "vnf")).To(BeEmpty())

	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.InstantiationState = v1alpha1.Instantiated })
	got = waitReady(t, key)
	g.Expect(got.Status.InstantiationState).To(Equal(v1alpha1.Instantiated))
	g.Expect(condition(got, v1alpha1.ConditionReady).Reason).To(Equal(v1alpha1.ReasonSucceeded))
	g.Expect(ownedConfigMaps(g, ns, "vnf")).To(ConsistOf("vnf-base", "vnf-top"))
}

// A Service that runs goes NOT_INSTANTIATED as it would be deleted — its objects node by
// node, dependents first, then the claims of its StatefulSets unless retainVolumes (the
// deletion policy Orphan does not apply: nothing may run) — and stays, with its finalizer,
// saying nothing deployed; INSTANTIATED again it deploys again; deleted, it goes.
func TestNotInstantiatedTearsDown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := createService(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), nil)
	updateService(t, key, func(svc *v1alpha1.Service) {
		svc.Spec.DeletionPolicy, svc.Spec.RetainVolumes = v1alpha1.DeletionPolicyOrphan, true
	})
	svc := waitReady(t, key)
	g.Expect(svc.Status.InstantiationState).To(Equal(v1alpha1.Instantiated))
	claim := volumeClaim(t, ns, "data-demo-db-0", "demo")

	deleted := watchDeletions(t, ns)
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.InstantiationState = v1alpha1.NotInstantiated })
	g.Eventually(func(g Gomega) { svc = notInstantiated(g, key) }, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(deleted.nodes(t, 4)).To(Equal([]string{"front", "top", "middle", "base"}))
	g.Expect(ownedConfigMaps(g, ns, "demo")).To(BeEmpty())
	g.Expect(controllerutil.ContainsFinalizer(svc, v1alpha1.ServiceFinalizer)).To(BeTrue())
	g.Expect(svc.Status.Nodes).To(BeEmpty())
	g.Expect(svc.Status.Inventory).To(BeEmpty())
	g.Expect(svc.Status.Outputs).To(BeEmpty())
	g.Expect(condition(svc, v1alpha1.ConditionApplied)).To(BeNil())
	kept := &corev1.PersistentVolumeClaim{}
	g.Expect(env.client.Get(ctx, client.ObjectKeyFromObject(claim), kept)).To(Succeed())
	g.Expect(kept.DeletionTimestamp).To(BeNil(), "retainVolumes keeps the claim")
	g.Expect(kept.Labels).To(HaveKeyWithValue(v1alpha1.LabelService, "demo"), "the kept claim is still the Service's")

	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.InstantiationState = "" })
	svc = waitReady(t, key)
	g.Expect(svc.Status.InstantiationState).To(Equal(v1alpha1.Instantiated))
	g.Expect(ownedConfigMaps(g, ns, "demo")).To(ConsistOf("demo-base", "demo-top"))
	g.Expect(getConfigMap(g, ns, "demo-base").Data).To(HaveKeyWithValue("greeting", "hello"))

	// Without retainVolumes the claims go too (this test plays the controller that
	// releases a deleted claim's protection).
	updateService(t, key, func(svc *v1alpha1.Service) {
		svc.Spec.RetainVolumes, svc.Spec.InstantiationState = false, v1alpha1.NotInstantiated
	})
	g.Eventually(func(g Gomega) {
		err := env.client.Get(ctx, client.ObjectKeyFromObject(claim), kept)
		if err == nil && kept.DeletionTimestamp != nil && len(kept.Finalizers) > 0 {
			kept.Finalizers = nil
			g.Expect(env.client.Update(ctx, kept)).To(Succeed())
		}
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the claim is deleted: %v", err)
		notInstantiated(g, key)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	g.Expect(env.client.Delete(ctx, getService(g, key))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, key, &v1alpha1.Service{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
}

// volumeClaim creates a claim labelled for a Service, as its StatefulSets' claims are.
func volumeClaim(t *testing.T, ns, name, service string) *corev1.PersistentVolumeClaim {
	t.Helper()
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.LabelService: service, v1alpha1.LabelServiceNamespace: ns}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
		},
	}
	NewWithT(t).Expect(env.client.Create(context.Background(), claim)).To(Succeed())
	return claim
}

// deletions are the nodes whose objects the API server deleted, in order.
type deletions chan string

// watchDeletions watches the deletions of the ConfigMaps, Secrets and Services of a
// namespace until the test ends.
func watchDeletions(t *testing.T, ns string) deletions {
	t.Helper()
	order := make(deletions, 64)
	for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &corev1.SecretList{}, &corev1.ServiceList{}} {
		w, err := env.client.Watch(context.Background(), list, client.InNamespace(ns))
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		t.Cleanup(w.Stop)
		go func() {
			for event := range w.ResultChan() {
				if event.Type != watch.Deleted {
					continue
				}
				if node := event.Object.(client.Object).GetLabels()[v1alpha1.LabelNode]; node != "" {
					order <- node
				}
			}
		}()
	}
	return order
}

// nodes returns the first n nodes deleted.
func (d deletions) nodes(t *testing.T, n int) []string {
	t.Helper()
	var deleted []string
	timeout := time.After(10 * time.Second)
	for len(deleted) < n {
		select {
		case node := <-d:
			deleted = append(deleted, node)
		case <-timeout:
			t.Fatalf("saw only %v deleted", deleted)
		}
	}
	return deleted
}
