package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The three sections live side by side, each replaced by its own run whatever the order,
// and say their ratios.
func TestReports(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	raw := result{name: "raw", applied: 10 * time.Second, duration: 10 * time.Second, peakRSS: 50 << 20, processRSS: []int64{50 << 20}}
	op := func(seconds int, processes ...int64) result {
		return result{name: "calaf", applied: time.Duration(seconds) * time.Second, duration: time.Duration(seconds+5) * time.Second, processRSS: processes,
			workerRSS: 200 << 20, totalRSS: 400 << 20, compiles: 10, requests: map[string]int64{"APPLY deployments": 10, "PATCH services/status": 10}}
	}
	s := settings{n: 10, workers: 4, rounds: 1, operatorQPS: 200, shards: 2}
	steps := []func() error{
		func() error { return writeDistinctReport(path, s, medians([][]result{{raw, op(25, 150<<20)}})) },
		func() error {
			cpu := func(apiserver, operator time.Duration) map[string]time.Duration {
				return map[string]time.Duration{"API server": apiserver * time.Second, "operator": operator * time.Second}
			}
			base, calaf, backlog := raw, op(20, 150<<20), op(30, 150<<20)
			base.lastApply, calaf.lastApply, backlog.lastApply = base.applied, 17*time.Second, 28*time.Second
			base.cpu, calaf.cpu, backlog.cpu = cpu(8, 0), cpu(12, 4), cpu(14, 5)
			backlog.name, backlog.backlog = "calaf started after its Services", true
			backlog.requests = map[string]int64{"APPLY deployments": 10, "PATCH services/status": 17, "POST events": 15}
			return writeReport(path, s, []result{base, base, calaf, backlog}, nil)
		},
		func() error { return writeShardsReport(path, s, []result{op(40, 150<<20), op(30, 120<<20, 110<<20)}) },
		func() error { return writeDistinctReport(path, s, []result{raw, op(35, 150<<20)}) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	data, _ := os.ReadFile(path)
	text := string(data)
	for _, want := range []string{
		"## Operator at scale: 10 Services, each its own package\n", "operator ÷ raw Puccini: 3.50×", "Compiles per Service: 1.00",
		"## Operator at scale: 10 Services\n",
		"## Operator at scale: 10 Services, 2 shards against 1 operator\n", "time to all applied 0.75×", "peak RSS 120 + 110 MiB against 150 MiB",
		"| calaf | 30.0 s | 0.75× | 35.0 s | 120 + 110 MiB | 200 MiB | 400 MiB |",
		"| raw | 10.0 s | 1.00× | — | 50 MiB | — | — |",
		"| calaf | 12.0 | 0.0 | 0.0 | 0.0 | 4.0 | 0.0 | 0.0 | 16.0 | 2.00× | 20.0 s |",
		"| calaf | 20.0 s | 2.00× | 2.00× | 17.0 s | 1.70× | 25.0 s |  |",
		"The calaf started after its Services (not a target", "time to all applied 3.00× the 4-worker baseline; 2.70 writes per Service (1.00 applies, 1.70 status patches), 1.50 events.",
	} {
		if strings.Count(text, want) != 1 {
			t.Errorf("%q is there %d times in:\n%s", want, strings.Count(text, want), text)
		}
	}
	if strings.Contains(text, "PATCH services/status 1.70") {
		t.Error("the requests by resource are the backlog run's, not the operator's")
	}
	if strings.Contains(text, "2.50×") {
		t.Error("the first distinct section was not replaced")
	}
}

// The request-costs section lists each request's cost and sums a Service's: the
// baselines' applies, and the Service's own requests besides.
func TestCostsReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	costs := []requestCost{
		{name: "Service create", perCall: 2 * time.Millisecond},
		{name: "status patch", perCall: 5 * time.Millisecond},
		{name: "apply ConfigMap", perCall: 1500 * time.Microsecond, baseline: true},
		{name: "apply Deployment", perCall: 2500 * time.Microsecond, baseline: true},
	}
	if err := writeCostsReport(path, settings{n: 10, workers: 4, rounds: 3}, costs); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	for _, want := range []string{"## Operator at scale: what a Service's requests cost the API server\n", "| status patch | 5.00 ms |",
		"the baselines' four applies 4.00 ms; a Calaf Service's own create, status patch and event 7.00 ms more (1.75× the applies)"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%q is not in:\n%s", want, data)
		}
	}
}

// The time target is judged on the last apply answered, as the baselines are measured;
// the time the Services report Applied is said beside it.
func TestTimeTargetOnTheLastApply(t *testing.T) {
	base := result{name: "baseline", applied: 10 * time.Second, lastApply: 10 * time.Second}
	for _, c := range []struct {
		lastApply time.Duration
		want      string
	}{
		{14 * time.Second, "— **met** (1.40×: until the last apply was answered, as the baselines are measured; the Services report `Applied` at 3.00×"},
		{16 * time.Second, "— **missed** (1.60×: until the last apply was answered"},
	} {
		calaf := result{name: "calaf", applied: 30 * time.Second, lastApply: c.lastApply, requests: map[string]int64{}}
		var b strings.Builder
		writeTargets(&b, settings{n: 10}, []result{base, base, calaf}, nil)
		if !strings.Contains(b.String(), "- time to all applied ≤ 1.5× the 4-worker baseline "+c.want) {
			t.Errorf("last apply at %s:\n%s", c.lastApply, b.String())
		}
	}
}
