package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	"calaf.io/calaf/worker/crash"
)

// process is one worker process and the pool's end of its pipes.
type process struct {
	cmd    *exec.Cmd
	stdin  *bufio.Writer
	pipe   io.WriteCloser
	stdout *bufio.Reader
	stderr *crash.Tail
	// done is closed once the process has exited and its stderr is read.
	done  chan struct{}
	hello hello
	// served counts the requests it answered.
	served int
	// clouts mirrors the worker's cache of decoded Clouts, most recently used first: the
	// same operations in the same order, so the pool knows which compile keys it need not
	// send again.
	clouts []string
	// root is the package the worker reads alone, once it was handed one; cpu the CPU
	// time it has used, as it last said.
	root string
	cpu  time.Duration
}

// fits scores how well the worker suits a request on the package at root (none: a
// probe) with the Clout of key, that may use need of CPU time in a life of life: 0 it
// cannot serve it (another package, or too little CPU time left), 1 a worker that was
// handed no package yet, 2 one of the same package, 3 one that has the Clout too.
func (pr *process) fits(key, root string, need, life time.Duration) int {
	switch {
	case life > 0 && pr.cpu+need > life:
		return 0
	case root == "" || pr.root == "":
		return 1
	case pr.root != root:
		return 0
	case key != "" && pr.hasClout(key):
		return 3
	}
	return 2
}

// hasClout tells whether the worker holds the Clout of a compile key.
func (pr *process) hasClout(key string) bool {
	return slices.Contains(pr.clouts, key)
}

// forgetClout records that the worker does not hold the Clout of a compile key.
func (pr *process) forgetClout(key string) {
	pr.clouts = slices.DeleteFunc(pr.clouts, func(k string) bool { return k == key })
}

// usedClout records that the worker decoded, or used, the Clout of a compile key: as its
// cache does, the key moves first and the oldest beyond the cache's size go.
func (pr *process) usedClout(key string) {
	pr.clouts = slices.DeleteFunc(pr.clouts, func(k string) bool { return k == key })
	pr.clouts = append([]string{key}, pr.clouts...)
	if len(pr.clouts) > cloutsPerWorker {
		pr.clouts = pr.clouts[:cloutsPerWorker]
	}
}

// startProcess starts a worker and greets it.
func (p *Pool) startProcess(ctx context.Context) (*process, error) {
	args := append(append([]string{}, p.opts.Command[1:]...),
		"--memory", strconv.FormatInt(p.opts.Limits.Memory, 10), "--stack", strconv.FormatInt(p.opts.Limits.Stack, 10),
		"--cpu", p.opts.Limits.CPU.String())
	if p.opts.GCPercent > 0 {
		args = append(args, "--gc-percent", strconv.Itoa(p.opts.GCPercent))
	}
	for _, dir := range p.opts.Confinement.Read {
		args = append(args, "--read", dir)
	}
	if abi := p.opts.Confinement.MaxABI; abi != 0 {
		args = append(args, "--landlock-abi", strconv.Itoa(abi))
	}
	cmd := exec.Command(p.opts.Command[0], args...)
	cmd.Env = append([]string{"TMPDIR=" + os.TempDir(), "GOTRACEBACK=single"}, p.opts.Env...)
	cmd.SysProcAttr = sysProcAttr()
	pr := &process{cmd: cmd, done: make(chan struct{})}
	pr.stderr = crash.NewTail(64<<10, func(line string) { p.opts.Log.V(1).Info(line, "worker", cmd.Process.Pid) })
	cmd.Stderr = pr.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a worker (%s): %w", p.opts.Command[0], err)
	}
	pr.pipe, pr.stdin, pr.stdout = stdin, bufio.NewWriterSize(stdin, 64<<10), bufio.NewReaderSize(stdout, 64<<10)
	go func() {
		_ = cmd.Wait()
		if p.opts.OnExit != nil {
			p.opts.OnExit(usageOf(cmd.ProcessState))
		}
		close(pr.done)
	}()
	if err := pr.greet(ctx); err != nil {
		pr.kill()
		return nil, fmt.Errorf("%s is not a Calaf worker of this version: no answer to hello (%w)%s", p.opts.Command[0], err, crash.LastLines(pr.stderr.String(), 3))
	}
	pr.cpu = pr.hello.CPU
	if p.opts.OnStart != nil {
		p.opts.OnStart(pr.hello.Confined)
	}
	if confined := pr.hello.Confined; p.opts.Confinement.Required && confined.Landlock == 0 {
		pr.kill()
		return nil, fmt.Errorf("workers must be confined, and cannot be: %s", confined.Unconfined)
	}
	return pr, nil
}

// cloutsPerWorker is the size of a worker's Clout cache.
const cloutsPerWorker = 4

// greet exchanges hellos: the worker must be built from the same sources.
func (pr *process) greet(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	answered := make(chan error, 1)
	go func() {
		if err := writeFrame(pr.stdin, &hello{Version: protocolVersion, Layout: layout()}); err != nil {
			answered <- err
			return
		}
		if err := pr.stdin.Flush(); err != nil {
			answered <- err
			return
		}
		answered <- readFrame(pr.stdout, 1<<20, &pr.hello)
	}()
	select {
	case err := <-answered:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call sends a request and waits for its response, stopping the worker when it runs past
// the wall deadline or when ctx ends. The kernel stops a worker that uses more CPU time
// than the request's budget (req.CPU: the worker's RLIMIT_CPU); one that answers having
// used more (the kernel counts in seconds) has passed it too. A worker that ends while it
// works, or answers past its budget, returns an *ended.
func (pr *process) call(ctx context.Context, req *request, deadline time.Duration, limits Limits, maxResponse int64) (*response, error) {
	type outcome struct {
		resp *response
		err  error
	}
	answered := make(chan outcome, 1)
	go func() {
		var resp response
		err := writeFrame(pr.stdin, req)
		if err == nil {
			err = pr.stdin.Flush()
		}
		if err == nil {
			err = readFrame(pr.stdout, maxResponse, &resp)
		}
		answered <- outcome{&resp, err}
	}()
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	select {
	case o := <-answered:
		if o.err != nil {
			return nil, pr.failed(o.err, limits)
		}
		used := o.resp.CPU - pr.cpu
		pr.cpu = o.resp.CPU
		if used > req.CPU {
			return nil, &ended{cpuEnding(req.CPU)}
		}
		pr.served++
		return o.resp, nil
	case <-ctx.Done():
		pr.kill()
		return nil, ctx.Err()
	case <-timer.C:
		pr.kill()
		return nil, &ended{deadlineEnding(deadline)}
	}
}

// failed explains a failed exchange: the worker's end when it died, else the error.
func (pr *process) failed(err error, limits Limits) error {
	var tooLarge *errFrameTooLarge
	if errors.As(err, &tooLarge) {
		pr.kill()
		return &ended{Ending{Kind: "response", Text: "answered with " + tooLarge.Error()}}
	}
	select {
	case <-pr.done:
	case <-time.After(5 * time.Second):
		pr.kill()
	}
	ending := crash.Diagnose(pr.cmd.ProcessState, pr.stderr.String(), limits.Memory, limits.Stack)
	if ending.Kind == "killed" && limits.CPU > 0 && usageOf(pr.cmd.ProcessState).CPU >= limits.CPU {
		ending = Ending{Kind: "cpu", Text: fmt.Sprintf("was killed by the kernel at the CPU time of its life (%s)", limits.CPU)}
	}
	return &ended{ending}
}

// kill stops the process and waits until it is gone.
func (pr *process) kill() {
	_ = pr.cmd.Process.Kill()
	_ = pr.pipe.Close()
	<-pr.done
}

// stop ends an idle worker: closing its stdin ends its loop; it is killed if it lingers.
func (pr *process) stop() {
	_ = pr.pipe.Close()
	select {
	case <-pr.done:
	case <-time.After(2 * time.Second):
		pr.kill()
	}
}

// ended is a worker that ended while it worked.
type ended struct {
	Ending
}

func (e *ended) Error() string { return e.Text }

// usageOf reads what an exited process used.
func usageOf(state *os.ProcessState) Usage {
	usage := Usage{CPU: state.UserTime() + state.SystemTime()}
	if ru, ok := state.SysUsage().(*syscall.Rusage); ok {
		usage.PeakBytes = ru.Maxrss << 10
	}
	return usage
}
