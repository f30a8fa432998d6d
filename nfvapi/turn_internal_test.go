package nfvapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/nfvapi/sol013"
)

// A task's turn is taken although the operator changed the Service since the request read
// it (its finalizer, its status — as it does right after an instance is created): the
// update refused for the stale version is tried again on the Service read anew. A turn
// another request took meanwhile is a 409.
func TestTurnTakenAfterTheOperatorsChange(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		meanwhile   func(svc *v1alpha1.Service) // what is changed before the first update
		wantProblem string
	}{
		{"the operator added its finalizer", func(svc *v1alpha1.Service) { svc.Finalizers = append(svc.Finalizers, "calaf.io/vnf-identifier") }, ""},
		{"another request took the turn", func(svc *v1alpha1.Service) {
			svc.Annotations = map[string]string{annotationOccurrence: pendingPrefix + now.Format(time.RFC3339)}
		}, "in progress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vnf"}}
			updates := 0
			base := fake.NewClientBuilder().WithScheme(operator.NewScheme()).WithObjects(svc.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if updates++; updates == 1 {
						changed := &v1alpha1.Service{}
						if err := c.Get(ctx, client.ObjectKeyFromObject(obj), changed); err != nil {
							return err
						}
						tc.meanwhile(changed)
						if err := c.Update(ctx, changed); err != nil {
							return err
						}
					}
					return c.Update(ctx, obj, opts...)
				},
			}).Build()
			read := &v1alpha1.Service{}
			if err := base.Get(context.Background(), client.ObjectKeyFromObject(svc), read); err != nil {
				t.Fatal(err)
			}
			s := &Server{cfg: Config{Now: func() time.Time { return now }}}
			r := &request{Request: (&http.Request{}).WithContext(context.Background()), caller: &Caller{Namespace: "ns"}, client: base}
			turn, err := r.takeTurn(s, read, nil)
			if tc.wantProblem == "" {
				if err != nil || !strings.HasPrefix(turn.Annotations[annotationOccurrence], pendingPrefix) {
					t.Fatalf("turn %v, %v; want taken", turn, err)
				}
				return
			}
			problem, ok := err.(*sol013.Problem)
			if !ok || problem.Status != http.StatusConflict || !strings.Contains(problem.Detail, tc.wantProblem) {
				t.Fatalf("%v; want a 409 saying %q", err, tc.wantProblem)
			}
		})
	}
}
