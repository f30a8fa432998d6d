package main

import (
	"os"
	"testing"
)

// The parent's pid is read after the command name, whatever that holds.
func TestParentOf(t *testing.T) {
	cases := map[string]int{
		"4242 (calaf) S 17 4242 17 0 -1":     17,
		"4243 (a (b) c) R 4242 4243 17 0 -1": 4242,
		"4244 (sleep 1)) S 1 4244 1":         1,
		"garbage":                            0,
		"":                                   0,
	}
	for stat, want := range cases {
		if got := parentOf(stat); got != want {
			t.Errorf("parentOf(%q) = %d, want %d", stat, got, want)
		}
	}
	if got := mib(120<<20, 118<<20); got != "120 + 118 MiB" {
		t.Errorf("mib: %q", got)
	}
}

// This test's own process is among its parent's children, and has a peak.
func TestChildren(t *testing.T) {
	found := false
	for _, pid := range children([]int{os.Getppid()}) {
		found = found || pid == os.Getpid()
	}
	if !found || peakRSS(os.Getpid()) == 0 {
		t.Errorf("children of %d: %v; peak %d", os.Getppid(), children([]int{os.Getppid()}), peakRSS(os.Getpid()))
	}
}

// Samples are summed over their labels, or over those named.
func TestMetricSum(t *testing.T) {
	metrics := `# HELP calaf_compile_duration_seconds Duration of TOSCA compiles (cache misses).
calaf_compile_duration_seconds_bucket{result="error",le="0.005"} 0
calaf_compile_duration_seconds_count{result="error"} 30
calaf_compile_duration_seconds_count{result="success"} 60
calaf_compile_duration_seconds_count_other 5
calaf_workers_started_total 2
`
	for name, want := range map[string]int64{
		"calaf_compile_duration_seconds_count":                 90,
		`calaf_compile_duration_seconds_count{result="error"}`: 30,
		"calaf_workers_started_total":                          2,
		"calaf_absent_total":                                   0,
	} {
		if got := metricSum(metrics, name); got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
}
