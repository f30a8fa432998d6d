//go:build linux

package benchmarks

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"calaf.io/calaf/profiles"
	"calaf.io/calaf/test/benchreport"
)

const processSectionTitle = "## Whole process: calaf compile and validate"

// maxProcessRatio is the target of a whole `calaf compile` or `calaf validate` process
// against a whole `puccini-tosca compile` process of the same package.
const maxProcessRatio = 1.2

// processRun is what one process cost.
type processRun struct {
	wall, cpu time.Duration
	// rssKiB is the peak resident memory of the process or, larger, of a child it waited
	// for (calaf's worker).
	rssKiB int64
}

// processCase is a command line measured round after round.
type processCase struct {
	label string
	args  []string
	// judged cases are held to maxProcessRatio against their table's first case.
	judged bool
	runs   []processRun
}

// TestProcessReport measures whole processes and writes the "Whole process" section of
// the -report file: `calaf compile` and `calaf validate` (the front and its isolated
// calaf-offline child), calaf-offline alone with the hidden --in-process, and calaf-full
// with its worker, against `puccini-tosca compile` of the same example, all built here,
// -rounds interleaved rounds each in rotating order; medians of wall time, CPU time (user
// and system, waited-for children included) and peak RSS. It also times `--help` of the
// binaries (startup alone) and sums their package initialization (GODEBUG=inittrace=1).
// It only measures and writes: no verdict fails it.
func TestProcessReport(t *testing.T) {
	if *report == "" {
		t.Skip("writes docs/benchmarks.md when run by make bench (-report)")
	}
	dir := t.TempDir()
	bins := calafBinaries{
		front:   buildBinary(t, dir, "calaf", "calaf.io/calaf/cmd/calaf"),
		full:    buildBinary(t, dir, "calaf-full", "calaf.io/calaf/cmd/calaf-full"),
		offline: buildBinary(t, dir, "calaf-offline", "calaf.io/calaf/cmd/calaf-full", "-tags", "calaf_offline"),
	}
	puccini := buildBinary(t, dir, "puccini-tosca", "github.com/tliron/puccini/executables/puccini-tosca")
	startup := []*processCase{{label: "`calaf-full --help`", args: []string{bins.full, "--help"}},
		{label: "`calaf-offline --help`", args: []string{bins.offline, "--help"}},
		{label: "`puccini-tosca --help`", args: []string{puccini, "--help"}}}
	measureCases(t, dir, startup)
	tables := map[string][]*processCase{}
	for _, name := range examples(t) {
		tables[name] = exampleCases(t, bins, puccini, name)
		measureCases(t, dir, tables[name])
	}
	inits := []initCost{initTrace(t, bins.full), initTrace(t, bins.offline), initTrace(t, puccini)}
	section := processMarkdown(startup, tables, inits)
	if err := benchreport.WriteBenchmark(*report, section); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", *report, section)
}

// calafBinaries are the binaries make build installs side by side.
type calafBinaries struct {
	front, full, offline string
}

// buildBinary builds a main package into dir, as `make build` does (no cgo, -trimpath),
// with the extra go build flags.
func buildBinary(t *testing.T, dir, name, pkg string, extra ...string) string {
	bin := filepath.Join(dir, name)
	build := exec.Command("go", append(append([]string{"build", "-trimpath"}, extra...), "-o", bin, pkg)...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// exampleCases are the command lines of one example: raw Puccini first (the baseline),
// its Calaf profile imports mapped to the files of this repository.
func exampleCases(t *testing.T, bins calafBinaries, puccini, name string) []*processCase {
	pkg := openExample(t, name)
	entry, _ := pkg.Path(pkg.Entry)
	pkg.Close()
	dir, err := filepath.Abs(filepath.Join(examplesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	raw := append([]string{puccini, "compile"}, profileMappings(t)...)
	return []*processCase{
		{label: "`puccini-tosca compile` (the baseline)", args: append(raw, entry)},
		{label: "`calaf compile`", args: []string{bins.front, "compile", dir}, judged: true},
		{label: "`calaf-offline compile --in-process`", args: []string{bins.offline, "compile", "--in-process", dir}},
		{label: "`calaf-full compile` (with its worker)", args: []string{bins.full, "compile", dir}},
		{label: "`calaf validate`", args: []string{bins.front, "validate", dir}, judged: true},
		{label: "`calaf-offline validate --in-process`", args: []string{bins.offline, "validate", "--in-process", dir}},
		{label: "`calaf-full validate` (with its worker)", args: []string{bins.full, "validate", dir}},
	}
}

// profileMappings are puccini-tosca's --map-url flags that serve each public Calaf
// profile URL from the profiles directory of this repository.
func profileMappings(t *testing.T) []string {
	const publicRoot = "https://calaf.io/profiles/"
	imports, err := profiles.Imports()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../../profiles")
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for public := range imports {
		file := filepath.Join(root, strings.TrimPrefix(public, publicRoot))
		flags = append(flags, "--map-url="+public+"=file://"+file)
	}
	slices.Sort(flags)
	return flags
}

// measureCases runs every case -rounds times, interleaved, the order rotating round by
// round so that the machine's noise falls on all of them alike.
func measureCases(t *testing.T, dir string, cases []*processCase) {
	for round := range *rounds {
		for i := range cases {
			c := cases[(i+round)%len(cases)]
			c.runs = append(c.runs, runProcess(t, dir, c.args))
		}
	}
}

// runProcess runs a command line to its end, its output discarded, and returns what it
// cost. GNU time starts it and reports its peak RSS: a process started from this test
// (vfork, then exec) would count the test's own peak in its Maxrss.
func runProcess(t *testing.T, dir string, args []string) processRun {
	rss := filepath.Join(dir, "maxrss")
	cmd := exec.Command(gnuTime, append([]string{"-f", "%M", "-o", rss}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	run := processRun{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	data, err := os.ReadFile(rss)
	if err != nil {
		t.Fatal(err)
	}
	if run.rssKiB, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err != nil {
		t.Fatalf("GNU time's %%M: %v", err)
	}
	return run
}

// gnuTime runs a command and writes its resource usage.
const gnuTime = "/usr/bin/time"

// medianRun is the median of each measure of the runs, taken separately.
func medianRun(runs []processRun) processRun {
	pick := func(f func(processRun) int64) int64 {
		values := make([]int64, len(runs))
		for i, r := range runs {
			values[i] = f(r)
		}
		slices.Sort(values)
		return values[len(values)/2]
	}
	return processRun{
		wall:   time.Duration(pick(func(r processRun) int64 { return int64(r.wall) })),
		cpu:    time.Duration(pick(func(r processRun) int64 { return int64(r.cpu) })),
		rssKiB: pick(func(r processRun) int64 { return r.rssKiB }),
	}
}

// initCost is what a binary's package initialization takes before main runs.
type initCost struct {
	// total is the median over runs of the summed clock time of all package inits;
	// largest are the packages with the largest median, largest first.
	total   time.Duration
	largest []packageInit
}

type packageInit struct {
	pkg   string
	clock time.Duration
}

// initTrace runs `bin --help` -rounds times with GODEBUG=inittrace=1 and returns its
// package initialization: the median total and the five largest packages.
func initTrace(t *testing.T, bin string) initCost {
	perPackage := map[string][]time.Duration{}
	var totals []time.Duration
	for range *rounds {
		cmd := exec.Command(bin, "--help")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s --help: %v\n%s", bin, err, stderr.String())
		}
		var total time.Duration
		for pkg, clock := range parseInitTrace(stderr.String()) {
			perPackage[pkg] = append(perPackage[pkg], clock)
			total += clock
		}
		totals = append(totals, total)
	}
	cost := initCost{total: medianDuration(totals)}
	for pkg, clocks := range perPackage {
		cost.largest = append(cost.largest, packageInit{pkg, medianDuration(clocks)})
	}
	slices.SortFunc(cost.largest, func(a, b packageInit) int { return int(b.clock - a.clock) })
	cost.largest = cost.largest[:min(5, len(cost.largest))]
	return cost
}

// parseInitTrace reads the lines "init PKG @T ms, C ms clock, ..." of the runtime's
// inittrace into each package's clock time.
func parseInitTrace(trace string) map[string]time.Duration {
	clocks := map[string]time.Duration{}
	for _, line := range strings.Split(trace, "\n") {
		var pkg, at string
		var ms float64
		if _, err := fmt.Sscanf(line, "init %s %s ms, %g ms clock", &pkg, &at, &ms); err == nil {
			clocks[pkg] += time.Duration(ms * float64(time.Millisecond))
		}
	}
	return clocks
}

// processMarkdown writes the section: startup alone, then each example's commands.
func processMarkdown(startup []*processCase, tables map[string][]*processCase, inits []initCost) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", processSectionTitle)
	fmt.Fprintf(&b, "Written by `make bench` (test/benchmarks, TestProcessReport) on %s: %s, %s/%s, %d CPUs, %s; load average at the end %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), benchreport.CPUModel(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), benchreport.LoadAverage())
	fmt.Fprintf(&b, "Whole processes, the binaries built by the test as `make build` builds them (`puccini-tosca` from the Puccini v0.22.7 of go.mod, the Calaf profile URLs mapped to this repository's files with `--map-url`), output discarded; each command line %d times, interleaved in rotating order; medians. "+
		"CPU is user + system time, the children's included (each process waits for its own); peak RSS (GNU time's %%M) is the largest process's. "+
		"`calaf` is the front (cmd/calaf, package front): it runs `calaf compile` and `calaf validate` in calaf-offline, the `calaf_offline` build of calaf-full, as a child that sets the worker limits on itself and tells the front each piece of work, so that a crash or a deadline ends in the diagnostic a worker's would (docs/robustness.md). "+
		"`calaf-offline … --in-process` is that child's work without the front and without limits; `calaf-full` is the whole of Calaf in one binary, with the worker process it starts for the package work.\n\n", *rounds)
	b.WriteString("| command | wall | CPU | peak RSS |\n|---|---:|---:|---:|\n")
	for _, c := range startup {
		m := medianRun(c.runs)
		fmt.Fprintf(&b, "| %s (startup alone) | %v | %v | %.1f MiB |\n", c.label, ms(m.wall), ms(m.cpu), mib(m.rssKiB))
	}
	b.WriteString("\n| example | command | wall | × baseline | CPU | × baseline | peak RSS | × baseline |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	worst := map[string]float64{}
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		writeProcessRows(&b, name, tables[name], worst)
	}
	fmt.Fprintf(&b, "\nPackage initialization before main (`GODEBUG=inittrace=1`, `--help`, median of %d): calaf-full %v (largest: %s); calaf-offline %v (largest: %s); puccini-tosca %v (largest: %s).\n",
		*rounds, ms(inits[0].total), initList(inits[0]), ms(inits[1].total), initList(inits[1]), ms(inits[2].total), initList(inits[2]))
	b.WriteString("\nReading it: Go initializes every package linked into a binary before main, whatever the command, and has no lazy loading of a linked package. " +
		"calaf-full links the CLI, the operator (controller-runtime, client-go and its scheme, kubectl's scheme) and Helm (its chartutil imports santhosh-tekuri/jsonschema/v6, which compiles the meta-schemas of five JSON Schema drafts at init), " +
		"and its worker is the same binary started again: `calaf-full compile` pays that initialization twice. " +
		"So the command line is three binaries (make build): the front, which links the standard library alone and starts in milliseconds; calaf-offline, which links Puccini, goja and the render stage but neither the operator nor Helm (etsi/helmchart is the only package that links Helm); and calaf-full, for every other command. " +
		"A package that deploys a Helm chart is refused by calaf-offline, which tells the front, and the front runs the command again in calaf-full (the same isolation). " +
		"No Calaf package computes anything at init but a few small maps and regular expressions.\n")
	fmt.Fprintf(&b, "\nTargets, wall time against `puccini-tosca compile` of the same package:\n\n- `calaf compile` ≤ %.1f× — %s (worst %.2f×).\n- `calaf validate` ≤ %.1f× — %s (worst %.2f×).\n",
		maxProcessRatio, benchreport.Verdict(worst["`calaf compile`"] <= maxProcessRatio), worst["`calaf compile`"],
		maxProcessRatio, benchreport.Verdict(worst["`calaf validate`"] <= maxProcessRatio), worst["`calaf validate`"])
	return b.String()
}

// writeProcessRows writes the rows of one example, each against the first (the baseline),
// and records the worst ratio of each judged command in worst.
func writeProcessRows(b *strings.Builder, example string, cases []*processCase, worst map[string]float64) {
	base := medianRun(cases[0].runs)
	for _, c := range cases {
		m := medianRun(c.runs)
		wallRatio := float64(m.wall) / float64(base.wall)
		fmt.Fprintf(b, "| %s | %s | %v | %.2f× | %v | %.2f× | %.1f MiB | %.2f× |\n", example, c.label, ms(m.wall), wallRatio,
			ms(m.cpu), float64(m.cpu)/float64(base.cpu), mib(m.rssKiB), float64(m.rssKiB)/float64(base.rssKiB))
		if c.judged {
			worst[c.label] = max(worst[c.label], wallRatio)
		}
	}
}

func initList(cost initCost) string {
	var parts []string
	for _, p := range cost.largest {
		parts = append(parts, fmt.Sprintf("%s %v", p.pkg, ms(p.clock)))
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }

func mib(kib int64) float64 { return float64(kib) / 1024 }
