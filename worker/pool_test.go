package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"calaf.io/calaf/etsi/helmchart"
	"calaf.io/calaf/render"
	"calaf.io/calaf/test/hostile"
	"calaf.io/calaf/test/raceworker"
	"calaf.io/calaf/tosca"
)

// testCommand is the command newPool's workers start with: nil (this test binary), or,
// under -race, a calaf binary built without it (test/raceworker says why).
var testCommand []string

// TestMain makes the test binary its own worker, as calaf is.
func TestMain(m *testing.M) {
	if code, isWorker := Main(os.Args, helmchart.Engine{}); isWorker {
		os.Exit(code)
	}
	if mode := os.Getenv(cpuSpinEnv); mode != "" {
		os.Exit(cpuSpin(mode))
	}
	if check := os.Getenv(confineCheckEnv); check != "" {
		var c confineCase
		if err := json.Unmarshal([]byte(check), &c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(confineCheck(c))
	}
	command, cleanup, err := raceworker.Command()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCommand = command
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// newPool returns a pool of this test binary's workers, closed with the test.
func newPool(t *testing.T, adjust func(*Options)) *Pool {
	t.Helper()
	opts := DefaultOptions()
	opts.Command = testCommand
	if adjust != nil {
		adjust(&opts)
	}
	pool, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// writePackage writes a one-template package and opens it.
func writePackage(t *testing.T, template string) *tosca.Package {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pkg.Close() })
	return pkg
}

func openExample(t *testing.T, name string) *tosca.Package {
	t.Helper()
	pkg, err := tosca.Open(filepath.Join("..", "examples", name), tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pkg.Close() })
	return pkg
}

// compileAndRender runs a package through the pool as the operator does.
func compileAndRender(ctx context.Context, pool *Pool, pkg *tosca.Package) (*render.Result, error) {
	compiler := tosca.NewCompiler(1)
	compiler.Run = pool.Compile
	compiled, err := compiler.Compile(ctx, pkg, nil)
	if err != nil {
		return nil, err
	}
	renderer := render.NewRenderer(1)
	renderer.Run = pool.Render
	return renderer.Render(ctx, compiled, render.Options{Service: "s", Namespace: "ns"})
}

// TestPoolMatchesInProcess compiles and renders the examples in workers and in this
// process: the results are the same, to the Go types of their values.
func TestPoolMatchesInProcess(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	for _, name := range []string{"hello-world", "network-service", "vendor-profile"} {
		pkg := openExample(t, name)
		isolated, err := compileAndRender(ctx, pool, pkg)
		if err != nil {
			t.Fatalf("%s in a worker: %v", name, err)
		}
		compiled, err := tosca.NewCompiler(1).Compile(ctx, pkg, nil)
		if err != nil {
			t.Fatal(err)
		}
		local, err := render.NewRenderer(1).Render(ctx, compiled, render.Options{Service: "s", Namespace: "ns"})
		if err != nil {
			t.Fatal(err)
		}
		isolated.Key, local.Key = "", ""
		if !reflect.DeepEqual(isolated, local) {
			t.Errorf("%s: the render in a worker differs from the render in process", name)
		}
		if len(isolated.Objects) == 0 || isolated.Objects[0] != isolated.Nodes[0].Objects[0] {
			t.Errorf("%s: objects not gathered from the nodes", name)
		}
	}
}

// TestCrashEndsOnlyTheWorker runs packages that crash their worker — a stack overflow in
// Puccini's Go code, a scriptlet exhausting memory — and checks that each is reported as
// a package problem saying why, and that the pool goes on serving.
func TestCrashEndsOnlyTheWorker(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, func(o *Options) { o.Limits.Memory = 256 << 20 })
	cases := []struct {
		name, template, kind, message string
	}{
		{"stack overflow", hostile.DerivationCycle, "stack overflow",
			"service.yaml: compile of the package crashed: stack overflow in github.com/tliron/puccini/tosca/grammars/tosca_v2_0.(*DataType).GetInternalTypeName (a goroutine stack above 64 MiB: a cycle in the package's types or data?)"},
		{"memory bomb", hostile.MemoryBomb, "memory", "service.yaml: render of the package exceeded 256 MiB of memory"},
	}
	good := openExample(t, "hello-world")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileAndRender(ctx, pool, writePackage(t, c.template))
			var ended *Error
			if !errors.As(err, &ended) {
				t.Fatalf("got %v, want a worker error", err)
			}
			if ended.Ending.Kind != c.kind || err.Error() != c.message {
				t.Errorf("got %s: %q\nwant %s: %q", ended.Ending.Kind, err.Error(), c.kind, c.message)
			}
			if !tosca.IsInvalid(err) {
				t.Errorf("a crash is not reported as a package problem")
			}
			if _, err := compileAndRender(ctx, pool, good); err != nil {
				t.Errorf("the pool does not serve after the crash: %v", err)
			}
		})
	}
}

// TestLimitsStopWorkers sets deadlines a compile cannot meet: the wall clock, then CPU
// time; the worker is stopped and the error says which limit.
func TestLimitsStopWorkers(t *testing.T) {
	ctx := context.Background()
	pkg := openExample(t, "network-service")
	wall := newPool(t, func(o *Options) { o.CompileTimeout = time.Millisecond })
	_, err := wall.Compile(ctx, pkg, nil, tosca.CompileOptions{})
	if err == nil || err.Error() != "Definitions/core.yaml: compile of the package did not finish within 1ms" {
		t.Errorf("wall deadline: %v", err)
	}
	cpu := newPool(t, func(o *Options) { o.CPUFactor = 1e-4 }) // 6 ms of the minute
	_, err = cpu.Compile(ctx, pkg, nil, tosca.CompileOptions{})
	if err == nil || err.Error() != "Definitions/core.yaml: compile of the package used more than 6ms of CPU time" {
		t.Errorf("CPU deadline: %v", err)
	}
}

// TestWorkersAreReused checks that a worker serves request after request, that a pool
// never runs more workers than its size, and that concurrent requests all succeed.
func TestWorkersAreReused(t *testing.T) {
	ctx := context.Background()
	var lock sync.Mutex
	exited := 0
	pool := newPool(t, func(o *Options) {
		o.Size = 2
		o.OnExit = func(Usage) { lock.Lock(); exited++; lock.Unlock() }
	})
	pkg := openExample(t, "hello-world")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := compileAndRender(ctx, pool, pkg)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	pool.lock.Lock()
	idle, served := len(pool.idle), 0
	for _, pr := range pool.idle {
		served += pr.served
	}
	pool.lock.Unlock()
	if idle < 1 || idle > 2 || served != 16 {
		t.Errorf("%d idle workers served %d requests, want 1 or 2 workers and 16 requests", idle, served)
	}
	lock.Lock()
	defer lock.Unlock()
	if exited != 0 {
		t.Errorf("%d workers exited", exited)
	}
}

// TestTaintedWorkerIsReplaced runs a scriptlet that the sandbox abandons in Go code past
// its deadline (a regular expression that backtracks): the worker answers, then is
// replaced, since the abandoned goroutine would still burn its CPU.
func TestTaintedWorkerIsReplaced(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	pkg := writePackage(t, strings.Replace(hostile.MemoryBomb, "let s = 'x'; while (true) { s = s + s; }",
		"return String(/^(a|aa)+(?=b)c\\\\1$/.test('a'.repeat(64) + 'x'));", 1))
	compiler := tosca.NewCompiler(1)
	compiler.Run = pool.Compile
	compiled, err := compiler.Compile(ctx, pkg, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := pool.idle[0].hello.Pid
	renderer := render.NewRenderer(1)
	renderer.Run = pool.Render
	_, err = renderer.Render(ctx, compiled, render.Options{Service: "s", Namespace: "ns", Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "did not finish within 1s") {
		t.Fatalf("got %v", err)
	}
	if len(pool.idle) != 0 {
		t.Errorf("the tainted worker %d is still in the pool", first)
	}
}

// TestWorkerFromAnotherBinary checks the handshake: a command that is no Calaf worker is
// refused with what it said.
func TestWorkerFromAnotherBinary(t *testing.T) {
	pool := newPool(t, func(o *Options) { o.Command = []string{"/bin/sh", "-c", "echo not a worker >&2", "sh"} })
	_, err := pool.Compile(context.Background(), openExample(t, "hello-world"), nil, tosca.CompileOptions{})
	// The hello meets a closed pipe or an end of file, as the shell exits.
	if err == nil || !strings.HasPrefix(err.Error(), "/bin/sh is not a Calaf worker of this version: no answer to hello (") || !strings.HasSuffix(err.Error(), "): not a worker") {
		t.Errorf("got %v", err)
	}
}

// TestWorkerGCTarget checks the garbage collection target a worker runs with, as it says
// in its hello: DefaultGCPercent by default, the runtime's own (100, the workers' GOGC
// being unset) when the pool sets none.
func TestWorkerGCTarget(t *testing.T) {
	pkg := openExample(t, "hello-world")
	for _, tc := range []struct {
		set, want int
	}{{DefaultGCPercent, DefaultGCPercent}, {250, 250}, {0, 100}} {
		pool := newPool(t, func(o *Options) { o.GCPercent = tc.set })
		if _, err := pool.Compile(context.Background(), pkg, nil, tosca.CompileOptions{}); err != nil {
			t.Fatal(err)
		}
		pool.lock.Lock()
		var got []int
		for _, pr := range pool.idle {
			got = append(got, pr.hello.GCPercent)
		}
		pool.lock.Unlock()
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("GCPercent %d: the workers run with %v, want [%d]", tc.set, got, tc.want)
		}
	}
}

// TestBoundRendersBindInTheWorker renders a package for several Services whose inputs the
// compiler binds onto its template: each render matches the same render in this process,
// and the worker was sent the template's base Clout, not the Clout of any Service.
func TestBoundRendersBindInTheWorker(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, func(o *Options) { o.Size = 1 })
	pkg := writePackage(t, `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  inputs:
    app: { type: string }
    replicas: { type: integer, default: 1 }
  node_templates:
    config:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          app: { get_input: app }
    app:
      type: calaf.nodes.Deployment
      properties:
        image: busybox:1.36
        replicas: { get_input: replicas }
        env:
          APP: { get_input: app }
`)
	compiler, local := tosca.NewCompiler(8), tosca.NewCompiler(8)
	compiler.Binding, compiler.Run = true, pool.Compile
	renderer := render.NewRenderer(8)
	renderer.Run = pool.Render
	var bound []*tosca.Compiled
	for i, inputs := range []map[string]any{{"app": "a"}, {"app": "b", "replicas": 2}, {"app": "c"}, {"app": "d", "replicas": 3}} {
		compiled, err := compiler.Compile(ctx, pkg, inputs)
		if err != nil {
			t.Fatal(err)
		}
		opts := render.Options{Service: fmt.Sprintf("s%d", i), Namespace: "ns"}
		isolated, err := renderer.Render(ctx, compiled, opts)
		if err != nil {
			t.Fatalf("inputs %v in a worker: %v", inputs, err)
		}
		want, err := local.Compile(ctx, pkg, inputs)
		if err != nil {
			t.Fatal(err)
		}
		inProcess, err := render.NewRenderer(1).Render(ctx, want, opts)
		if err != nil {
			t.Fatal(err)
		}
		isolated.Key, inProcess.Key = "", ""
		if !reflect.DeepEqual(isolated, inProcess) {
			t.Errorf("inputs %v: the render in a worker differs from the render in process", inputs)
		}
		if compiled.Template != nil {
			bound = append(bound, compiled)
		}
	}
	if len(bound) < 2 {
		t.Fatalf("%d of the compiles were bound onto a template, want at least 2", len(bound))
	}
	pool.lock.Lock()
	defer pool.lock.Unlock()
	if len(pool.idle) != 1 {
		t.Fatalf("%d idle workers, want 1", len(pool.idle))
	}
	held := pool.idle[0].clouts
	if !slices.Contains(held, bound[0].Template.Key) {
		t.Errorf("the worker holds the Clouts %v, not the template's base %s", held, bound[0].Template.Key)
	}
	for _, c := range bound {
		if slices.Contains(held, c.Key) {
			t.Errorf("the worker was sent the bound Clout of %v", c.Inputs)
		}
	}
}
