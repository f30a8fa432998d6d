package operator

import (
	"context"
	"os"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"calaf.io/calaf/onboarding"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/worker"
)

// isolate makes the compiles and renders that miss the caches run in worker processes
// (package worker), unless opts.InProcess: a package that crashes Puccini or a scriptlet,
// recurses without end or exhausts memory then ends its worker and fails its own Service,
// never the operator. The pool lives as long as the process; its first worker starts now.
// Either way the renderer keeps its cached results encoded (worker.ResultCodec).
//
// It returns how the VNFD of a VNF package being onboarded is read: in a worker too.
func isolate(compiler *tosca.Compiler, renderer *render.Renderer, opts Options, registry prometheus.Registerer, log logr.Logger) (onboarding.VNFDReader, error) {
	renderer.Codec = worker.ResultCodec{} // cached renders kept encoded: several times smaller
	if opts.InProcess {
		return func(_ context.Context, pkg *tosca.Package) (*tosca.PackageVNFD, error) { return pkg.ReadVNFD() }, nil
	}
	workers := opts.Workers.WithMetrics(worker.NewMetrics(registry))
	workers.Log = log.WithName("worker")
	pool, err := worker.New(workers)
	if err != nil {
		return nil, err
	}
	compiler.Run = pool.Compile
	renderer.Run = pool.Render
	go func() {
		if err := pool.Warm(context.Background()); err != nil {
			log.Error(err, "a worker could not start: compiles and renders will fail until one can")
			return
		}
		checkConfinement(context.Background(), pool, opts.Credentials, log)
	}()
	return pool.ReadVNFD, nil
}

// ServiceAccountToken is where Kubernetes mounts the token of a pod's service account.
const ServiceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// checkConfinement asks a worker to open each of the operator's credential files that
// exist (as code that escaped a worker's sandbox would) and logs what it could: a worker
// that is not confined, or that could open one, is an error in the log.
func checkConfinement(ctx context.Context, pool *worker.Pool, credentials []string, log logr.Logger) {
	var unreadable []string
	for _, path := range credentials {
		if _, err := os.Stat(path); err != nil {
			continue // not this operator's
		}
		confined, why, err := pool.Probe(ctx, path)
		switch {
		case err != nil:
			log.Error(err, "could not check what workers can read", "path", path)
		case why == "":
			log.Error(nil, "a worker can read a credential of the operator: package code that escaped a worker's sandbox would too", "path", path, "confinement", confined.String())
		default:
			unreadable = append(unreadable, path)
		}
	}
	confined, _, err := pool.Probe(ctx, "/")
	switch {
	case err != nil:
	case confined.Landlock == 0:
		log.Error(nil, "workers are NOT confined: package code that escaped a worker's sandbox could read what the operator can; Landlock (Linux 5.13 or later) is needed, --worker-confinement=required refuses to run without it", "why", confined.Unconfined)
	default:
		log.Info("workers are confined: each reads the package it is handed alone", "landlockABI", confined.Landlock, "unreadable", unreadable)
	}
}
