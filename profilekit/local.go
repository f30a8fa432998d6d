package profilekit

import (
	"context"

	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// LocalRender compiles and renders in this process, with the sandbox's deadlines but no
// worker process around it (tests; the CLI uses its workers).
func LocalRender() RenderFunc {
	return func(ctx context.Context, pkg *tosca.Package, inputs map[string]any, service, namespace string) (*render.Result, error) {
		compiled, err := tosca.NewCompiler(1).Compile(ctx, pkg, inputs)
		if err != nil {
			return nil, err
		}
		return render.NewRenderer(1).Render(ctx, compiled, render.Options{Service: service, Namespace: namespace})
	}
}
