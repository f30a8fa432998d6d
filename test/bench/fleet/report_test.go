package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
			return writeReport(path, s, [][]result{{base, base, calaf, backlog}}, nil)
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
		"Not a target: the calaf started after its Services (", "Services report Applied at 3.00× the 4-worker baseline; 4.20 writes per Service (1.00 applies, 1.70 status patches, 1.50 events).",
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

// The time target is judged on when the Services report Applied, what a user waits for;
// the last apply answered is said beside it, and judges nothing.
func TestTimeTargetOnTheReportedApplied(t *testing.T) {
	base := result{name: "baseline", applied: 10 * time.Second, lastApply: 10 * time.Second}
	for _, c := range []struct {
		applied, lastApply time.Duration
		want               string
	}{
		{14 * time.Second, 12 * time.Second, "— **met** (1.40×; the last apply answered at 1.20×)"},
		{16 * time.Second, 14 * time.Second, "— **missed** (1.60×; the last apply answered at 1.40×)"},
		{15 * time.Second, 15 * time.Second, "— **met** (1.50×; the last apply answered at 1.50×)"},
	} {
		calaf := result{name: "calaf", applied: c.applied, lastApply: c.lastApply, requests: map[string]int64{}}
		var b strings.Builder
		writeTargets(&b, settings{n: 10}, [][]result{{base, base, calaf}}, nil)
		if !strings.Contains(b.String(), "- Services report Applied ≤ 1.5× the 4-worker baseline's time "+c.want) {
			t.Errorf("Applied at %s, last apply at %s:\n%s", c.applied, c.lastApply, b.String())
		}
	}
}

// With several rounds, the time target is judged on each round against its own baseline:
// a slow baseline in one round and a fast operator run in another do not make a ratio.
func TestTimeTargetPairedByRound(t *testing.T) {
	run := func(applied int) result {
		d := time.Duration(applied) * time.Second
		return result{name: "r", applied: d, lastApply: d, requests: map[string]int64{}}
	}
	// The medians of the times (40 s over 27 s: 1.48×) would meet the target; the rounds'
	// ratios (1.63×, 1.69×, 1.33×) do not.
	rounds := [][]result{{run(30), run(27), run(44)}, {run(30), run(23), run(39)}, {run(30), run(30), run(40)}}
	var b strings.Builder
	writeTargets(&b, settings{n: 10}, rounds, nil)
	want := "— **missed** (1.63×, the median of the rounds' 1.63×, 1.70×, 1.33×; the last apply answered at 1.63×)"
	if !strings.Contains(b.String(), want) {
		t.Errorf("want %q in:\n%s", want, b.String())
	}
}

// Events are writes: a Service that costs one more than its applies and its status patch
// misses the writes target.
func TestWritesCountEvents(t *testing.T) {
	base := result{name: "baseline", applied: 10 * time.Second, lastApply: 10 * time.Second}
	for _, c := range []struct {
		events int64
		want   string
	}{
		{0, "(5) — **met** (5.00: 4.00 applies, 1.00 status patches, 0.00 events, 0.00 other)"},
		{10, "(5) — **missed** (6.00: 4.00 applies, 1.00 status patches, 1.00 events, 0.00 other)"},
	} {
		requests := map[string]int64{"APPLY deployments": 20, "APPLY configmaps": 20, "PATCH services/status": 10, "POST events": c.events, "PUT leases": 30}
		calaf := result{name: "calaf", applied: 12 * time.Second, lastApply: 12 * time.Second, requests: requests}
		var b strings.Builder
		writeTargets(&b, settings{n: 10}, [][]result{{base, base, calaf}}, nil)
		if !strings.Contains(b.String(), "- writes per Service, events counted, ≤ one apply per object and one status patch "+c.want) {
			t.Errorf("%d events:\n%s", c.events, b.String())
		}
	}
}

// Growth from the smaller fleet is judged on the reported Applied too.
func TestGrowthOnTheReportedApplied(t *testing.T) {
	at := func(applied, lastApply int) result {
		return result{name: "r", applied: time.Duration(applied) * time.Second, lastApply: time.Duration(lastApply) * time.Second, requests: map[string]int64{}}
	}
	s := settings{n: 1000, smaller: 300}
	for _, c := range []struct {
		applied, lastApply int
		want               string
	}{{35, 40, "**met** (Services report Applied 3.50×, the last apply answered 4.00×"}, {37, 30, "**missed** (Services report Applied 3.70×, the last apply answered 3.00×"}} {
		var b strings.Builder
		writeTargets(&b, s, [][]result{{at(10, 10), at(10, 10), at(c.applied, c.lastApply)}}, []result{at(3, 3), at(3, 3), at(10, 10)})
		if !strings.Contains(b.String(), "(≤ 3.6×) — "+c.want) {
			t.Errorf("applied %d s against 10 s:\n%s", c.applied, b.String())
		}
	}
}

// A seed repeats the order of every round; the orders are permutations, they differ from
// round to round and from seed to seed, and the results come back in the runs' order.
func TestRunOrder(t *testing.T) {
	orders := func(seed uint64) [][]int {
		o := newRunOrder(seed)
		var out [][]int
		for i := 0; i < 6; i++ {
			out = append(out, o.next(4))
		}
		return out
	}
	a, again, other := orders(7), orders(7), orders(8)
	if fmt.Sprint(a) != fmt.Sprint(again) {
		t.Errorf("seed 7 drew %v, then %v", a, again)
	}
	if fmt.Sprint(a) == fmt.Sprint(other) {
		t.Errorf("seeds 7 and 8 drew the same orders %v", a)
	}
	firsts := map[int]bool{}
	for _, order := range a {
		firsts[order[0]] = true
		if got := slices.Sorted(slices.Values(order)); fmt.Sprint(got) != "[0 1 2 3]" {
			t.Errorf("order %v is not a permutation of 4 runs", order)
		}
	}
	if len(firsts) < 2 {
		t.Errorf("the same run went first in all 6 rounds: %v", a)
	}

	var ran []string
	run := func(name string) func() (result, error) {
		return func() (result, error) { ran = append(ran, name); return result{name: name}, nil }
	}
	results, err := newRunOrder(7).run([]func() (result, error){run("a"), run("b"), run("c"), run("d")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range results {
		got = append(got, r.name)
	}
	if fmt.Sprint(got) != "[a b c d]" {
		t.Errorf("results in the order %v, want the runs' order", got)
	}
	want := make([]string, 4)
	for i, j := range a[0] {
		want[i] = []string{"a", "b", "c", "d"}[j]
	}
	if fmt.Sprint(ran) != fmt.Sprint(want) {
		t.Errorf("ran %v, want the drawn order %v", ran, want)
	}
}
