package runner

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// command is a command an artifact runs in the container.
type command struct {
	Argv    []string
	Stdin   string
	Dir     string
	Env     map[string]string
	Timeout time.Duration
}

// commandResult is what a command did.
type commandResult struct {
	ExitCode  int    `json:"exitCode"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	TimedOut  bool   `json:"timedOut"`
	Truncated bool   `json:"truncated"`
}

// waitDelay is how long a killed command's pipes may stay open (held by orphans).
const waitDelay = 2 * time.Second

// runCommand runs a command in its own process group, killed as a group when ctx ends or
// its own timeout passes. Output beyond the limit is dropped (stdout keeps its head,
// stderr its tail). A command that cannot start exits 127, like in a shell.
func (r *execution) runCommand(ctx context.Context, c command, extraStdout, extraStderr io.Writer) commandResult {
	r.commands++
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	stdout := &headBuffer{limit: r.limits.OutputBytes}
	stderr := &tailBuffer{limit: r.limits.OutputBytes}
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Dir = c.Dir
	if cmd.Dir == "" {
		cmd.Dir = r.work
	}
	cmd.Env = append([]string{}, r.env...)
	for key, value := range c.Env {
		cmd.Env = append(cmd.Env, key+"="+value)
	}
	cmd.Stdin = strings.NewReader(c.Stdin)
	cmd.Stdout, cmd.Stderr = writers(stdout, extraStdout), writers(stderr, extraStderr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	res := commandResult{Stdout: stdout.String(), Stderr: stderr.String(), Truncated: stdout.truncated > 0 || stderr.truncated > 0}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.TimedOut = true
		res.ExitCode = -1
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() >= 0 {
			res.ExitCode = cmd.ProcessState.ExitCode()
		}
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
		if res.ExitCode < 0 {
			res.ExitCode = 128 + int(exitErr.Sys().(syscall.WaitStatus).Signal())
		}
	case err != nil && errors.Is(err, exec.ErrWaitDelay):
	case err != nil:
		res.ExitCode = 127
		res.Stderr += err.Error()
	}
	if res.ExitCode != 0 {
		r.lastFailed, r.lastExitCode = res.Stderr, res.ExitCode
	}
	return res
}

func writers(primary io.Writer, extra io.Writer) io.Writer {
	if extra == nil {
		return primary
	}
	return io.MultiWriter(primary, extra)
}
