package artifacts

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	registerOnce     sync.Once
	operationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "calaf_operation_duration_seconds",
		Help:    "Time of operation runs in pods, by stage: install (streaming the runner in) and run (the exec round trip).",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	}, []string{"stage"})
)

// registerMetrics registers the orchestration metrics on controller-runtime's registry.
func registerMetrics() {
	registerOnce.Do(func() { metrics.Registry.MustRegister(operationSeconds) })
}

func observeRun(r runResult) {
	if r.timing.Installed {
		operationSeconds.WithLabelValues("install").Observe(r.timing.Install.Seconds())
	}
	if r.timing.Exec > 0 {
		operationSeconds.WithLabelValues("run").Observe(r.timing.Exec.Seconds())
	}
}
