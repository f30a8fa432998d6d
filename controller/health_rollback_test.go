package controller

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// A Deployment rolled back from a broken image still has the broken revision's pods: they
// fail the node only while that revision is the Deployment's current one. Once the
// Deployment's controller has looked at the restored template (or before it has looked at
// all), the node waits instead.
func TestRollbackNotFailedByTheRevisionItLeaves(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"}}
	node := &render.Node{Name: "web"}
	labels := map[string]string{v1alpha1.LabelService: "svc", v1alpha1.LabelNode: render.LabelValue("web")}
	deployment := func(generation, observed int64, revision string) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"namespace": "ns", "name": "web", "uid": "d-uid", "generation": generation,
				"annotations": map[string]any{"deployment.kubernetes.io/revision": revision}},
			"spec":   map[string]any{"replicas": int64(1)},
			"status": map[string]any{"observedGeneration": observed, "replicas": int64(2), "updatedReplicas": int64(1), "readyReplicas": int64(1)},
		}}
		return obj
	}
	owner := func(kind, name, uid string) []metav1.OwnerReference {
		yes := true
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: k8stypes.UID(uid), Controller: &yes}}
	}
	sets := []*appsv1.ReplicaSet{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-good", Labels: labels, OwnerReferences: owner("Deployment", "web", "d-uid"),
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "3"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-broken", Labels: labels, OwnerReferences: owner("Deployment", "web", "d-uid"),
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "2"}}},
	}
	broken := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-broken-x", Labels: labels, OwnerReferences: owner("ReplicaSet", "web-broken", "rs-uid")},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "not present"}}}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sets[0], sets[1], broken).Build()
	r := &ServiceReconciler{Client: c}
	a := &access{cached: c, direct: c, writer: c}
	for _, tc := range []struct {
		name       string
		obj        *unstructured.Unstructured
		failed     bool
		unobserved int
	}{
		{"the broken revision is current", deployment(7, 7, "2"), true, 0},
		{"the restored template not looked at yet", deployment(8, 7, "2"), false, 1},
		{"the restored revision is current", deployment(8, 8, "3"), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h health
			r.check(context.Background(), a, &h, svc, node, "Deployment/web", tc.obj)
			if (h.failed != "") != tc.failed || h.unobserved != tc.unobserved {
				t.Errorf("failed %q, unobserved %d; want failed %v, unobserved %d", h.failed, h.unobserved, tc.failed, tc.unobserved)
			}
		})
	}
}
