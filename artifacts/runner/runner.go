// Package runner is calaf-runner: it runs one operation of a Calaf Service inside a pod's
// container — a JavaScript artifact in an embedded goja runtime, or a shell artifact with
// /bin/sh — and reports what it did. The operator streams the runner into the container
// over pods/exec, then sends it one protocol.Request per run on stdin; the framed
// protocol.Result comes back on stdout. The runner enforces the operation's deadline
// itself and bounds what it captures, so a stuck or chatty artifact cannot outlive its
// timeout or flood the operator. It imports the standard library, goja and the protocol
// only.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"calaf.io/calaf/artifacts/protocol"
)

// DefaultTimeout is the deadline of a request that names none.
const DefaultTimeout = 5 * time.Minute

// Version is set at build time (-ldflags -X) to identify the runner.
var Version = "dev"

// Options adjust a run.
type Options struct {
	// WorkRoot holds the per-run work directories; default $TMPDIR/.calaf.
	WorkRoot string
	// Env is the environment of commands; default os.Environ().
	Env []string
}

// Run runs one request and returns its result; it never panics on a bad artifact.
func Run(ctx context.Context, req *protocol.Request, opts Options) *protocol.Result {
	start := time.Now()
	result := run(ctx, req, opts)
	result.DurationMillis = time.Since(start).Milliseconds()
	return result
}

func run(ctx context.Context, req *protocol.Request, opts Options) *protocol.Result {
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	r := &execution{req: req, limits: req.Limits.WithDefaults(), timeout: timeout, env: opts.Env}
	r.values = newValues(r.limits.ValueBytes)
	r.logs = newLogs(r.limits.LogBytes)
	work, err := prepareWorkDir(opts.WorkRoot, req)
	if err != nil {
		return r.fail(protocol.ErrorInvalid, err.Error())
	}
	defer os.RemoveAll(work)
	r.work = work
	switch req.Kind {
	case protocol.KindJavaScript:
		r.runJavaScript(ctx)
	case protocol.KindShell:
		r.runShell(ctx)
	default:
		return r.fail(protocol.ErrorInvalid, fmt.Sprintf("unknown artifact kind %q", req.Kind))
	}
	return r.result()
}

// execution is the state of one run.
type execution struct {
	req     *protocol.Request
	limits  protocol.Limits
	timeout time.Duration
	env     []string
	work    string
	values  *values
	logs    *logs
	// commands run so far, and the last one that exited non-zero (its stderr tail).
	commands     int
	lastFailed   string
	lastExitCode int
	// err and errKind are set when the run failed.
	err, errKind string
}

func (r *execution) fail(kind, message string) *protocol.Result {
	r.errKind, r.err = kind, message
	return r.result()
}

func (r *execution) timeoutMessage() string {
	return fmt.Sprintf("timed out after %v (the operation's timeout)", r.timeout)
}

func (r *execution) result() *protocol.Result {
	res := &protocol.Result{
		Attributes: r.values.attributes,
		Outputs:    r.values.outputs,
		Logs:       r.logs.lines,
		Commands:   r.commands,
	}
	res.LogsDropped = r.logs.dropped
	if r.err != "" {
		res.Error, res.ErrorKind = r.err, r.errKind
		res.Stderr = protocol.Tail(r.lastFailed, 2048)
		res.ExitCode = r.lastExitCode
	}
	return res
}

// prepareWorkDir creates a private directory holding the artifact and its companion
// files at their package paths.
func prepareWorkDir(root string, req *protocol.Request) (string, error) {
	if root == "" {
		root = filepath.Join(os.TempDir(), ".calaf")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	work, err := os.MkdirTemp(root, "run-")
	if err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	files := map[string]string{}
	for name, content := range req.Files {
		files[name] = content
	}
	if req.Artifact.File != "" {
		files[req.Artifact.File] = req.Source
	}
	for name, content := range files {
		full, err := workPath(work, name)
		if err != nil {
			os.RemoveAll(work)
			return "", err
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			os.RemoveAll(work)
			return "", err
		}
		if err := os.WriteFile(full, []byte(content), 0o700); err != nil {
			os.RemoveAll(work)
			return "", err
		}
	}
	return work, nil
}

// workPath places a package path inside the work directory, refusing paths that leave it.
func workPath(work, name string) (string, error) {
	clean := path.Clean("/" + strings.TrimLeft(name, "/"))
	if clean == "/" || strings.Contains(name, "\x00") {
		return "", fmt.Errorf("invalid file name %q", name)
	}
	return filepath.Join(work, filepath.FromSlash(clean[1:])), nil
}

// Main is calaf-runner: it reads one framed request from stdin, runs it, and writes the
// framed result to stdout. The exit code is 0 whenever a result was written (the result
// tells whether the operation failed), 2 when the request was unreadable.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "--version", "version":
			fmt.Fprintf(stdout, "calaf-runner %s (protocol %d)\n", Version, protocol.Version)
			return 0
		default:
			fmt.Fprintf(stderr, "calaf-runner runs Calaf operations; it reads its request on stdin and takes no arguments (got %q)\n", args[0])
			return 2
		}
	}
	req, err := protocol.ReadRequest(stdin)
	if err != nil {
		fmt.Fprintln(stderr, "calaf-runner:", err)
		res := &protocol.Result{Error: err.Error(), ErrorKind: protocol.ErrorInvalid}
		_ = protocol.WriteResult(stdout, res)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	result := Run(ctx, req, Options{})
	if err := protocol.WriteResult(stdout, result); err != nil {
		fmt.Fprintln(stderr, "calaf-runner: writing the result:", err)
		return 1
	}
	return 0
}

// errTimeout interrupts the JavaScript runtime at the deadline.
var errTimeout = errors.New("deadline")
