// Package benchmarks measures what Calaf adds to Puccini: per example package, a cold
// compile (open, digest, preflight, Puccini parse and compile, with a new Compiler each
// time) against a baseline of raw Puccini parsing and compiling the same package with a
// new parser each time, and a cached render (what a resync costs). `make bench` runs them
// and writes docs/benchmarks.md.
package benchmarks

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"calaf.io/calaf/profiles"
	"calaf.io/calaf/render"
	"calaf.io/calaf/test/rawpuccini"
	"calaf.io/calaf/tosca"
)

const examplesDir = "../../examples"

// examples lists the example packages.
func examples(tb testing.TB) []string {
	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// openExample opens an example package (to know its entry template).
func openExample(tb testing.TB, name string) *tosca.Package {
	pkg, err := tosca.Open(filepath.Join(examplesDir, name), tosca.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	return pkg
}

// rawPuccini parses and compiles a template the way a Puccini user does (rawpuccini.Compile).
// The Calaf profile's public import URL is mapped to its embedded files, registered once
// beforehand.
func rawPuccini(b *testing.B, entry string, imports map[string]string) {
	if err := rawpuccini.Compile(context.Background(), entry, imports, nil); err != nil {
		b.Fatal(err)
	}
}

// The benchmarks of one example, shared by the Benchmark functions and the report.

func benchRawPuccini(name string) func(*testing.B) {
	return func(b *testing.B) {
		imports, err := profiles.Imports()
		if err != nil {
			b.Fatal(err)
		}
		pkg := openExample(b, name)
		defer pkg.Close()
		entry, _ := pkg.Path(pkg.Entry)
		rawPuccini(b, entry, imports) // warm up like the others
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			rawPuccini(b, entry, imports)
		}
	}
}

func benchColdCompile(name string) func(*testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		dir := filepath.Join(examplesDir, name)
		pkg := openExample(b, name) // warm up like the others
		if _, err := tosca.NewCompiler(1).Compile(ctx, pkg, nil); err != nil {
			b.Fatal(err)
		}
		pkg.Close()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			pkg, err := tosca.Open(dir, tosca.DefaultLimits())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tosca.NewCompiler(1).Compile(ctx, pkg, nil); err != nil {
				b.Fatal(err)
			}
			pkg.Close()
		}
	}
}

func benchRender(name string) func(*testing.B) {
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
		for range b.N {
			if _, err := render.NewRenderer(1).Render(ctx, compiled, opts); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchCachedRender(name string) func(*testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		pkg := openExample(b, name)
		defer pkg.Close()
		compiler, renderer := tosca.NewCompiler(4), render.NewRenderer(4)
		inputs := map[string]any{}
		opts := render.Options{Service: "bench", Namespace: "bench", Attributes: map[string]map[string]any{
			"web": {"ready_replicas": 1, "cluster_ip": "10.96.0.10"},
		}}
		compiled, err := compiler.Compile(ctx, pkg, inputs)
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
			compiled, err := compiler.Compile(ctx, pkg, inputs)
			if err != nil {
				b.Fatal(err)
			}
			result, err := renderer.Render(ctx, compiled, opts)
			if err != nil {
				b.Fatal(err)
			}
			if result != first {
				b.Fatal("not served from the cache")
			}
		}
	}
}

func runPerExample(b *testing.B, bench func(name string) func(*testing.B)) {
	for _, name := range examples(b) {
		b.Run(name, bench(name))
	}
}

// BenchmarkRawPuccini is the baseline: Puccini parse + compile of each example with a new
// parser each time, nothing of Calaf.
func BenchmarkRawPuccini(b *testing.B) { runPerExample(b, benchRawPuccini) }

// BenchmarkColdCompile opens each example (digest) and compiles it with a new Compiler
// (preflight, Puccini parse and compile), as for a package never seen before.
func BenchmarkColdCompile(b *testing.B) { runPerExample(b, benchColdCompile) }

// BenchmarkRender renders each compiled example with a new Renderer each time: resolve,
// coerce, the profile's renderers, outputs.
func BenchmarkRender(b *testing.B) { runPerExample(b, benchRender) }

// BenchmarkCachedRender is what rendering a package again costs once it was compiled and
// rendered with the same inputs and live attributes: a compile cache hit and a render
// cache hit.
func BenchmarkCachedRender(b *testing.B) { runPerExample(b, benchCachedRender) }
