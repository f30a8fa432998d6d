package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the operator's Prometheus metrics (registered on controller-runtime's registry).
type Metrics struct {
	reconcileDuration *prometheus.HistogramVec
	compileDuration   *prometheus.HistogramVec
	renderDuration    *prometheus.HistogramVec
	cacheHits         *prometheus.CounterVec
	applied           *prometheus.CounterVec
	pruned            prometheus.Counter
}

// NewMetrics creates the metrics and registers them.
func NewMetrics(registry prometheus.Registerer) *Metrics {
	m := &Metrics{
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "calaf_reconcile_duration_seconds", Help: "Duration of Service reconciles.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"result"}),
		compileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "calaf_compile_duration_seconds", Help: "Duration of TOSCA compiles (cache misses).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"result"}),
		renderDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "calaf_render_duration_seconds", Help: "Duration of renders (cache misses).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"result"}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "calaf_cache_requests_total", Help: "Compile and render cache lookups, by cache and result.",
		}, []string{"cache", "result"}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "calaf_applied_objects_total", Help: "Objects created or configured by server-side apply.",
		}, []string{"action"}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "calaf_pruned_objects_total", Help: "Objects deleted because the package no longer renders them.",
		}),
	}
	if registry != nil {
		registry.MustRegister(m.reconcileDuration, m.compileDuration, m.renderDuration, m.cacheHits, m.applied, m.pruned)
	}
	return m
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "success"
}

func (m *Metrics) observeReconcile(d time.Duration, err error) {
	if m != nil {
		m.reconcileDuration.WithLabelValues(result(err)).Observe(d.Seconds())
	}
}

// ObserveCompile records a compile (a cache miss).
func (m *Metrics) ObserveCompile(d time.Duration, err error) {
	if m != nil {
		m.compileDuration.WithLabelValues(result(err)).Observe(d.Seconds())
		m.cacheHits.WithLabelValues("compile", "miss").Inc()
	}
}

// ObserveBind records inputs bound onto a compiled package instead of a compile.
func (m *Metrics) ObserveBind() {
	if m != nil {
		m.cacheHits.WithLabelValues("compile", "bound").Inc()
	}
}

// ObserveRender records a render (a cache miss).
func (m *Metrics) ObserveRender(d time.Duration, err error) {
	if m != nil {
		m.renderDuration.WithLabelValues(result(err)).Observe(d.Seconds())
		m.cacheHits.WithLabelValues("render", "miss").Inc()
	}
}

func (m *Metrics) countApplied(created, configured int) {
	if m != nil {
		m.applied.WithLabelValues("created").Add(float64(created))
		m.applied.WithLabelValues("configured").Add(float64(configured))
	}
}

func (m *Metrics) countPruned(n int) {
	if m != nil {
		m.pruned.Add(float64(n))
	}
}
