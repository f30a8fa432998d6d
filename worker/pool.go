package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"calaf.io/calaf/tosca"
)

// Options configure a Pool.
type Options struct {
	// Command starts a worker; the pool appends its limits as --memory and --stack. The
	// default is this executable's hidden command "worker" (test binaries must call Main
	// in their TestMain).
	Command []string
	// Size is how many workers may run at once (2 by default); requests beyond wait.
	Size int
	// Limits are each worker's.
	Limits Limits
	// Confinement is what each worker may reach (Confinement.Read: where packages are).
	Confinement Confinement
	// GCPercent is each worker's garbage collection target, as GOGC (DefaultGCPercent;
	// zero keeps Go's 100), passed as --gc-percent.
	GCPercent int
	// CompileTimeout is the wall deadline of a compile (60 s by default).
	CompileTimeout time.Duration
	// RenderGrace is added to a render's scriptlet budget (render.Budget) for its wall deadline: the
	// sandbox abandons a scriptlet stuck in Go code 2 s after its deadline, and Helm
	// templates have 10 s (20 s by default).
	RenderGrace time.Duration
	// CPUFactor sets a request's CPU time limit, in proportion of its wall deadline (1 by
	// default: scriptlets and Puccini use one thread; a request that keeps several busy is
	// stopped earlier).
	CPUFactor float64
	// MaxRequests is how many requests a worker serves before another replaces it (500).
	MaxRequests int
	// MaxResponseBytes bounds a response (256 MiB).
	MaxResponseBytes int64
	// Env are extra environment variables of the workers, which otherwise get only TMPDIR:
	// nothing of the operator's environment (tokens, credentials) reaches them.
	Env []string
	Log logr.Logger
	// OnEnd, when set, is told of every worker that ended while it worked.
	OnEnd func(op string, ending Ending)
	// OnExit, when set, is told what each worker process used, once it has exited.
	OnExit func(Usage)
	// OnStart, when set, is told of every worker process started, and what it confined
	// itself with.
	OnStart func(Confined)
}

// Usage is what a worker process used in its life.
type Usage struct {
	// PeakBytes is its peak resident memory; CPU its user and system time.
	PeakBytes int64
	CPU       time.Duration
}

// DefaultGCPercent is a worker's garbage collection target. A worker holds one package at
// a time, so its live heap is small, and a render allocates several times that heap: at
// Go's 100 a worker collected every few renders and spent about 40% of its CPU doing so
// (the fleet package: 11.4 against 6.7 CPU-s for 1,000 renders in one process, 62 against
// 80 MiB peak RSS; 800 and beyond used no less CPU and more memory). Its memory limit
// (Limits.Memory) still bounds the heap.
const DefaultGCPercent = 400

// DefaultOptions are the options of `calaf operator` and of the CLI.
func DefaultOptions() Options {
	return Options{Size: 2, Limits: DefaultLimits(), GCPercent: DefaultGCPercent, CompileTimeout: time.Minute, RenderGrace: 20 * time.Second,
		CPUFactor: 1, MaxRequests: 500, MaxResponseBytes: 256 << 20, Log: logr.Discard()}
}

// Pool runs package work in worker processes: a few, reused, each with a memory limit,
// deadlines and a CPU time limit, and confined (Confinement): a worker reads one package in
// its life, and a request on another package gets another worker. A worker that crashes,
// runs out of memory or time ends alone: the request it served fails with an *Error, the
// next request gets a new worker. Safe for concurrent use.
type Pool struct {
	opts  Options
	slots chan struct{}
	lock  sync.Mutex
	idle  []*process
	// encoded keeps the Clouts of recent compiles as the wire carries them, by compile
	// key, so that a render does not encode again what a worker just sent.
	encoded *encodedClouts
	closed  bool
}

// New returns a pool; workers start when work comes (or with Warm).
func New(opts Options) (*Pool, error) {
	defaults := DefaultOptions()
	if len(opts.Command) == 0 {
		command, err := defaultCommand()
		if err != nil {
			return nil, err
		}
		opts.Command = command
	}
	if opts.Size <= 0 {
		opts.Size = defaults.Size
	}
	if opts.CompileTimeout <= 0 {
		opts.CompileTimeout = defaults.CompileTimeout
	}
	if opts.RenderGrace <= 0 {
		opts.RenderGrace = defaults.RenderGrace
	}
	if opts.CPUFactor <= 0 {
		opts.CPUFactor = defaults.CPUFactor
	}
	if opts.MaxRequests <= 0 {
		opts.MaxRequests = defaults.MaxRequests
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = defaults.MaxResponseBytes
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &Pool{opts: opts, slots: make(chan struct{}, opts.Size), encoded: newEncodedClouts(16)}, nil
}

// Warm starts a worker ahead of the first request; an error says workers cannot start.
func (p *Pool) Warm(ctx context.Context) error {
	pr, err := p.acquire(ctx, "", "", 0)
	if err != nil {
		return err
	}
	p.release(pr, true)
	return nil
}

// Probe asks a worker to open path for reading, as code that escaped its sandbox would:
// it returns what the worker confined itself with, and why it could not open the file
// ("" when it could).
func (p *Pool) Probe(ctx context.Context, path string) (Confined, string, error) {
	return p.probe(ctx, "", path)
}

// probe asks a worker of the package at root (none: any) to open path for reading.
func (p *Pool) probe(ctx context.Context, root, path string) (Confined, string, error) {
	req := &request{Op: opProbe, Probe: path, CPU: time.Second, Package: tosca.Descriptor{Root: root}}
	pr, err := p.acquire(ctx, "", root, req.CPU)
	if err != nil {
		return Confined{}, "", err
	}
	pr.root = root
	resp, err := pr.call(ctx, req, 10*time.Second, p.opts.Limits, p.opts.MaxResponseBytes)
	if err != nil {
		p.release(pr, false)
		return Confined{}, "", err
	}
	p.release(pr, root != "") // a worker of no package may read none now
	return pr.hello.Confined, resp.Failure, nil
}

// Close stops the idle workers; busy ones stop when their request ends.
func (p *Pool) Close() {
	p.lock.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.lock.Unlock()
	for _, pr := range idle {
		pr.stop()
	}
}

// acquire waits for a free slot and returns the idle worker that fits a request on the
// package at root with the Clout of key, that may use need of CPU time, best (process.fits),
// or a new one, in place of an idle worker that cannot serve it.
func (p *Pool) acquire(ctx context.Context, key, root string, need time.Duration) (*process, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.lock.Lock()
	if p.closed {
		p.lock.Unlock()
		<-p.slots
		return nil, errors.New("the worker pool is closed")
	}
	pick, best := -1, 0
	for i, pr := range p.idle {
		if fit := pr.fits(key, root, need, p.opts.Limits.CPU); fit > best {
			pick, best = i, fit
		}
	}
	var unfit *process
	if pick < 0 && len(p.idle) > 0 { // the oldest makes room for a new one
		unfit, p.idle = p.idle[0], p.idle[1:]
	}
	if pick >= 0 {
		pr := p.idle[pick]
		p.idle = append(p.idle[:pick], p.idle[pick+1:]...)
		p.lock.Unlock()
		return pr, nil
	}
	p.lock.Unlock()
	if unfit != nil {
		go unfit.stop()
	}
	pr, err := p.startProcess(ctx)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return pr, nil
}

// release returns a worker to the pool, or stops it when it must not serve again.
func (p *Pool) release(pr *process, reuse bool) {
	p.lock.Lock()
	keep := reuse && !p.closed && pr.served < p.opts.MaxRequests
	if keep {
		p.idle = append(p.idle, pr)
	}
	p.lock.Unlock()
	if !keep {
		go pr.stop()
	}
	<-p.slots
}

// do runs one request on a worker and turns its answer into an error or a response.
func (p *Pool) do(ctx context.Context, req *request, deadline time.Duration) (*response, error) {
	req.CPU = time.Duration(float64(deadline) * p.opts.CPUFactor)
	pr, err := p.acquire(ctx, req.cloutKey(), req.Package.Root, req.CPU)
	if err != nil {
		return nil, err
	}
	if req.Op != opCompile && pr.hasClout(req.cloutKey()) {
		req.Clout = nil // the worker decoded it already
	}
	pr.root = req.Package.Root
	resp, err := pr.call(ctx, req, deadline, p.opts.Limits, p.opts.MaxResponseBytes)
	if err != nil {
		p.release(pr, false)
		var end *ended
		if errors.As(err, &end) {
			if p.opts.OnEnd != nil {
				p.opts.OnEnd(req.Op, end.Ending)
			}
			p.opts.Log.Info("worker ended", "op", req.Op, "package", req.Package.Entry, "reason", end.Text)
			return nil, &Error{Op: req.Op, Entry: req.Package.Entry, Ending: end.Ending}
		}
		return nil, err
	}
	switch {
	case req.CompileKey == "" || req.Op == opCompile:
	case strings.HasPrefix(resp.Failure, noClout):
		pr.forgetClout(req.cloutKey())
	default:
		pr.usedClout(req.cloutKey())
	}
	p.release(pr, !resp.Tainted)
	return resp, nil
}
