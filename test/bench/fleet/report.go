package main

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/test/benchreport"
)

// objectsPerService is what one Service of the bench package renders: Deployment,
// ServiceAccount, Service, ConfigMap.
const objectsPerService = 4

// columns are the request classes of the report, in its order.
var columns = []string{"GET", "GET 404", "LIST+WATCH", "apply", "status patch", "other patch", "POST event", "other POST", "PUT", "DELETE", "discovery"}

// column returns the report column of a countingProxy key ("VERB resource[ 404]").
func column(key string) string {
	verb, resource, _ := strings.Cut(key, " ")
	switch {
	case resource == "discovery":
		return "discovery"
	case verb == "GET" && strings.HasSuffix(key, " 404"):
		return "GET 404"
	case verb == "LIST" || verb == "WATCH":
		return "LIST+WATCH"
	case verb == "APPLY":
		return "apply"
	case verb == "PATCH" && strings.Contains(resource, "/status"):
		return "status patch"
	case verb == "PATCH":
		return "other patch"
	case verb == "POST" && strings.HasPrefix(resource, "events"):
		return "POST event"
	case verb == "POST":
		return "other POST"
	}
	return verb
}

// perColumn sums the counts by report column, per Service.
func perColumn(counts map[string]int64, n int) map[string]float64 {
	out := map[string]float64{}
	for key, count := range counts {
		out[column(key)] += float64(count) / float64(n)
	}
	return out
}

// writes is how many writes a Service cost: to its objects, its status and its events
// (leader election's lease renewals aside).
func writes(c map[string]float64) float64 {
	return c["apply"] + c["status patch"] + c["other patch"] + c["POST event"] + c["other POST"] + c["DELETE"]
}

// medians returns, per run, the medians over rounds of times, peak RSS and each count.
func medians(rounds [][]result) []result {
	var out []result
	for j := range rounds[0] {
		var runs []result
		for _, round := range rounds {
			runs = append(runs, round[j])
		}
		m := runs[0]
		m.applied = median[time.Duration](runs, func(r result) float64 { return float64(r.applied) }, nil)
		m.duration = median[time.Duration](runs, func(r result) float64 { return float64(r.duration) }, nil)
		m.lastApply = median[time.Duration](runs, func(r result) float64 { return float64(r.lastApply) }, nil)
		m.peakRSS = median[int64](runs, func(r result) float64 { return float64(r.peakRSS) }, &m)
		m.workerRSS = median[int64](runs, func(r result) float64 { return float64(r.workerRSS) }, nil)
		m.totalRSS = median[int64](runs, func(r result) float64 { return float64(r.totalRSS) }, nil)
		m.compiles = median[int64](runs, func(r result) float64 { return float64(r.compiles) }, nil)
		m.failedCompiles = median[int64](runs, func(r result) float64 { return float64(r.failedCompiles) }, nil)
		m.processRSS = make([]int64, len(runs[0].processRSS))
		for k := range m.processRSS {
			m.processRSS[k] = median[int64](runs, func(r result) float64 { return float64(r.processRSS[k]) }, nil)
		}
		m.requests = nil // none for runs that send none (raw Puccini's)
		if runs[0].requests != nil {
			m.requests = map[string]int64{}
		}
		for key := range runs[0].requests {
			m.requests[key] = median[int64](runs, func(r result) float64 { return float64(r.requests[key]) }, nil)
		}
		m.cpu = map[string]time.Duration{}
		for _, group := range cpuGroups {
			m.cpu[group] = median[time.Duration](runs, func(r result) float64 { return float64(r.cpu[group]) }, nil)
		}
		out = append(out, m)
	}
	return out
}

// median of f over runs (of an even count, the mean of the two middle ones); at, when
// set, takes the RSS split of the lower middle run.
func median[T ~int64](runs []result, f func(result) float64, at *result) T {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b result) int { return cmp.Compare(f(a), f(b)) })
	lower, upper := sorted[(len(sorted)-1)/2], sorted[len(sorted)/2]
	if at != nil {
		at.rssSplit = lower.rssSplit
	}
	return T((f(lower) + f(upper)) / 2)
}

// sectionTitle begins the headings of the fleet's sections (their whole headings are
// docs/benchmarks.md's: benchreport.Benchmarks).
const sectionTitle = "## Operator at scale:"

// writeReport replaces the fleet section of benchmarks.md with the medians of the
// rounds at n Services (and the growth from the smaller size, when it ran).
func writeReport(path string, s settings, rounds [][]result, smaller []result) error {
	runs := medians(rounds)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d Services\n\n", sectionTitle, s.n)
	fmt.Fprintf(&b, "Written by `make bench-fleet` (test/bench/fleet) %s %s\n\n", machine(), roundsNote(s, "both baselines and the operator runs"))
	b.WriteString(setup(s))
	writeTimes(&b, s, runs)
	writeRequests(&b, s.n, runs)
	writeCPU(&b, runs, runs[1])
	writeTargets(&b, s, rounds, smaller)
	return benchreport.WriteBenchmark(path, b.String())
}

// roundsNote says how many rounds ran, what each ran, and the seed of their order.
func roundsNote(s settings, each string) string {
	note := fmt.Sprintf("Medians of %d round(s); each runs %s", s.rounds, each)
	if s.smaller > 0 {
		note += fmt.Sprintf(", at %d and at %d Services (which size first, drawn too)", s.smaller, s.n)
	}
	return note + fmt.Sprintf(", in an order drawn anew for each round (seed %d: `-seed %d` repeats the orders).", s.seed, s.seed)
}

// machine says when and where the bench ran, and how busy the machine was at its end.
func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("on %s: %s, %d CPUs, %s, on the test ground's one-node cluster (kube-apiserver, etcd, controller-manager, scheduler, kubelet, all on the same machine as the operator); load average at the end %s.", time.Now().Format("2006-01-02"), host, runtime.NumCPU(), runtime.Version(), benchreport.LoadAverage())
}

// writeRunTable writes the times and memory of runs, each divided by the first's (base).
func writeRunTable(b *strings.Builder, base string, runs []result) {
	fmt.Fprintf(b, "| run | time to all applied | ÷ %s | time to all Ready | peak RSS per process | largest worker | all together |\n|---|---:|---:|---:|---:|---:|---:|\n", base)
	for _, r := range runs {
		ready := "—"
		if r.requests != nil {
			ready = fmt.Sprintf("%.1f s", r.duration.Seconds())
		}
		fmt.Fprintf(b, "| %s | %.1f s | %.2f× | %s | %s | %s | %s |\n", r.name, r.applied.Seconds(), r.applied.Seconds()/runs[0].applied.Seconds(), ready, mib(r.processRSS...), orDash(r.workerRSS), orDash(r.totalRSS))
	}
	b.WriteString("\n")
}

// orDash formats a size in MiB, or a dash for none.
func orDash(size int64) string {
	if size == 0 {
		return "—"
	}
	return mib(size)
}

// memoryNote says how the operator's memory is measured.
const memoryNote = "*Peak RSS per process*: each operator process's high-water mark (VmHWM), sampled every second; *largest worker*: the largest high-water mark of the worker processes it started (where it compiles and renders), sampled every second, so a worker replaced between two samples may be missed; *all together*: the largest sum of the resident memory (VmRSS) of the operator processes and their workers at one sample.\n"

func setup(s settings) string {
	return "Each Service is the shape of Flux's kustomize-controller benchmark: a Deployment scaled to zero, a ServiceAccount, a Service and a ConfigMap (test/bench/fleet/package), with its own inputs, all Services of one package. " +
		"The bench creates the Services as `calaf deploy` does, carrying the operator's finalizer (a Service created without it, by a GitOps tool say, costs one write more: the operator's finalizer patch on its first reconcile), " + fmt.Sprint(s.workers) + " at a time, as many as the concurrent baseline's workers, and follows them through a watch (one LIST, then the events of their changes, tallied as they arrive; the tally looked at every 100 ms). " +
		"Every run's namespace is deleted, and its deletion waited for, before the next run starts (test/bench/fleet clearNamespace), so that no run pays for an earlier one's objects: the API server's ClusterIP allocator reads every allocated address for each Service it creates, so its cost per Service grows with the Services the cluster holds. " +
		"*Ready* (all Services Ready; for the baselines, all Deployments Current) is the cluster's figure more than Calaf's: kube-controller-manager must write each Deployment's status first; the test ground runs it with `--kube-api-qps " + os.Getenv("CALAF_KCM_QPS") + "` (default 20) so that it is not the only thing measured. " +
		fmt.Sprintf("The baselines send one server-side apply request per object, through a client allowing 200 requests per second (burst 400); the operator runs with `--kube-api-qps %g --kube-api-burst %d` (its defaults are 100 and 300) and `--concurrency %d` (its default: %d), with its default garbage collection target (`--gc-percent %d`) and `--settle-delay %s` (its default: %s), and watches a namespace of its own. ", s.operatorQPS, int(2*s.operatorQPS), s.operatorConcurrency(), operator.DefaultOptions().Concurrency, operator.DefaultGCPercent, s.operatorSettleDelay(), operator.DefaultOptions().SettleDelay) +
		"Requests are counted by a proxy in the bench process that stands between the measured client (the operator, or the baseline's) and the API server, and are divided by the number of Services; the proxy speaks plain HTTP, and both the baseline's client and the operator keep 25 idle connections to it and ask for no gzip (the operator's own settings over plain HTTP; over TLS, as in a cluster, one HTTP/2 connection carries all). The operator's requests are counted from the first Service created until all were Ready (its start-up LISTs and WATCHes before that are not counted). " +
		"With `-backlog` (the default), each round also runs the operator started after its Services were created: its window (time, CPU, requests) begins as the operator process starts (the scenario of an operator restarted, or upgraded, with new Services waiting).\n\n"
}

func writeTimes(b *strings.Builder, s settings, runs []result) {
	seq, conc := runs[0], runs[1]
	b.WriteString("| run | Services report Applied | ÷ sequential | ÷ 4 workers | last apply answered | ÷ 4 workers | all Ready | peak RSS |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range runs {
		fmt.Fprintf(b, "| %s | %.1f s | %.2f× | %.2f× | %.1f s | %.2f× | %.1f s | %s |\n", r.name, r.applied.Seconds(), r.applied.Seconds()/seq.applied.Seconds(),
			r.applied.Seconds()/conc.applied.Seconds(), r.lastApply.Seconds(), ratio(r.lastApply, conc.lastApply), r.duration.Seconds(), strings.TrimPrefix(rss(r.peakRSS), "peak RSS "))
	}
	b.WriteString("\n*Services report Applied*: from the first Service created until every Service's status says `Applied` — what `kubectl wait`, `calaf deploy --wait` or a GitOps tool's health check waits for; for the baselines, until their last apply request was answered. " +
		"*Last apply answered* (a diagnostic): until the operator's last server-side apply request was answered, counted by the proxy. The difference is the status: a Service's status patch waits for its Deployment's controller to look at it (at most the settle delay) so that one patch says Applied and Ready.\n\n")
}

func writeRequests(b *strings.Builder, n int, runs []result) {
	b.WriteString("Requests per Service (" + fmt.Sprint(objectsPerService) + " objects each):\n\n| run | " + strings.Join(columns, " | ") + " | writes |\n|---|" + strings.Repeat("---:|", len(columns)+1) + "\n")
	for _, r := range runs {
		c := perColumn(r.requests, n)
		fmt.Fprintf(b, "| %s |", r.name)
		for _, col := range columns {
			fmt.Fprintf(b, " %.2f |", c[col])
		}
		fmt.Fprintf(b, " %.2f |\n", writes(c))
	}
	b.WriteString("\n*writes*: apply, status and other patches, events and other POSTs, DELETEs (PUTs are the leader election's lease). By resource, the operator's: " + strings.Join(perService(lastOperatorRun(runs).requests, n), ", ") + ".\n\n")
}

// writeTargets writes the verdicts of the medians of the rounds; the time target is judged
// on each round's operator run against the same round's 4-worker baseline (the median of
// those ratios), so that a slower round is compared with its own baseline.
func writeTargets(b *strings.Builder, s settings, rounds [][]result, smaller []result) {
	runs := medians(rounds)
	calaf, conc := runs[2], runs[1]
	c := perColumn(calaf.requests, s.n)
	reported, each := pairedRatio(rounds, func(r result) time.Duration { return r.applied })
	lastApply, _ := pairedRatio(rounds, func(r result) time.Duration { return r.lastApply })
	fmt.Fprintf(b, "Targets, for %s (the time target on each round's ratio to the same round's 4-worker baseline, their median):\n\n", calaf.name)
	fmt.Fprintf(b, "- Services report Applied ≤ 1.5× the 4-worker baseline's time — %s (%.2f×%s; the last apply answered at %.2f×).\n",
		benchreport.Verdict(reported > 0 && reported <= 1.5), reported, roundsOf(each), lastApply)
	fmt.Fprintf(b, "- writes per Service, events counted, ≤ one apply per object and one status patch (%d) — %s (%.2f: %.2f applies, %.2f status patches, %.2f events, %.2f other).\n",
		objectsPerService+1, benchreport.Verdict(writes(c) <= objectsPerService+1.005), writes(c), c["apply"], c["status patch"], c["POST event"], max(writes(c)-c["apply"]-c["status patch"]-c["POST event"], 0))
	fmt.Fprintf(b, "- no GET a cache or the apply response could answer — %s (%.2f GETs per Service, %.2f of them 404).\n", benchreport.Verdict(c["GET"]+c["GET 404"] < 0.05), c["GET"]+c["GET 404"], c["GET 404"])
	split := ""
	if calaf.rssSplit != "" {
		split = "; at its peak " + calaf.rssSplit
	}
	fmt.Fprintf(b, "- peak RSS ≤ 150 MiB without a memory limit — %s (%s%s).\n", benchreport.Verdict(calaf.peakRSS > 0 && calaf.peakRSS <= 150<<20), strings.TrimPrefix(rss(calaf.peakRSS), "peak RSS "), split)
	if len(smaller) > 2 {
		// Linear, with 8% of slack: 3.6× from 300 to 1,000.
		growth, bound := calaf.applied.Seconds()/smaller[2].applied.Seconds(), 1.08*float64(s.n)/float64(s.smaller)
		fmt.Fprintf(b, "- %d → %d Services grows at most linearly (≤ %.1f×) — %s (Services report Applied %.2f×, the last apply answered %.2f×; the 4-worker baseline %.2f×, the sequential one %.2f×).\n",
			s.smaller, s.n, bound, benchreport.Verdict(growth <= bound), growth, ratio(calaf.lastApply, smaller[2].lastApply),
			conc.applied.Seconds()/smaller[1].applied.Seconds(), runs[0].applied.Seconds()/smaller[0].applied.Seconds())
	}
	if backlog, ok := backlogRun(runs); ok {
		c := perColumn(backlog.requests, s.n)
		fmt.Fprintf(b, "\nNot a target: the %s (the operator's own work from its start, none of the creates in its window, and the cluster's controllers given all %d Deployments at once): Services report Applied at %.2f× the 4-worker baseline; %.2f writes per Service (%.2f applies, %.2f status patches, %.2f events).\n",
			backlog.name, s.n, backlog.applied.Seconds()/conc.applied.Seconds(), writes(c), c["apply"], c["status patch"], c["POST event"])
	}
}

// pairedRatio is the median over rounds of the operator run's figure (runs[2]) divided by
// the same round's 4-worker baseline's (runs[1]), and each round's ratio.
func pairedRatio(rounds [][]result, figure func(result) time.Duration) (float64, []float64) {
	return pairedRatioOf(rounds, 2, 1, figure)
}

// pairedRatioOf is the median over rounds of run of's figure divided by the same round's
// run base's, and each round's ratio.
func pairedRatioOf(rounds [][]result, of, base int, figure func(result) time.Duration) (float64, []float64) {
	var each []float64
	for _, runs := range rounds {
		each = append(each, ratio(figure(runs[of]), figure(runs[base])))
	}
	sorted := slices.Sorted(slices.Values(each))
	switch n := len(sorted); {
	case n == 0:
		return 0, nil
	case n%2 == 1:
		return sorted[n/2], each
	default:
		return (sorted[n/2-1] + sorted[n/2]) / 2, each
	}
}

// roundsOf lists the rounds' ratios, when there are several.
func roundsOf(each []float64) string {
	if len(each) < 2 {
		return ""
	}
	parts := make([]string, len(each))
	for i, r := range each {
		parts[i] = fmt.Sprintf("%.2f×", r)
	}
	return ", the median of the rounds' " + strings.Join(parts, ", ")
}

// lastOperatorRun is the last run of runs but the operator started after its Services.
func lastOperatorRun(runs []result) result {
	for i := len(runs) - 1; i > 0; i-- {
		if !runs[i].backlog {
			return runs[i]
		}
	}
	return runs[0]
}

// backlogRun returns the run of the operator started after its Services, if one ran.
func backlogRun(runs []result) (result, bool) {
	for _, r := range runs {
		if r.backlog {
			return r, true
		}
	}
	return result{}, false
}
