package lifecycle

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"calaf.io/calaf/api/v1alpha1"
)

// Two occurrences created within the same second are ordered by their generated names, so
// the newer one may come first. When the cache has not seen yet that the older one
// started, the newer one must not start too: the API server's list says which holds the
// Service.
func TestActiveOccurrenceWhenTheCacheIsBehind(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	created := metav1.NewTime(time.Now().Truncate(time.Second))
	occurrence := func(name string, state v1alpha1.OperationState) *v1alpha1.Operation {
		op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: created},
			Spec: v1alpha1.OperationSpec{ServiceName: "core", Type: v1alpha1.OperationScale}}
		op.Status.OperationState = state
		return op
	}
	build := func(objects ...client.Object) client.Client {
		return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	}
	for _, tc := range []struct {
		name         string
		cache, fresh []client.Object
		want         string
	}{{
		name:  "the older one started; the cache still says STARTING",
		cache: []client.Object{occurrence("core-zzzzz", v1alpha1.StateStarting), occurrence("core-aaaaa", v1alpha1.StateStarting)},
		fresh: []client.Object{occurrence("core-zzzzz", v1alpha1.StateProcessing), occurrence("core-aaaaa", v1alpha1.StateStarting)},
		want:  "core-zzzzz",
	}, {
		name:  "the cache shows the started one: no second list needed",
		cache: []client.Object{occurrence("core-zzzzz", v1alpha1.StateProcessing), occurrence("core-aaaaa", v1alpha1.StateStarting)},
		fresh: nil, // an API server that holds nothing: it is not asked
		want:  "core-zzzzz",
	}, {
		name:  "none started: the first in order starts",
		cache: []client.Object{occurrence("core-zzzzz", v1alpha1.StateStarting), occurrence("core-aaaaa", v1alpha1.StateStarting)},
		fresh: []client.Object{occurrence("core-zzzzz", v1alpha1.StateStarting), occurrence("core-aaaaa", v1alpha1.StateStarting)},
		want:  "core-aaaaa",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Client: build(tc.cache...), APIReader: build(tc.fresh...)}
			occurrences, active, err := r.activeOccurrence(context.Background(), "ns", "core")
			if err != nil {
				t.Fatal(err)
			}
			if active == nil || active.Name != tc.want {
				t.Fatalf("active occurrence %v, want %s", active, tc.want)
			}
			if len(occurrences) != 2 {
				t.Errorf("%d occurrences, want 2", len(occurrences))
			}
		})
	}
}
