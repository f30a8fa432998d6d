package operator

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/worker"
)

// isolate makes the compiles and renders that miss the caches run in worker processes
// (package worker), unless opts.InProcess: a package that crashes Puccini or a scriptlet,
// recurses without end or exhausts memory then ends its worker and fails its own Service,
// never the operator. The pool lives as long as the process; its first worker starts now.
// Either way the renderer keeps its cached results encoded (worker.ResultCodec).
func isolate(compiler *tosca.Compiler, renderer *render.Renderer, opts Options, registry prometheus.Registerer, log logr.Logger) error {
	renderer.Codec = worker.ResultCodec{} // cached renders kept encoded: several times smaller
	if opts.InProcess {
		return nil
	}
	workers := opts.Workers.WithMetrics(worker.NewMetrics(registry))
	workers.Log = log.WithName("worker")
	pool, err := worker.New(workers)
	if err != nil {
		return err
	}
	compiler.Run = pool.Compile
	renderer.Run = pool.Render
	go func() {
		if err := pool.Warm(context.Background()); err != nil {
			log.Error(err, "a worker could not start: compiles and renders will fail until one can")
		}
	}()
	return nil
}
