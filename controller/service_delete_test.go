package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// Deleting a Service with the Delete policy deletes its objects node by node, dependents
// first (reverse dependency order), then the Service goes.
func TestDeleteInReverseDependencyOrder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := createService(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), nil)
	waitReady(t, key)

	// Watch the deletions as the API server orders them.
	order := make(chan string, 16)
	watchKind := func(list client.ObjectList) watch.Interface {
		w, err := env.client.Watch(ctx, list, client.InNamespace(ns))
		g.Expect(err).NotTo(HaveOccurred())
		return w
	}
	for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &corev1.SecretList{}, &corev1.ServiceList{}} {
		w := watchKind(list)
		defer w.Stop()
		go func() {
			for event := range w.ResultChan() {
				if event.Type == watch.Deleted {
					obj := event.Object.(client.Object)
					if node := obj.GetLabels()["calaf.io/node"]; node != "" {
						order <- node
					}
				}
			}
		}()
	}

	svc := getService(g, key)
	g.Expect(env.client.Delete(ctx, svc)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, key, &v1alpha1.Service{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())

	var deleted []string
	timeout := time.After(5 * time.Second)
	for len(deleted) < 4 {
		select {
		case node := <-order:
			deleted = append(deleted, node)
		case <-timeout:
			t.Fatalf("saw only %v deleted", deleted)
		}
	}
	g.Expect(deleted).To(Equal([]string{"front", "top", "middle", "base"}))
}

// Deleting a Service with the Orphan policy leaves its objects, without Calaf's labels.
func TestDeleteOrphansObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := createService(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), nil)
	waitReady(t, key)
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan })
	waitReady(t, key)

	g.Expect(env.client.Delete(ctx, getService(g, key))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, key, &v1alpha1.Service{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())

	for _, name := range []string{"demo-base", "demo-top"} {
		cm := getConfigMap(g, ns, name)
		g.Expect(cm.Labels).NotTo(HaveKey("calaf.io/service"))
		g.Expect(cm.Labels).NotTo(HaveKey("app.kubernetes.io/managed-by"))
	}
	var front corev1.Service
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &front)).To(Succeed())
	g.Expect(front.Labels).NotTo(HaveKey("calaf.io/service"))
}
