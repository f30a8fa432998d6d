package orchestration

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the orchestration's Prometheus metrics. A nil *Metrics records nothing.
type Metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with registry (when not nil).
func NewMetrics(registry prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "calaf_operations_total", Help: "Lifecycle and Day-2 operation runs in pods, by result.",
		}, []string{"result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "calaf_operation_duration_seconds",
			Help:    "Time of operation runs in pods, by stage: install (streaming the runner in) and run (the exec round trip).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"stage"}),
	}
	if registry != nil {
		registry.MustRegister(m.runs, m.duration)
	}
	return m
}

// observeRun records one run of an operation in a pod: its result and where its time went.
func (m *Metrics) observeRun(r runResult) {
	if m == nil {
		return
	}
	result := "success"
	if r.failed() {
		result = "error"
	}
	m.runs.WithLabelValues(result).Inc()
	if r.timing.Installed {
		m.duration.WithLabelValues("install").Observe(r.timing.Install.Seconds())
	}
	if r.timing.Exec > 0 {
		m.duration.WithLabelValues("run").Observe(r.timing.Exec.Seconds())
	}
}
