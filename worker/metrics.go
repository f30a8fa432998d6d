package worker

import "github.com/prometheus/client_golang/prometheus"

// Metrics count what the workers of a pool did.
type Metrics struct {
	started  *prometheus.CounterVec
	ended    *prometheus.CounterVec
	landlock prometheus.Gauge
}

// NewMetrics registers the worker metrics with a registerer.
func NewMetrics(registerer prometheus.Registerer) *Metrics {
	m := &Metrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "calaf_workers_started_total",
			Help: "Worker processes started to compile and render packages.",
		}, nil),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "calaf_worker_endings_total",
			Help: "Worker processes that ended while they worked, by operation and why (memory, stack overflow, deadline, cpu, crash, killed, response).",
		}, []string{"op", "kind"}),
		landlock: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "calaf_worker_landlock_abi",
			Help: "The Landlock ABI the last worker started confined itself with; 0: workers are not confined (no Landlock in the kernel).",
		}),
	}
	registerer.MustRegister(m.started, m.ended, m.landlock)
	return m
}

// observe makes a pool's options count into the metrics.
func (m *Metrics) observe(opts *Options) {
	onEnd := opts.OnEnd
	opts.OnEnd = func(op string, ending Ending) {
		m.ended.WithLabelValues(op, ending.Kind).Inc()
		if onEnd != nil {
			onEnd(op, ending)
		}
	}
	onStart := opts.OnStart
	opts.OnStart = func(confined Confined) {
		m.started.WithLabelValues().Inc()
		m.landlock.Set(float64(confined.Landlock))
		if onStart != nil {
			onStart(confined)
		}
	}
}

// WithMetrics returns the options, counting into m.
func (o Options) WithMetrics(m *Metrics) Options {
	m.observe(&o)
	return o
}
