package controller

import (
	"context"
	"testing"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// The outputs are rendered again with the attributes observed in a reconcile only when
// the template declares outputs and the attributes differ from those it was rendered
// with: a template without outputs costs one render per reconcile, not two.
func TestOutputsRenderAgainOnlyWhenDeclared(t *testing.T) {
	observed := map[string]map[string]any{"app": {"replicas": int64(2)}}
	cases := []struct {
		name         string
		first        render.Result
		renderedWith map[string]map[string]any
		renders      int
		outputs      int
	}{
		{name: "no outputs", first: render.Result{Outputs: map[string]any{}, OutputErrors: map[string]string{}}, renders: 0},
		{name: "an output", first: render.Result{Outputs: map[string]any{"replicas": nil}, OutputErrors: map[string]string{}}, renders: 1, outputs: 1},
		{name: "an output not evaluated yet", first: render.Result{Outputs: map[string]any{}, OutputErrors: map[string]string{"replicas": "no attribute"}}, renders: 1, outputs: 1},
		{name: "an output, attributes as rendered", first: render.Result{Outputs: map[string]any{"replicas": nil}, OutputErrors: map[string]string{}}, renderedWith: observed, renders: 0, outputs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			renders := 0
			renderer := render.NewRenderer(8)
			renderer.Run = func(context.Context, *tosca.Compiled, render.Options) (*render.Result, error) {
				renders++
				return &render.Result{Outputs: map[string]any{"replicas": int64(2)}}, nil
			}
			r := &ServiceReconciler{Renderer: renderer}
			s := newScope(context.Background(), &v1alpha1.Service{})
			first := tc.first
			s.Result, s.Compiled, s.compileKey, s.renderedWith, s.Attributes = &first, &tosca.Compiled{Key: "k"}, "k", tc.renderedWith, observed
			if err := r.reconcileOutputs(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if renders != tc.renders {
				t.Errorf("renders: got %d, want %d", renders, tc.renders)
			}
			if got := len(s.Service.Status.Outputs) + len(s.Service.Status.PendingOutputs); got != tc.outputs {
				t.Errorf("outputs and pending outputs: got %d, want %d", got, tc.outputs)
			}
		})
	}
}
