package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	cloutpkg "github.com/tliron/puccini/clout"

	"calaf.io/calaf/etsi/chart"
	"calaf.io/calaf/internal/lru"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// Limits are what a worker process may use; it sets them on itself as it starts, before it
// reads any package.
type Limits struct {
	// Memory is the address space the worker may add to what it had reserved once started
	// (RLIMIT_AS); the Go runtime's soft limit is 90% of it. Zero sets no limit.
	Memory int64
	// Stack bounds one goroutine's stack (debug.SetMaxStack), so that runaway recursion
	// ends as a stack overflow, named, well before it exhausts Memory. Zero keeps Go's.
	Stack int64
	// CPU bounds the CPU time of the worker's whole life (RLIMIT_CPU's hard limit): each
	// request's budget is its soft limit, raised request after request up to this one; a
	// worker that used most of it is replaced. Zero sets no limit.
	CPU time.Duration
}

// DefaultLimits are 512 MiB of memory, 64 MiB of stack per goroutine and an hour of CPU
// time in a worker's life.
func DefaultLimits() Limits {
	return Limits{Memory: 512 << 20, Stack: 64 << 20, CPU: time.Hour}
}

// server is the worker's side: the compiler and renderer it runs packages with, the
// Clouts it was last sent (a render after the compile of the same package skips
// decoding), its confinement and the package it was narrowed to, and its CPU time limit.
type server struct {
	compiler *tosca.Compiler
	renderer *render.Renderer
	clouts   *lru.Cache[*cloutpkg.Clout]
	log      logr.Logger
	confined Confined
	// layered: a Landlock layer restricts what the worker reads; root is the package
	// directory it reads alone, once handed one.
	layered bool
	root    string
	cpu     *CPULimit
}

// Setup is what a worker sets on itself as it starts, before it reads any request.
type Setup struct {
	Limits      Limits
	Confinement Confinement
	// Stderr receives the worker's last words at its CPU time limit.
	Stderr io.Writer
}

// Serve is the worker process: it applies limits to itself and confines itself, answers
// the pool's hello, then runs the requests read from in, one at a time, answering each on
// out, until in is closed. Nothing else is written to out. charts renders the Helm charts
// of ETSI packages; nil refuses them (chart.ErrNoEngine).
func Serve(in io.Reader, out io.Writer, setup Setup, charts chart.Engine, log logr.Logger) error {
	virtual, err := ApplyLimits(setup.Limits)
	if err != nil {
		return fmt.Errorf("worker limits: %w", err)
	}
	cpu, err := LimitCPU(setup.Limits.CPU, setup.Stderr)
	if err != nil {
		return err
	}
	confined, err := Confine(setup.Confinement)
	if err != nil {
		return err
	}
	limits := setup.Limits
	reader, writer := bufio.NewReaderSize(in, 64<<10), bufio.NewWriterSize(out, 64<<10)
	var greeting hello
	if err := readFrame(reader, 1<<20, &greeting); err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	if greeting.Version != protocolVersion || greeting.Layout != layout() {
		return fmt.Errorf("the pool speaks protocol %d/%s, this worker %d/%s: not the same binary", greeting.Version, greeting.Layout, protocolVersion, layout())
	}
	answer := hello{Version: protocolVersion, Layout: layout(), Pid: os.Getpid(), VirtualBytes: virtual, MemoryLimit: limits.Memory, GCPercent: gcPercent(), Confined: confined}
	answer.CPU, _ = usage()
	if err := flushFrame(writer, &answer); err != nil {
		return err
	}
	s := &server{compiler: tosca.NewCompiler(1), renderer: render.NewRenderer(1), clouts: lru.New[*cloutpkg.Clout](4), log: log, confined: confined, cpu: cpu,
		layered: len(setup.Confinement.Read) > 0}
	s.compiler.Log = log.WithName("tosca")
	s.renderer.Log = log.WithName("render")
	s.renderer.Charts = charts
	for {
		var req request
		if err := readFrame(reader, maxRequestBytes, &req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("request: %w", err)
		}
		before := runtime.NumGoroutine()
		resp := s.handle(&req)
		resp.Tainted = leftRunning(before)
		resp.CPU, resp.PeakBytes = usage()
		data, err := Marshal(resp)
		if err != nil { // a result that cannot travel is the package's
			resp = &response{Invalid: []tosca.Diagnostic{{File: req.Package.Entry, Message: "the " + req.Op + " returned values that are not data: " + err.Error()}}, Tainted: resp.Tainted, CPU: resp.CPU, PeakBytes: resp.PeakBytes}
			if data, err = Marshal(resp); err != nil {
				return err
			}
		}
		if err := writeEncoded(writer, data); err != nil {
			return err
		}
		if err := writer.Flush(); err != nil {
			return err
		}
	}
}

func flushFrame(w *bufio.Writer, v any) error {
	if err := writeFrame(w, v); err != nil {
		return err
	}
	return w.Flush()
}

// handle runs one request, within its CPU budget and reading its package alone; its
// problems become the response's.
func (s *server) handle(req *request) *response {
	ctx := context.Background()
	pkg := req.Package.Package()
	resp := &response{}
	err := s.cpu.Work(req.CPU)
	if err == nil {
		err = s.narrow(req.Package)
	}
	switch {
	case err != nil:
	case req.Op == opProbe:
		resp.Failure = probe(req.Probe)
		return resp
	case req.Op == opCompile:
		var clout *cloutpkg.Clout
		if clout, err = s.compiler.CompileClout(ctx, pkg, req.Inputs, req.Compile); err == nil {
			resp.Clout, err = encodeClout(clout)
		}
	case req.Op == opRender, req.Op == opEvaluate:
		err = s.renderOrEvaluate(ctx, req, pkg, resp)
	case req.Op == opVNFD:
		resp.VNFD, err = pkg.ReadVNFD()
	default:
		err = fmt.Errorf("unknown operation %q", req.Op)
	}
	var invalid *tosca.InvalidError
	switch {
	case errors.As(err, &invalid):
		resp.Invalid = invalid.Diagnostics
	case err != nil:
		resp.Failure = err.Error()
	}
	return resp
}

// narrow confines the worker to read the package at root alone (and the profiles it
// imports by reference, fetched and verified by the pool's process), the first time it
// is handed a package (a worker serves one package in its life); a worker handed none (a
// probe) that is not confined yet then reads nothing.
func (s *server) narrow(pkg tosca.Descriptor) error {
	root := pkg.Root
	if s.root != "" && root != "" && root != s.root {
		return fmt.Errorf("this worker reads the package at %s alone, not %s", s.root, root)
	}
	if root == "" && s.layered || root != "" && root == s.root {
		return nil
	}
	if s.confined.Landlock > 0 {
		var read []string
		if root != "" {
			read = pkg.ReadRoots()
		}
		if err := restrictReads(s.confined.Landlock, read); err != nil {
			return err
		}
		s.layered = true
	}
	if root != "" {
		s.root = root
	}
	return nil
}

// probe opens path for reading, as code that escaped the sandbox would, and says why it
// could not: "" when it could.
func probe(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	f.Close()
	return ""
}

// renderOrEvaluate renders, or evaluates, the Clout of the request.
func (s *server) renderOrEvaluate(ctx context.Context, req *request, pkg *tosca.Package, resp *response) error {
	clout, err := s.clout(req)
	if err != nil {
		return err
	}
	compiled := &tosca.Compiled{Clout: clout, Key: req.CompileKey, Digest: pkg.Digest, Inputs: req.Inputs, Package: pkg}
	if req.Op == opEvaluate {
		evaluated, err := render.Evaluate(ctx, compiled, req.Timeout, req.Coerce)
		if err != nil {
			return err
		}
		resp.Clout, err = encodeClout(evaluated)
		return err
	}
	renderFunc := s.renderer.RenderUncached
	if req.Bind != nil {
		renderFunc = s.renderer.RenderOwned // the Clout was bound for this request alone
	}
	result, err := renderFunc(ctx, compiled, req.Render)
	if err != nil {
		return err
	}
	wire := *result
	wire.Objects = nil // the pool gathers them from the nodes
	resp.Result = &wire
	return nil
}

// clout returns the request's Clout: the inputs bound onto its template's base, or the
// Clout itself.
func (s *server) clout(req *request) (*cloutpkg.Clout, error) {
	clout, err := s.cached(req)
	if err != nil || req.Bind == nil {
		return clout, err
	}
	bound, ok := req.Bind.template(clout).Bind(req.Inputs)
	if !ok {
		return nil, fmt.Errorf("the inputs do not bind onto the template %s", req.Bind.Key)
	}
	return bound, nil
}

// cached returns the Clout the request carries, decoded, or the one decoded last time for
// the same key.
func (s *server) cached(req *request) (*cloutpkg.Clout, error) {
	key := req.cloutKey()
	if len(req.Clout) == 0 {
		if clout, ok := s.clouts.Get(key); ok {
			return clout, nil
		}
		return nil, fmt.Errorf("%s %s", noClout, key)
	}
	clout, err := decodeClout(req.Clout)
	if err != nil {
		return nil, err
	}
	if key != "" {
		s.clouts.Put(key, clout)
	}
	return clout, nil
}

// ApplyLimits sets a worker's limits on this process and returns the address space it had
// reserved before: the Go runtime reserves far more than it uses (a gigabyte and more), so
// the memory limit counts from there. The worker also offers itself first to the kernel's
// OOM killer and writes no core dump of package data.
func ApplyLimits(limits Limits) (int64, error) {
	if limits.Stack > 0 {
		debug.SetMaxStack(int(limits.Stack))
	}
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0) // best effort: not every system lets it be written
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	virtual := virtualBytes()
	if limits.Memory <= 0 {
		return virtual, nil
	}
	debug.SetMemoryLimit(limits.Memory / 10 * 9)
	if virtual <= 0 {
		return 0, nil // no /proc (not Linux): the soft limit only
	}
	limit := uint64(virtual + limits.Memory)
	return virtual, syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit})
}

// usage returns the worker's CPU time and peak resident memory so far.
func usage() (time.Duration, int64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return cpu, ru.Maxrss << 10
}

// leftRunning tells whether goroutines started by a request still run (a scriptlet the
// sandbox abandoned in Go code): more than before it, after a moment for those that are
// just ending.
func leftRunning(before int) bool {
	for range 5 {
		if runtime.NumGoroutine() <= before {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// gcPercent reads the runtime's garbage collection target (GOGC).
func gcPercent() int {
	percent := debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent
}
