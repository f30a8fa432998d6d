package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// clearNamespace deletes a measured run's namespace and waits until it is gone, so that
// every run starts on a cluster holding only the test ground's own objects. Without it
// the later runs of a round pay for the earlier ones: the API server's ClusterIP
// allocator reads every allocated address on each Service it creates, so a Service
// costs more the more Services the cluster holds. The Calaf Services' finalizers are
// taken off first: their operator has stopped, and their objects go with the namespace.
func clearNamespace(ctx context.Context, c client.Client, namespace string) error {
	start := time.Now()
	services := &v1alpha1.ServiceList{}
	if err := c.List(ctx, services, client.InNamespace(namespace)); err != nil {
		return err
	}
	for i := range services.Items {
		svc := &services.Items[i]
		if len(svc.Finalizers) == 0 {
			continue
		}
		patch := client.MergeFrom(svc.DeepCopy())
		svc.Finalizers = nil
		if err := c.Patch(ctx, svc, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
		return err
	}
	for deadline := time.Now().Add(15 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns)
		if apierrors.IsNotFound(err) {
			fmt.Printf("namespace %s cleared in %.1f s\n", namespace, time.Since(start).Seconds())
			return nil
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("namespace %s not gone after 15 minutes", namespace)
}
