package orchestration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"calaf.io/calaf/artifacts/protocol"
	"calaf.io/calaf/internal/lru"
)

// Target is a container an operation runs in.
type Target struct {
	Namespace string
	Pod       string
	Container string
	// PodUID tells pods of the same name apart (the runner is installed per container).
	PodUID string
	// Impersonate, when set, is the user the exec is done as (the Service's account).
	Impersonate string
	// Cluster, when set, is the cluster the pod runs in; nil for the operator's.
	Cluster *Cluster
}

// Timing says where the time of one run went.
type Timing struct {
	// Install is the time spent streaming the runner into the container (zero when it
	// was there already).
	Install time.Duration
	// Exec is the round trip of the run itself: request in, result out.
	Exec time.Duration
	// Installed tells whether this run installed the runner.
	Installed bool
}

// Executor runs requests in containers.
type Executor interface {
	Run(ctx context.Context, target Target, req *protocol.Request) (*protocol.Result, Timing, error)
}

// runnerDir is where the runner is installed in containers.
const runnerDir = "/tmp/.calaf"

// exitNoRunner is the exit code of the run command when the runner is not installed.
const exitNoRunner = 97

// maxResultBytes bounds the runner's stdout read by the operator.
const maxResultBytes = 4 << 20

// PodExecutor runs requests over pods/exec: it streams the runner into a container the
// first time (skipped when that container already has this runner), then runs it with
// the request on stdin.
type PodExecutor struct {
	Config *rest.Config
	Runner *Runner

	installed *lru.Cache[bool]
	// clients are the exec clients by cluster and impersonated user.
	clients *lru.Cache[*execClient]
	mu      sync.Mutex
}

type execClient struct {
	config    *rest.Config
	clientset kubernetes.Interface
}

// NewPodExecutor returns an executor with the runner.
func NewPodExecutor(config *rest.Config, runner *Runner) *PodExecutor {
	return &PodExecutor{Config: config, Runner: runner, installed: lru.New[bool](8192), clients: lru.New[*execClient](1024)}
}

// Run runs a request with the runner in a container, installing the runner first when the
// container lacks it.
func (e *PodExecutor) Run(ctx context.Context, target Target, req *protocol.Request) (*protocol.Result, Timing, error) {
	var timing Timing
	if e.Runner == nil {
		return nil, timing, errors.New("the operator has no " + RunnerName + " binary to run operations with (see --runner)")
	}
	var stdin bytes.Buffer
	if err := protocol.WriteRequest(&stdin, req); err != nil {
		return nil, timing, err
	}
	key := target.PodUID + "/" + target.Container + "/" + e.Runner.Hash
	for attempt := 0; ; attempt++ {
		if present, _ := e.installed.Get(key); !present || attempt > 0 {
			start := time.Now()
			if err := e.install(ctx, target); err != nil {
				return nil, timing, err
			}
			timing.Install += time.Since(start)
			timing.Installed = true
			e.installed.Put(key, true)
		}
		start := time.Now()
		stdout := &limitedBuffer{limit: maxResultBytes}
		stderr := &limitedBuffer{limit: 64 << 10}
		code, err := e.exec(ctx, target, e.runCommand(), bytes.NewReader(stdin.Bytes()), stdout, stderr)
		timing.Exec = time.Since(start)
		if err != nil {
			return nil, timing, err
		}
		if code == exitNoRunner && attempt == 0 {
			e.installed.Put(key, false)
			continue // the container restarted, or the cache was wrong: install again
		}
		result, rerr := protocol.ReadResult(stdout.Bytes())
		if rerr != nil {
			return nil, timing, runnerFailure(code, stderr.String(), rerr)
		}
		return result, timing, nil
	}
}

// runnerFailure explains a run that produced no result.
func runnerFailure(code int, stderr string, err error) error {
	stderr = strings.TrimSpace(stderr)
	switch {
	case code == 126 || strings.Contains(stderr, "ermission denied"):
		return fmt.Errorf("the runner cannot be executed in the container (is %s mounted noexec?): exit code %d: %s", runnerDir, code, protocol.Tail(stderr, 512))
	case code == 137:
		return fmt.Errorf("the runner was killed (exit code 137: out of memory?): %s", protocol.Tail(stderr, 512))
	case code != 0:
		return fmt.Errorf("the runner exited with code %d and no result: %s", code, protocol.Tail(stderr, 512))
	}
	return fmt.Errorf("%v: %s", err, protocol.Tail(stderr, 512))
}

func (e *PodExecutor) runnerPath() string {
	return runnerDir + "/runner-" + e.Runner.Hash
}

func (e *PodExecutor) runCommand() []string {
	return []string{"/bin/sh", "-c", fmt.Sprintf(`f=%s; [ -x "$f" ] || exit %d; exec "$f"`, e.runnerPath(), exitNoRunner)}
}

// install streams the runner into the container: written to a temporary name, made
// executable, then renamed, so a broken transfer never leaves a half runner behind.
func (e *PodExecutor) install(ctx context.Context, target Target) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	script := fmt.Sprintf(`umask 077 && mkdir -p %[1]s && t=%[2]s.$$ && cat > "$t" && `+
		`if command -v wc >/dev/null 2>&1; then [ "$(wc -c < "$t")" -eq %[3]d ] || { rm -f "$t"; echo "runner truncated" >&2; exit 98; }; fi && `+
		`chmod 700 "$t" && mv -f "$t" %[2]s`, runnerDir, e.runnerPath(), e.Runner.Size)
	binary, err := e.Runner.Open()
	if err != nil {
		return err
	}
	defer binary.Close()
	var stderr limitedBuffer
	stderr.limit = 16 << 10
	code, err := e.exec(ctx, target, []string{"/bin/sh", "-c", script}, binary, io.Discard, &stderr)
	if err != nil {
		return fmt.Errorf("installing the runner: %w", err)
	}
	if code != 0 {
		return fmt.Errorf("installing the runner into %s failed (exit code %d; the container needs /bin/sh, mkdir, cat, chmod, mv and a writable %s): %s",
			runnerDir, code, runnerDir, protocol.Tail(strings.TrimSpace(stderr.String()), 512))
	}
	return nil
}

// exec runs a command in a container like kubectl exec (WebSocket, falling back to SPDY)
// and returns its exit code; err is for failures to run it at all.
func (e *PodExecutor) exec(ctx context.Context, target Target, command []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	c, err := e.client(target.Cluster, target.Impersonate)
	if err != nil {
		return -1, err
	}
	req := c.clientset.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(target.Namespace).Name(target.Pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: target.Container,
			Command:   command,
			Stdin:     stdin != nil,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec)
	websocket, err := remotecommand.NewWebSocketExecutor(c.config, "GET", req.URL().String())
	if err != nil {
		return -1, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.config, "POST", req.URL())
	if err != nil {
		return -1, err
	}
	executor, err := remotecommand.NewFallbackExecutor(websocket, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return -1, err
	}
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	var exitErr utilexec.ExitError
	if errors.As(err, &exitErr) && exitErr.Exited() {
		return exitErr.ExitStatus(), nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return -1, fmt.Errorf("exec in pod %s: %w", target.Pod, ctx.Err())
		}
		return -1, fmt.Errorf("exec in pod %s: %w", target.Pod, err)
	}
	return 0, nil
}

// client returns the exec client of a cluster (nil: the operator's) as user (none: as
// the operator, or as the cluster's identity).
func (e *PodExecutor) client(cluster *Cluster, user string) (*execClient, error) {
	key, base := "\x00"+user, e.Config
	if cluster != nil {
		key, base = cluster.Key+key, cluster.Config
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.clients.Get(key); ok {
		return c, nil
	}
	config := rest.CopyConfig(base)
	config.Timeout = 0 // an exec stream lasts as long as its operation (ctx bounds it)
	if user != "" {
		config.Impersonate = rest.ImpersonationConfig{UserName: user}
	}
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	c := &execClient{config: config, clientset: clientset}
	e.clients.Put(key, c)
	return c, nil
}

// limitedBuffer keeps the first limit bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); room > 0 {
		if room > len(p) {
			room = len(p)
		}
		b.Buffer.Write(p[:room])
	}
	return len(p), nil
}
