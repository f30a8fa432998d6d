package operator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/controller"
)

// The cache's transform may be applied again to its own output (client-go's initial list
// does it): the hash of the operator's managed fields must survive the second pass, or
// every object listed after a restart looks drifted and is applied at every resync.
func TestTrimForCacheIsIdempotent(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "x", UID: "u1",
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{
			Manager: "calaf", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:a":{}}}`)},
		}},
	}}
	want := controller.FieldsHash(cm)
	if want == "" {
		t.Fatal("no hash for the operator's fields")
	}
	for pass := 1; pass <= 2; pass++ {
		if _, err := trimForCache(cm); err != nil {
			t.Fatal(err)
		}
		if got := cm.Annotations[controller.CachedFieldsAnnotation]; got != want {
			t.Fatalf("pass %d: cached fields hash %q, want %q", pass, got, want)
		}
		if len(cm.ManagedFields) != 0 || cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" {
			t.Fatalf("pass %d: not trimmed: %+v", pass, cm.ObjectMeta)
		}
	}
}
