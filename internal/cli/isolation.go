package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	cloutpkg "github.com/tliron/puccini/clout"
	"k8s.io/apimachinery/pkg/api/resource"

	"calaf.io/calaf/internal/front"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/worker"
)

// isolation runs the package work of an offline command — compile, render, evaluation —
// in a worker process with the limits and the confinement the operator gives its workers
// (package worker): a package that crashes Puccini, recurses without end or exhausts
// memory ends the worker, and calaf says why. Started by calaf's front (package front),
// calaf is that worker itself: it sets the limits on its own process, confines itself to
// read the package alone before its first piece of work, and tells the front each one.
type isolation struct {
	memory resource.Quantity
	// inProcess does the work in calaf's own process (a hidden flag, for measuring what
	// the worker costs).
	inProcess bool
	pool      *worker.Pool
	// front is the channel to calaf's front when it started this process; nil otherwise.
	front *front.Channel
	// limited: this process has set the worker limits on itself; cpu limits its CPU
	// time; confined is the package directory it confined itself to.
	limited  bool
	cpu      *worker.CPULimit
	confined string
}

// statsEnv names a file that receives one JSON line per worker that exited: its peak
// memory and CPU time (tests measure the cost of bad packages with it).
const statsEnv = "CALAF_WORKER_STATS"

func (i *isolation) register(cmd *cobra.Command) {
	i.memory = *resource.NewQuantity(worker.DefaultLimits().Memory, resource.BinarySI)
	cmd.Flags().Var(quantityFlag{&i.memory}, "worker-memory", "memory limit of the process that compiles and renders the package")
	cmd.Flags().BoolVar(&i.inProcess, "in-process", false, "compile and render in this process, without a worker and its limits")
	_ = cmd.Flags().MarkHidden("in-process")
}

// start starts the pool of one worker.
func (i *isolation) start() (*worker.Pool, error) {
	if i.pool != nil {
		return i.pool, nil
	}
	opts := worker.DefaultOptions()
	opts.Size = 1
	// One package, one request or two: collecting is cheaper than the fresh pages a
	// larger heap would fault in (a worker at 400 made `calaf compile` about 50 ms slower).
	opts.GCPercent = 0
	if !i.memory.IsZero() {
		opts.Limits.Memory = i.memory.Value()
	}
	if path := os.Getenv(statsEnv); path != "" {
		opts.OnExit = func(u worker.Usage) { appendStats(path, u) }
	}
	pool, err := worker.New(opts)
	if err != nil {
		return nil, err
	}
	i.pool = pool
	return pool, nil
}

// isolated tells whether this process is the front's isolated child, and then sets the
// worker limits on itself, once, and tells the front.
func (i *isolation) isolated() (bool, error) {
	if i.front == nil || i.inProcess {
		return false, nil
	}
	if i.limited {
		return true, nil
	}
	limits := worker.DefaultLimits()
	if !i.memory.IsZero() {
		limits.Memory = i.memory.Value()
	}
	if _, err := worker.ApplyLimits(limits); err != nil {
		return false, fmt.Errorf("worker limits: %w", err)
	}
	cpu, err := worker.LimitCPU(limits.CPU, os.Stderr)
	if err != nil {
		return false, err
	}
	i.limited, i.cpu = true, cpu
	i.front.Limits(limits.Memory, limits.Stack)
	return true, nil
}

// work starts a piece of package work in this isolated process: the front is told, its
// CPU time is limited to the deadline's, and the process confines itself, the first time,
// to read the package at root alone (and the profiles it imports by reference) (Landlock where the kernel has it; a warning says
// when it has not). A second package is refused.
func (i *isolation) work(op string, pkg *tosca.Package, deadline time.Duration) error {
	i.front.Work(op, pkg.Entry, deadline)
	if err := i.cpu.Work(deadline); err != nil {
		return err
	}
	switch {
	case i.confined == pkg.Root:
		return nil
	case i.confined != "":
		return fmt.Errorf("this process reads the package at %s alone, not %s", i.confined, pkg.Root)
	}
	confined, err := worker.Confine(worker.Confinement{Read: pkg.Describe().ReadRoots()})
	if err != nil {
		return err
	}
	if confined.Landlock == 0 {
		fmt.Fprintf(os.Stderr, "warning: the package is compiled and rendered %s\n", confined)
	}
	i.confined = pkg.Root
	return nil
}

// compiler returns a compiler whose compiles run in the worker.
func (i *isolation) compiler() (*tosca.Compiler, error) {
	if i.inProcess {
		return tosca.NewCompiler(1), nil
	}
	isolated, err := i.isolated()
	if err != nil {
		return nil, err
	}
	if isolated {
		compiler := tosca.NewCompiler(1)
		compiler.Run = func(ctx context.Context, pkg *tosca.Package, inputs map[string]any, opts tosca.CompileOptions) (*cloutpkg.Clout, error) {
			if err := i.work("compile", pkg, worker.DefaultOptions().CompileTimeout); err != nil {
				return nil, err
			}
			return compiler.CompileClout(ctx, pkg, inputs, opts)
		}
		return compiler, nil
	}
	pool, err := i.start()
	if err != nil {
		return nil, err
	}
	compiler := tosca.NewCompiler(1)
	compiler.Run = pool.Compile
	return compiler, nil
}

// renderer returns a renderer whose renders run in the worker.
func (i *isolation) renderer() (*render.Renderer, error) {
	if i.inProcess {
		renderer := render.NewRenderer(1)
		renderer.Charts = chartEngine()
		return renderer, nil
	}
	isolated, err := i.isolated()
	if err != nil {
		return nil, err
	}
	if isolated {
		renderer := render.NewRenderer(1)
		renderer.Charts = chartEngine()
		renderer.Run = func(ctx context.Context, compiled *tosca.Compiled, opts render.Options) (*render.Result, error) {
			if err := i.work("render", compiled.Package, render.Budget(compiled, opts.Timeout)+worker.DefaultOptions().RenderGrace); err != nil {
				return nil, err
			}
			return renderer.RenderUncached(ctx, compiled, opts)
		}
		return renderer, nil
	}
	pool, err := i.start()
	if err != nil {
		return nil, err
	}
	renderer := render.NewRenderer(1)
	renderer.Run = pool.Render
	return renderer, nil
}

// evaluate resolves requirements and, with coerce, evaluates functions, in the worker.
func (i *isolation) evaluate(ctx context.Context, compiled *tosca.Compiled, timeout time.Duration, coerce bool) (*cloutpkg.Clout, error) {
	if isolated, err := i.isolated(); err != nil {
		return nil, err
	} else if isolated {
		if err := i.work("evaluate", compiled.Package, render.Budget(compiled, timeout)+worker.DefaultOptions().RenderGrace); err != nil {
			return nil, err
		}
	}
	if i.inProcess || i.front != nil {
		return render.Evaluate(ctx, compiled, timeout, coerce)
	}
	pool, err := i.start()
	if err != nil {
		return nil, err
	}
	return pool.Evaluate(ctx, compiled, timeout, coerce)
}

// close stops the worker.
func (i *isolation) close() {
	if i.pool != nil {
		i.pool.Close()
	}
}

func appendStats(path string, u worker.Usage) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	line, _ := json.Marshal(map[string]any{"peakBytes": u.PeakBytes, "cpuSeconds": u.CPU.Seconds()})
	fmt.Fprintf(f, "%s\n", line)
}

// newWorkerCommand is the hidden command the pool starts: a worker serving requests on
// its stdin and stdout, logging on stderr (flags --memory and --stack, read by the worker).
func newWorkerCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "worker",
		Short:              "Serve package work for a worker pool (started by calaf itself)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := worker.Run(args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), chartEngine()); code != 0 {
				return workerExit(code)
			}
			return nil
		},
	}
}

// workerExit is a worker that ended with an error it already wrote on stderr.
type workerExit int

func (e workerExit) Error() string { return fmt.Sprintf("worker exited with code %d", int(e)) }

// quantityFlag is a resource quantity (e.g. 160Mi) as a command-line flag.
type quantityFlag struct{ q *resource.Quantity }

func (f quantityFlag) String() string { return f.q.String() }
func (f quantityFlag) Type() string   { return "quantity" }
func (f quantityFlag) Set(value string) error {
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return err
	}
	*f.q = q
	return nil
}
