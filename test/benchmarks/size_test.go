package benchmarks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"calaf.io/calaf/render"
	"calaf.io/calaf/test/benchreport"
	"calaf.io/calaf/tosca"
)

const sizeSectionTitle = "## Package size"

// maxSizeGrowth is the goal for render time from 100 to 1,000 node templates: linear,
// with room for a constant part.
const maxSizeGrowth = 12.0

// writeChainPackage writes a package of n node templates in a chain of ConfigMap and
// Deployment pairs: each Deployment mounts its ConfigMap and depends on the one before.
func writeChainPackage(tb testing.TB, dir string, n int) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString("tosca_definitions_version: tosca_simple_yaml_1_3\nimports:\n- https://calaf.io/profiles/kubernetes/1.0/profile.yaml\n")
	b.WriteString("topology_template:\n  inputs:\n    greeting: { type: string, default: hello }\n  node_templates:\n")
	for i := range n / 2 {
		fmt.Fprintf(&b, "    cm%d:\n      type: calaf.nodes.ConfigMap\n      properties:\n        data:\n          greeting: { get_input: greeting }\n          index: '%d'\n", i, i)
		fmt.Fprintf(&b, "    dep%d:\n      type: calaf.nodes.Deployment\n      properties:\n        image: busybox:1.36\n      requirements:\n      - mounts: cm%d\n", i, i)
		if i > 0 {
			fmt.Fprintf(&b, "      - dependency: dep%d\n", i-1)
		}
	}
	path := filepath.Join(dir, fmt.Sprintf("chain-%d", n))
	if err := os.MkdirAll(path, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "service.yaml"), []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// sizeRun is one compile and render of a chain package, with a timeout for the render.
func sizeRun(dir string, timeout time.Duration) (compile, rendered time.Duration, err error) {
	ctx := context.Background()
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		return 0, 0, err
	}
	defer pkg.Close()
	start := time.Now()
	compiled, err := tosca.NewCompiler(1).Compile(ctx, pkg, nil)
	if err != nil {
		return 0, 0, err
	}
	compile, start = time.Since(start), time.Now()
	_, err = render.NewRenderer(1).Render(ctx, compiled, render.Options{Service: "bench", Namespace: "bench", Timeout: timeout})
	return compile, time.Since(start), err
}

// TestSizeReport measures compile and render of chain packages of 10, 100 and 1,000 node
// templates (the median of interleaved rounds), whether the default
// settings render 1,000, and writes the "Package size" section of the -report file.
func TestSizeReport(t *testing.T) {
	if *report == "" {
		t.Skip("writes docs/benchmarks.md when run by make bench (-report)")
	}
	dir := t.TempDir()
	sizes := []int{10, 100, 1000}
	compiles, renders := map[int][]time.Duration{}, map[int][]time.Duration{}
	for range max(*rounds/2, 3) {
		for _, n := range sizes {
			c, rd, err := sizeRun(writeChainPackage(t, dir, n), 30*time.Minute)
			if err != nil {
				t.Fatalf("%d node templates: %v", n, err)
			}
			compiles[n], renders[n] = append(compiles[n], c), append(renders[n], rd)
		}
	}
	_, _, defaultErr := sizeRun(writeChainPackage(t, dir, 1000), 0)
	process := renderProcess(t, writeChainPackage(t, dir, 1000))
	section := sizeMarkdown(sizes, compiles, renders, defaultErr, process)
	if err := benchreport.WriteBenchmark(*report, section); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", *report, section)
}

// renderRun is one whole `calaf render` process: its wall time, peak RSS and outcome.
type renderRun struct {
	wall   time.Duration
	maxRSS int64 // KiB, of the largest process waited for (the CLI or its worker)
	err    error
}

// renderProcess runs `calaf render` (built here) on a package with the default settings:
// the package work in a worker process, the default script timeout and worker limits. GNU
// time reports the peak RSS (of calaf or, larger, its worker).
func renderProcess(t *testing.T, dir string) renderRun {
	tmp := t.TempDir()
	bin := buildBinary(t, tmp, "calaf", "calaf.io/calaf/cmd/calaf-full")
	rss := filepath.Join(tmp, "maxrss")
	var stderr strings.Builder
	cmd := exec.Command(gnuTime, "-f", "%M", "-o", rss, bin, "render", dir)
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	run := renderRun{wall: time.Since(start)}
	if data, readErr := os.ReadFile(rss); readErr == nil {
		fields := strings.Fields(string(data)) // a failed command's line comes first
		if len(fields) > 0 {
			run.maxRSS, _ = strconv.ParseInt(fields[len(fields)-1], 10, 64)
		}
	}
	if err != nil {
		run.err = fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return run
}

func sizeMarkdown(sizes []int, compiles, renders map[int][]time.Duration, defaultErr error, process renderRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", sizeSectionTitle)
	fmt.Fprintf(&b, "Written by `make bench` (test/benchmarks, TestSizeReport) on %s: %s, %s/%s, %d CPUs, %s; load average at the end %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), benchreport.CPUModel(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), benchreport.LoadAverage())
	fmt.Fprintf(&b, "Chain packages of N node templates (ConfigMap + Deployment pairs, each Deployment mounting its ConfigMap and depending on the one before), compiled and rendered in-process; medians of %d interleaved rounds.\n\n", len(renders[sizes[0]]))
	b.WriteString("| node templates | compile | render | render / previous size |\n|---:|---:|---:|---:|\n")
	var previous time.Duration
	for _, n := range sizes {
		c, r := medianDuration(compiles[n]), medianDuration(renders[n])
		growth := "—"
		if previous > 0 {
			growth = fmt.Sprintf("%.1f×", float64(r)/float64(previous))
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", n, c.Round(time.Millisecond), r.Round(time.Millisecond), growth)
		previous = r
	}
	growth := float64(medianDuration(renders[1000])) / float64(medianDuration(renders[100]))
	defaults := "renders"
	if defaultErr != nil {
		defaults = "fails: " + strings.ReplaceAll(defaultErr.Error(), "|", "\\|")
	}
	processOutcome := fmt.Sprintf("renders in %s, peak RSS of the largest process %d MiB", process.wall.Round(100*time.Millisecond), process.maxRSS/1024)
	if process.err != nil {
		processOutcome = "fails: " + strings.ReplaceAll(process.err.Error(), "|", "\\|")
	}
	b.WriteString("\nWhat keeps it linear: Calaf resolves requirements with its own indexed resolution (render/resolve.js: a requirement looks only at the node templates its node template name, node type or capability type can match; relationships counted as they are added) and evaluates values without building a path per value, walking the topology in Go (tosca/values.go, called from render/values.js), both held to Puccini's own results by equivalence tests (render/resolve_test.go); TOSCA functions find a named node template through an index; each node's realm parses only the views its renderer reads. Deadlines grow with the work (render.Budget): the script timeout once for every started 100 node templates, each renderer the timeout at most.\n")
	fmt.Fprintf(&b, "\nTargets:\n\n- render of 1,000 node templates ≤ %.0f× that of 100 — %s (%.1f×).\n- the default settings render 1,000 node templates — %s (in process: %s; `calaf-full render` as a process, with its worker, the default script timeout and worker limits: %s).\n",
		maxSizeGrowth, benchreport.Verdict(growth <= maxSizeGrowth), growth, benchreport.Verdict(defaultErr == nil && process.err == nil), defaults, processOutcome)
	return b.String()
}
