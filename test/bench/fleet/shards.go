package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/test/benchreport"
)

// shardLabel is the label that puts a Service in a shard (deploy/sharding).
const shardLabel = "sharding.calaf.io/key"

// shardLabels returns the labels of Service i among shards: shard 0, the main one, is
// the Services without the label; shard k the Services labelled shard-k. Nil for fewer
// than two shards.
func shardLabels(i, shards int) map[string]string {
	if shards < 2 || i%shards == 0 {
		return nil
	}
	return map[string]string{shardLabel: fmt.Sprintf("shard-%d", i%shards)}
}

// shardSelectors returns the --watch-label-selector of each of shards operators, as
// deploy/sharding sets them.
func shardSelectors(shards int) []string {
	selectors := []string{"!" + shardLabel}
	for k := 1; k < shards; k++ {
		selectors = append(selectors, fmt.Sprintf("%s=shard-%d", shardLabel, k))
	}
	return selectors
}

// runShards runs -rounds rounds of the Services through one operator and through -shards
// shard processes, which goes first alternating round by round, and reports their
// medians.
func (b *bench) runShards(ctx context.Context, report string) error {
	var rounds [][]result
	for i := 0; i < b.rounds; i++ {
		runs := []fleet{
			{n: b.n, namespace: fmt.Sprintf("fleet-shards1-%d-r%d-%s", b.n, i, runID), selectors: []string{""}, shards: b.shards},
			{n: b.n, namespace: fmt.Sprintf("fleet-shards%d-%d-r%d-%s", b.shards, b.n, i, runID), selectors: shardSelectors(b.shards), shards: b.shards},
		}
		var do []func() (result, error)
		for _, f := range runs {
			do = append(do, func() (result, error) { return b.operatorRun(ctx, f) })
		}
		results, err := b.order.run(do)
		if err != nil {
			return err
		}
		printRound(i, b.n, results)
		rounds = append(rounds, results)
	}
	if report == "" {
		return nil
	}
	return writeShardsReport(report, b.settings, medians(rounds))
}

// writeShardsReport replaces the shards section of benchmarks.md with the medians of the
// rounds: one operator, then the shards.
func writeShardsReport(path string, s settings, runs []result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d Services, %d shards against 1 operator\n\n", sectionTitle, s.n, s.shards)
	fmt.Fprintf(&b, "Written by `make bench-fleet-shards` (test/bench/fleet `-shards %d`) %s %s\n\n", s.shards, machine(), roundsNote(s, fmt.Sprintf("one operator and %d shards on the same Services, each run in a namespace of its own", s.shards)))
	fmt.Fprintf(&b, "The Services are those of `make bench-fleet` (one package, their own inputs; *applied* and *Ready* as there), labelled as deploy/sharding labels them, in both runs: Service *i* belongs to shard *i* mod %d, shard 0 (the main one) unlabelled, shard *k* labelled `%s=shard-k`, %d Services each. "+
		"*1 operator* is one process without a selector; *%d shards* are %d processes on the same namespace with `--watch-label-selector` %s (each shard's lease is named after its selector; the bench runs without leader election). "+
		"Every process runs `--concurrency %d --kube-api-qps %g --kube-api-burst %d` and its own %d workers, through a counting proxy of its own (the requests below are the shards' sum): %d shards together may send %d times the requests per second the one operator may.\n\n",
		s.shards, shardLabel, s.n/s.shards, s.shards, s.shards, "`"+strings.Join(shardSelectors(s.shards), "`, `")+"`", s.operatorConcurrency(), s.operatorQPS, int(2*s.operatorQPS), operator.DefaultOptions().Workers.Size, s.shards, s.shards)
	writeRunTable(&b, "1 operator", runs)
	one, sharded := runs[0], runs[1]
	fmt.Fprintf(&b, "%d shards ÷ 1 operator: time to all applied %.2f×, time to all Ready %.2f×; peak RSS %s against %s.\n\n", s.shards,
		sharded.applied.Seconds()/one.applied.Seconds(), sharded.duration.Seconds()/one.duration.Seconds(), mib(sharded.processRSS...), mib(one.processRSS...))
	writeRequests(&b, s.n, runs)
	fmt.Fprintf(&b, "What this can show, and what not: this machine has %d CPUs, and the API server, etcd, kube-controller-manager, the bench and every operator process and worker share them — the shards get no cores of their own, as Deployments spread over nodes would. "+
		"A ratio near or above 1 means that here the shared CPUs and the one API server bound the fleet's time; it does not show that shards would not help where each has cores of its own. A ratio well under 1 would mean that one operator was held back by itself (its concurrency, its client's rate limit, its one process) rather than by the machine. "+
		"What the run shows either way: what each Service costs in requests with shards (counted, as in `make bench-fleet`, from the first Service created: each shard's start-up LISTs and watches come before), and each shard's memory — a shard caches only its own Services but every object of any Calaf Service in the namespace (its cache selects objects by the Service label, not by shard), so its memory is not expected to halve with its Services.\n\n", runtime.NumCPU())
	b.WriteString(memoryNote)
	return benchreport.WriteBenchmark(path, b.String())
}
