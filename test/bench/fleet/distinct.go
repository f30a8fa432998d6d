package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/profiles"
	"calaf.io/calaf/source"
	"calaf.io/calaf/test/benchreport"
	"calaf.io/calaf/test/rawpuccini"
	"calaf.io/calaf/tosca"
)

// entryFile is the service template of the bench package.
const entryFile = "service.yaml"

// runDistinct gives every Service its own package revision and runs -rounds rounds of
// raw Puccini compiling them all in a loop, then the operator on the Services; it reports
// their medians.
func (b *bench) runDistinct(ctx context.Context, report string) error {
	dir, err := os.MkdirTemp("", "calaf-fleet-packages-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("writing %d package revisions\n", b.n)
	if b.archives, err = writePackages(dir, b.n); err != nil {
		return err
	}
	var rounds [][]result
	for i := 0; i < b.rounds; i++ {
		results, err := b.order.run([]func() (result, error){
			func() (result, error) { return rawRun(ctx, dir, b.n) },
			func() (result, error) {
				return b.operatorRun(ctx, fleet{n: b.n, namespace: fmt.Sprintf("fleet-distinct-%d-r%d-%s", b.n, i, runID), selectors: []string{""}})
			},
		})
		if err != nil {
			return err
		}
		printRound(i, b.n, results)
		rounds = append(rounds, results)
	}
	if report == "" {
		return nil
	}
	return writeDistinctReport(report, b.settings, medians(rounds))
}

// variant returns the service template of Service i's own package revision: the bench
// package's, its template_version made 1.i, so that every revision has its own digest.
func variant(template []byte, i int) ([]byte, error) {
	version := []byte("template_version: '1.0'")
	if bytes.Count(template, version) != 1 {
		return nil, fmt.Errorf("the bench package's %s has no single %q", entryFile, version)
	}
	return bytes.Replace(template, version, fmt.Appendf(nil, "template_version: '1.%d'", i), 1), nil
}

// writePackages writes the package revisions of n Services under dir, one directory each
// named after its Service, and returns their archives.
func writePackages(dir string, n int) ([][]byte, error) {
	template, err := os.ReadFile(filepath.Join(packageDir(), entryFile))
	if err != nil {
		return nil, err
	}
	var archives [][]byte
	for i := 0; i < n; i++ {
		data, err := variant(template, i)
		if err != nil {
			return nil, err
		}
		pkgDir := filepath.Join(dir, serviceName(i))
		if err := os.Mkdir(pkgDir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(pkgDir, entryFile), data, 0o644); err != nil {
			return nil, err
		}
		archive, err := packDir(pkgDir)
		if err != nil {
			return nil, err
		}
		archives = append(archives, archive)
	}
	return archives, nil
}

// packDir returns the upload archive of the package in dir.
func packDir(dir string) ([]byte, error) {
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		return nil, err
	}
	defer pkg.Close()
	return source.Pack(pkg)
}

// rawResult is what the raw Puccini loop measured of itself.
type rawResult struct {
	Seconds float64 `json:"seconds"`
	PeakRSS int64   `json:"peakRSS"`
}

// rawRun runs rawLoop on the packages of n Services under dir in a child process (this
// program with -raw-puccini), so that the peak RSS is the loop's own.
func rawRun(ctx context.Context, dir string, n int) (result, error) {
	self, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	fmt.Printf("raw Puccini: compiling %d packages in a loop\n", n)
	cmd := exec.CommandContext(ctx, self, "-raw-puccini", dir, "-n", strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, fmt.Errorf("the raw Puccini loop: %w", err)
	}
	var raw rawResult
	if err := json.Unmarshal(out, &raw); err != nil {
		return result{}, fmt.Errorf("the raw Puccini loop's answer %q: %w", out, err)
	}
	d := time.Duration(raw.Seconds * float64(time.Second))
	return result{name: "raw Puccini: parse and compile in a loop", applied: d, duration: d, peakRSS: raw.PeakRSS, processRSS: []int64{raw.PeakRSS}}, nil
}

// rawLoop compiles the packages of n Services under dir with raw Puccini, one after the
// other, each with its Service's inputs, and writes to w as JSON how long the loop took
// and the peak RSS of this process.
func rawLoop(ctx context.Context, w io.Writer, dir string, n int) error {
	imports, err := profiles.Imports()
	if err != nil {
		return err
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := rawpuccini.Compile(ctx, filepath.Join(dir, serviceName(i), entryFile), imports, inputsOf(i)); err != nil {
			return err
		}
	}
	return json.NewEncoder(w).Encode(rawResult{Seconds: time.Since(start).Seconds(), PeakRSS: peakRSS(os.Getpid())})
}

// writeDistinctReport replaces the section of distinct packages in benchmarks.md with the
// medians of the rounds: raw Puccini's loop, then the operator.
func writeDistinctReport(path string, s settings, runs []result) error {
	defaults := operator.DefaultOptions()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d Services, each its own package\n\n", sectionTitle, s.n)
	fmt.Fprintf(&b, "Written by `make bench-fleet-distinct` (test/bench/fleet `-distinct`) %s %s\n\n", machine(), roundsNote(s, "raw Puccini's loop and the operator"))
	fmt.Fprintf(&b, "Every Service has its own package revision: test/bench/fleet/package with its `template_version` made `1.<i>`, so that every archive and every package digest differs; each is uploaded as a ConfigMap of its own before the clock starts. The Services are otherwise those of `make bench-fleet` (the same objects, their own inputs; *applied* and *Ready* as there), so every Service costs the operator a fetch (its ConfigMap, unpacked into the package cache on disk), a Puccini parse and compile that no cache can answer, a render and its applies. "+
		"The operator runs `--concurrency %d --kube-api-qps %g`, watches a namespace of its own, and compiles and renders in its %d worker processes, as many packages at once as it has workers (one compile per compile key at a time, tosca.Compiler.CompileWith). "+
		"*Raw Puccini* parses and compiles the same %d package directories, each with its Service's inputs, one after the other with a new parser each time (test/rawpuccini, as in the compile benchmarks), in a child process of the bench: its time is the loop's alone, its peak RSS the child's own high-water mark (VmHWM) at the end of the loop. It fetches, renders and applies nothing, and uses one core.\n\n",
		s.operatorConcurrency(), s.operatorQPS, defaults.Workers.Size, s.n)
	fmt.Fprintf(&b, "The operator's caches, at their defaults (`calaf operator`): `--compile-cache-size %d` compiled packages (keyed by digest and inputs) and as many parsed templates as an eighth of that, at least 8, for binding inputs; `--render-cache-size %d` renders; `--package-cache-bytes %d` MiB of unpacked packages on disk; each worker keeps the Clouts of its last compiles and is replaced after %d requests. With %d packages the in-memory caches hold at most %d compiled ones: a Service reconciled again after its compile was evicted is compiled again, which *compiles per Service* counts (the operator's `calaf_compile_duration_seconds`: compiles no cache answered).\n\n",
		defaults.CompileCacheSize, defaults.RenderCacheSize, defaults.PackageCacheBytes>>20, defaults.Workers.MaxRequests, s.n, defaults.CompileCacheSize)
	writeRunTable(&b, "raw Puccini", runs)
	calaf := runs[1]
	fmt.Fprintf(&b, "Time to all applied, operator ÷ raw Puccini: %.2f×. Compiles per Service: %.2f, %.2f of them failed; raw Puccini compiles each package once. "+
		"A package the operator has not compiled before costs it one compile; only a package compiled again with other inputs gets a template (tosca/bind.go, three more compiles: without inputs — which fails on a required input such as `app` —, with placeholders, with sentinel values), after which each Service's inputs are bound, not compiled.\n\n",
		calaf.applied.Seconds()/runs[0].applied.Seconds(), float64(calaf.compiles)/float64(s.n), float64(calaf.failedCompiles)/float64(s.n))
	writeRequests(&b, s.n, runs[1:])
	b.WriteString(memoryNote)
	return benchreport.WriteBenchmark(path, b.String())
}
