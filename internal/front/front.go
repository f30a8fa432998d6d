package front

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/worker/crash"
)

// The binaries the front starts, installed next to it (make build).
const (
	FullBinary    = "calaf-full"
	OfflineBinary = "calaf-offline"
)

// packageCommands run in calaf-offline; every other command in calaf-full.
var packageCommands = []string{"validate", "compile", "render", "graph"}

// Exit codes of the front itself, as calaf-full's (cli.ExitInvalid).
const exitFailed = 1

// Front starts calaf's commands in the binaries of Dir.
type Front struct {
	Dir            string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Replace makes calaf-full replace this process (execve) for the commands that are not
	// offline package ones, instead of running as its child.
	Replace bool
}

// Main runs calaf with args (os.Args) and returns its exit code.
func Main(args []string) int {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: calaf: %v\n", err)
		return exitFailed
	}
	f := &Front{Dir: filepath.Dir(exe), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Replace: true}
	return f.Run(args[1:])
}

// Run runs one command line (without the program's name): an offline package command in
// calaf-offline as an isolated child (in calaf-full when the package deploys a Helm chart,
// or without calaf-offline), any other in calaf-full.
func (f *Front) Run(args []string) int {
	full := filepath.Join(f.Dir, FullBinary)
	if len(args) == 0 || !slices.Contains(packageCommands, args[0]) {
		if f.Replace {
			// On success, calaf-full is this process now; on failure, run it as a child.
			_ = syscall.Exec(full, append([]string{full}, args...), os.Environ())
		}
		return f.hand(full, args)
	}
	offline := filepath.Join(f.Dir, OfflineBinary)
	if _, err := os.Stat(offline); err != nil {
		offline = full
	}
	code, charts := f.isolate(offline, args)
	if charts && offline != full {
		code, _ = f.isolate(full, args)
	}
	return code
}

// hand runs a command in binary with this process's streams and returns its exit code.
func (f *Front) hand(binary string, args []string) int {
	cmd := exec.Command(binary, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f.Stdin, f.Stdout, f.Stderr
	stop := forwardSignals(cmd)
	defer stop()
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(f.Stderr, "error: %s is missing: calaf runs its commands in %s and %s, installed next to it (make build)\n",
			text.Escape(binary), FullBinary, OfflineBinary)
		return exitFailed
	}
	fmt.Fprintf(f.Stderr, "error: %s: %s\n", text.Escape(binary), text.Escape(err.Error()))
	return exitFailed
}

// forwardSignals passes SIGINT, SIGTERM and SIGHUP on to the child, and the front waits
// for it to end (a Ctrl-C reaches the child from the terminal too: it cancels once). The
// returned function stops.
func forwardSignals(cmd *exec.Cmd) func() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-signals:
				if cmd.Process != nil {
					_ = cmd.Process.Signal(s)
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(signals)
		close(done)
	}
}

// child is an isolated child as the front sees it while it runs.
type child struct {
	cmd    *exec.Cmd
	output *stderrOutput
	// listened is closed when the child's channel has closed and been read to its end.
	listened chan struct{}
	lock     sync.Mutex
	heard    announcements
	// stopped says why the front killed the child, if it did.
	stopped string
	// tmp is the child's temporary directory (an archive's files), which the child,
	// confined, cannot remove.
	tmp string
}

// isolate runs a package command in binary as a child that sets the worker limits on
// itself and tells the front what it does, and returns its exit code, and whether it asked
// for calaf-full (a Helm chart). A child that crashes or outlives a deadline ends in one
// diagnostic, worded as the worker pool words a worker's end.
func (f *Front) isolate(binary string, args []string) (int, bool) {
	c, err := f.start(binary, args)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return f.hand(binary, args), false
		}
		fmt.Fprintf(f.Stderr, "error: %s: %s\n", text.Escape(binary), text.Escape(err.Error()))
		return exitFailed, false
	}
	stop := forwardSignals(c.cmd)
	err = c.cmd.Wait()
	stop()
	os.RemoveAll(c.tmp)
	select { // the channel's last lines (a crash comes right after a "work" line)
	case <-c.listened:
	case <-time.After(c.cmd.WaitDelay):
	}
	c.lock.Lock()
	defer c.lock.Unlock()
	if c.heard.charts {
		return exitFailed, true
	}
	c.output.writeTo(f.Stderr)
	return c.exit(err, f.Stderr), false
}

// childEnv are the variables of the front's environment its isolated child gets: the Go
// runtime's, the locale's. Nothing else — no KUBECONFIG, no token, no cloud credential —
// reaches the process that runs a package.
func childEnv() []string {
	return []string{"GOGC", "GOMAXPROCS", "GOMEMLIMIT", "GODEBUG", "GOTRACEBACK", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ"}
}

// environment returns the child's environment: childEnv's variables that are set, its
// temporary directory and its channel.
func environment(tmp string) []string {
	env := []string{"TMPDIR=" + tmp, fmt.Sprintf("%s=%d", channelEnv, channelFD)}
	for _, name := range childEnv() {
		if value, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+value)
		}
	}
	return env
}

// start starts the child with its channel and stderr read by the front, in an
// environment of its own and a temporary directory the front removes when it ends.
func (f *Front) start(binary string, args []string) (*child, error) {
	tmp, err := os.MkdirTemp("", "calaf-offline-")
	if err != nil {
		return nil, err
	}
	channelR, channelW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdin, cmd.Stdout = f.Stdin, f.Stdout
	cmd.ExtraFiles = []*os.File{channelW}
	cmd.Env = environment(tmp)
	c := &child{cmd: cmd, output: newStderrOutput(), listened: make(chan struct{}), tmp: tmp}
	cmd.Stderr = c.output
	cmd.WaitDelay = 5 * time.Second // a descendant holding stderr does not hold the front
	if err := cmd.Start(); err != nil {
		channelR.Close()
		channelW.Close()
		os.RemoveAll(tmp)
		return nil, err
	}
	channelW.Close()
	go c.listen(channelR)
	return c, nil
}

// listen reads the child's channel until it closes, and kills the child when a piece of
// work outlives the deadline it announced.
func (c *child) listen(channel *os.File) {
	defer close(c.listened)
	defer channel.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		scanner := bufio.NewScanner(channel)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
	}()
	var timer <-chan time.Time
	var limit time.Duration
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return
			}
			c.lock.Lock()
			deadline := c.heard.hear(line)
			c.lock.Unlock()
			if deadline > 0 {
				limit, timer = deadline, time.After(deadline)
			}
		case <-timer:
			c.lock.Lock()
			c.stopped = fmt.Sprintf("did not finish within %s", limit)
			c.lock.Unlock()
			_ = c.cmd.Process.Kill()
			timer = nil
		}
	}
}

// exit returns the child's exit code, after writing the diagnostic of a child that
// crashed or was stopped. The caller holds c.lock.
func (c *child) exit(err error, stderr io.Writer) int {
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintf(stderr, "error: %s\n", text.Escape(err.Error()))
		return exitFailed
	}
	if status, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && status.Signaled() && status.Signal() == syscall.SIGPIPE {
		return 128 + int(syscall.SIGPIPE) // its reader went away (calaf compile | head): no diagnostic
	}
	ending := c.stopped
	crashed := c.output.crashed() || (exit != nil && exit.ExitCode() < 0)
	if ending == "" && crashed {
		ending = crash.Diagnose(c.cmd.ProcessState, c.output.report.String(), c.heard.memory, c.heard.stack).Text
	}
	if ending == "" {
		return c.cmd.ProcessState.ExitCode()
	}
	if c.heard.op == "" {
		fmt.Fprintf(stderr, "error: calaf %s\n", text.Escape(ending))
	} else {
		fmt.Fprintf(stderr, "error: %s: %s of the package %s\n", text.Escape(c.heard.entry), c.heard.op, text.Escape(ending))
	}
	return exitFailed
}

// stderrOutput keeps what the child writes on stderr until it ends: its diagnostics, which
// the front writes out then (or drops, when the command runs again in calaf-full), and
// the Go runtime's report of a crash, which the front reads instead of showing.
type stderrOutput struct {
	partial []byte
	lines   []string
	size    int
	dropped int
	report  *crash.Tail
	// inReport: the runtime's report has begun; every line after it belongs to it.
	inReport bool
}

// maxStderrBytes bounds the diagnostics kept; the report keeps its last 64 KiB.
const maxStderrBytes = 8 << 20

func newStderrOutput() *stderrOutput {
	return &stderrOutput{report: crash.NewTail(64<<10, nil)}
}

// Write splits p into lines; the runtime's report begins with a line of its own (Calaf's
// diagnostics begin with "error: " or "warning: ", and escape what a package wrote).
func (o *stderrOutput) Write(p []byte) (int, error) {
	o.partial = append(o.partial, p...)
	for {
		i := slices.Index(o.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		o.line(string(o.partial[:i+1]))
		o.partial = o.partial[i+1:]
	}
}

func (o *stderrOutput) line(line string) {
	if !o.inReport && isReportStart(line) {
		o.inReport = true
	}
	if o.inReport {
		_, _ = o.report.Write([]byte(line))
		return
	}
	if o.size+len(line) > maxStderrBytes {
		o.dropped++
		return
	}
	o.size += len(line)
	o.lines = append(o.lines, line)
}

// isReportStart tells whether a line starts the Go runtime's report of a crash.
func isReportStart(line string) bool {
	for _, prefix := range []string{"fatal error: ", "panic: ", "runtime: ", "goroutine ", "SIGSEGV", "SIGBUS", "unexpected fault address", crash.CPUMarker} {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

func (o *stderrOutput) crashed() bool {
	return o.inReport
}

// writeTo writes the diagnostics kept, and what did not end in a newline.
func (o *stderrOutput) writeTo(w io.Writer) {
	if len(o.partial) > 0 && !o.inReport {
		o.line(string(o.partial) + "\n")
		o.partial = nil
	}
	for _, line := range o.lines {
		_, _ = io.WriteString(w, line)
	}
	if o.dropped > 0 {
		fmt.Fprintf(w, "warning: %d more lines of diagnostics were dropped\n", o.dropped)
	}
}
