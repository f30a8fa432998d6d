package benchmarks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"calaf.io/calaf/etsi/helmchart"
	"calaf.io/calaf/render"
	"calaf.io/calaf/test/benchreport"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/worker"
)

// TestMain lets the test binary serve as the workers of the pools it measures.
func TestMain(m *testing.M) {
	if code, isWorker := worker.Main(os.Args, helmchart.Engine{}); isWorker {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

const workerSectionTitle = "## Package work in worker processes"

// newWorkerPool returns a pool of one warm worker.
func newWorkerPool(tb testing.TB) *worker.Pool {
	opts := worker.DefaultOptions()
	opts.Size = 1
	pool, err := worker.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := pool.Warm(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return pool
}

// benchWorkerCompile is benchColdCompile with the compile in a worker.
func benchWorkerCompile(name string, pool *worker.Pool) func(*testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		dir := filepath.Join(examplesDir, name)
		for i := range b.N + 1 { // one round to warm up, like the others
			if i == 1 {
				b.ReportAllocs()
				b.ResetTimer()
			}
			pkg, err := tosca.Open(dir, tosca.DefaultLimits())
			if err != nil {
				b.Fatal(err)
			}
			compiler := tosca.NewCompiler(1)
			compiler.Run = pool.Compile
			if _, err := compiler.Compile(ctx, pkg, nil); err != nil {
				b.Fatal(err)
			}
			pkg.Close()
		}
	}
}

// benchWorkerRender renders in a worker with a new Renderer each time. With fresh, the
// Clout travels every time (a compile key the pool has not seen: what the first render
// after a compile costs); without, the worker holds it from the previous render.
func benchWorkerRender(name string, pool *worker.Pool, fresh bool) func(*testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		pkg := openExample(b, name)
		defer pkg.Close()
		compiled, err := tosca.NewCompiler(1).Compile(ctx, pkg, nil)
		if err != nil {
			b.Fatal(err)
		}
		opts := render.Options{Service: "bench", Namespace: "bench"}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			c := *compiled
			if fresh {
				c.Key = fmt.Sprintf("%s-%d-%d", compiled.Key, time.Now().UnixNano(), i)
			}
			renderer := render.NewRenderer(1)
			renderer.Run = pool.Render
			if _, err := renderer.Render(ctx, &c, opts); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchWorkerCachedRender is benchCachedRender with a compiler and renderer whose misses
// go to a worker: hits must cost what they cost without.
func benchWorkerCachedRender(name string, pool *worker.Pool) func(*testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		pkg := openExample(b, name)
		defer pkg.Close()
		compiler, renderer := tosca.NewCompiler(4), render.NewRenderer(4)
		compiler.Run, renderer.Run = pool.Compile, pool.Render
		opts := render.Options{Service: "bench", Namespace: "bench"}
		compiled, err := compiler.Compile(ctx, pkg, map[string]any{})
		if err != nil {
			b.Fatal(err)
		}
		first, err := renderer.Render(ctx, compiled, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			compiled, err := compiler.Compile(ctx, pkg, map[string]any{})
			if err != nil {
				b.Fatal(err)
			}
			if result, err := renderer.Render(ctx, compiled, opts); err != nil || result != first {
				b.Fatal("not served from the cache", err)
			}
		}
	}
}

type workerRow struct {
	example                          string
	raw, inProcess, isolated         []testing.BenchmarkResult
	render, sent, held, cached, none testing.BenchmarkResult
}

// TestWorkerReport measures what running package work in worker processes costs and
// writes the "Package work in worker processes" section of the -report file: a cold
// compile in a worker against raw Puccini and against the same compile in process (the
// three interleaved, -rounds times), renders in a worker against renders in process,
// cached paths, and whole `calaf validate` processes with and without a worker. It fails
// when a target is missed.
func TestWorkerReport(t *testing.T) {
	if *report == "" {
		t.Skip("writes docs/benchmarks.md when run by make bench (-report)")
	}
	pool := newWorkerPool(t)
	defer pool.Close()
	var rows []workerRow
	for _, name := range examples(t) {
		r := workerRow{example: name}
		for round := range *rounds {
			benches := []func(){
				func() { r.raw = append(r.raw, testing.Benchmark(benchRawPuccini(name))) },
				func() { r.inProcess = append(r.inProcess, testing.Benchmark(benchColdCompile(name))) },
				func() { r.isolated = append(r.isolated, testing.Benchmark(benchWorkerCompile(name, pool))) },
			}
			for i := range benches { // rotate the order round by round
				benches[(i+round)%len(benches)]()
			}
		}
		r.render = testing.Benchmark(benchRender(name))
		r.sent = testing.Benchmark(benchWorkerRender(name, pool, true))
		r.held = testing.Benchmark(benchWorkerRender(name, pool, false))
		r.none = testing.Benchmark(benchCachedRender(name))
		r.cached = testing.Benchmark(benchWorkerCachedRender(name, pool))
		t.Logf("%-16s raw %v, in process %v, worker %v; render %v, worker %v (Clout sent) %v (held); cached %v → %v",
			name, median(r.raw), median(r.inProcess), median(r.isolated), time.Duration(r.render.NsPerOp()),
			time.Duration(r.sent.NsPerOp()), time.Duration(r.held.NsPerOp()), time.Duration(r.none.NsPerOp()), time.Duration(r.cached.NsPerOp()))
		rows = append(rows, r)
	}
	validate, inProcess := validateProcesses(t)
	section := workerMarkdown(rows, validate, inProcess)
	if err := benchreport.WriteBenchmark(*report, section); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", *report, section)
	for _, r := range rows {
		if ratio := workerRatio(r); ratio > maxColdRatio {
			t.Errorf("%s: a cold compile in a worker is %.2f× raw Puccini, more than %.1f×", r.example, ratio, maxColdRatio)
		}
		if cached := time.Duration(r.cached.NsPerOp()); cached > maxCached {
			t.Errorf("%s: a cached render with workers takes %v, more than %v", r.example, cached, maxCached)
		}
	}
}

// workerRatio is the median cold compile in a worker over the median raw Puccini compile.
func workerRatio(r workerRow) float64 {
	return float64(median(r.isolated)) / float64(median(r.raw))
}

// validateProcesses times whole `calaf validate` processes of the network-service example,
// built here, with a worker and with the package work in process (the hidden flag
// --in-process), interleaved: medians of 9 each.
func validateProcesses(t *testing.T) (isolated, inProcess time.Duration) {
	bin := filepath.Join(t.TempDir(), "calaf")
	build := exec.Command("go", "build", "-o", bin, "calaf.io/calaf/cmd/calaf-full")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(extra ...string) time.Duration {
		start := time.Now()
		cmd := exec.Command(bin, append([]string{"validate", filepath.Join(examplesDir, "network-service")}, extra...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("calaf validate: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	var with, without []time.Duration
	for round := range 9 {
		if round%2 == 0 {
			with, without = append(with, run()), append(without, run("--in-process"))
		} else {
			without, with = append(without, run("--in-process")), append(with, run())
		}
	}
	return medianDuration(with), medianDuration(without)
}

func medianDuration(ds []time.Duration) time.Duration {
	sorted := slices.Sorted(slices.Values(ds))
	return sorted[len(sorted)/2]
}

func workerMarkdown(rows []workerRow, validate, inProcess time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", workerSectionTitle)
	fmt.Fprintf(&b, "Written by `make bench` (test/benchmarks, TestWorkerReport) on %s: %s, %s/%s, %d CPUs, %s; load average at the end %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), benchreport.CPUModel(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), benchreport.LoadAverage())
	b.WriteString("The operator and the CLI compile and render packages in worker processes (package worker, docs/robustness.md); a warm worker here, as in the operator's pool.\n\n")
	fmt.Fprintf(&b, "- **cold compile, in process / in a worker**: `tosca.Open`, then `Compiler.Compile` with a new Compiler, the compile in this process or sent to the worker (request, Puccini in the worker, the Clout encoded, sent back and decoded). With **raw Puccini**, the three run interleaved, %d rounds of `testing.Benchmark` each, in rotating order; medians.\n", *rounds)
	b.WriteString("- **render, in process / in a worker**: `Renderer.Render` with a new Renderer; in a worker either with the Clout sent (the first render of a compile) or held by the worker from the previous render.\n")
	b.WriteString("- **cached render**: `benchCachedRender` (a compile cache hit and a render cache hit), with and without workers behind the caches.\n\n")
	b.WriteString("| example | raw Puccini | cold compile in process | in a worker | worker / raw | worker / in process | render in process | in a worker, Clout sent | Clout held | cached render without → with workers |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	worst, worstCached := 0.0, time.Duration(0)
	for _, r := range rows {
		raw, in, iso := median(r.raw), median(r.inProcess), median(r.isolated)
		fmt.Fprintf(&b, "| %s | %v | %v | %v | %.2f× | %.2f× | %v | %v | %v | %v → %v |\n", r.example,
			raw.Round(10*time.Microsecond), in.Round(10*time.Microsecond), iso.Round(10*time.Microsecond), workerRatio(r), float64(iso)/float64(in),
			dur(r.render), dur(r.sent), dur(r.held), time.Duration(r.none.NsPerOp()), time.Duration(r.cached.NsPerOp()))
		worst = max(worst, workerRatio(r))
		worstCached = max(worstCached, time.Duration(r.cached.NsPerOp()))
	}
	fmt.Fprintf(&b, "\nWhole processes, `calaf-full validate examples/network-service` (the binary built by the test: the whole of Calaf, whose package work runs in a worker; medians of 9, interleaved): with its worker %v, with the hidden `--in-process` %v — %.2f×: the worker's start and its round trips.\n",
		validate.Round(time.Millisecond), inProcess.Round(time.Millisecond), float64(validate)/float64(inProcess))
	fmt.Fprintf(&b, "\nTargets:\n\n- cold compile in a worker ≤ %.1f× raw Puccini, medians — %s (worst %.2f×).\n- cached render with workers ≤ %v — %s (worst %v).\n",
		maxColdRatio, benchreport.Verdict(worst <= maxColdRatio), worst, maxCached, benchreport.Verdict(worstCached <= maxCached), worstCached)
	return b.String()
}

func dur(r testing.BenchmarkResult) time.Duration {
	return time.Duration(r.NsPerOp()).Round(10 * time.Microsecond)
}
