// Package crash reads why a child process ended: the Go runtime's report on its stderr
// (fatal error, panic, stack overflow, out of memory) or the signal that killed it, in
// words that complete "<the package's compile|render> ...". It links nothing but the
// standard library, for the calaf front.
package crash

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Tail keeps the last bytes a worker wrote on stderr: its log and, when it crashes, the Go
// runtime's report, which says why.
type Tail struct {
	lock  sync.Mutex
	limit int
	data  []byte
	// lines, when set, receives every complete line (truncated), for the pool's log.
	lines   func(string)
	partial []byte
}

func NewTail(limit int, lines func(string)) *Tail {
	return &Tail{limit: limit, lines: lines}
}

// Write keeps p, dropping the oldest bytes beyond the limit.
func (t *Tail) Write(p []byte) (int, error) {
	t.lock.Lock()
	defer t.lock.Unlock()
	t.data = append(t.data, p...)
	if over := len(t.data) - t.limit; over > 0 {
		t.data = append(t.data[:0], t.data[over:]...)
	}
	if t.lines != nil {
		t.split(p)
	}
	return len(p), nil
}

// split passes complete lines on, at most 512 bytes of each.
func (t *Tail) split(p []byte) {
	t.partial = append(t.partial, p...)
	for {
		i := strings.IndexByte(string(t.partial), '\n')
		if i < 0 {
			if len(t.partial) > 4096 {
				t.partial = t.partial[:0]
			}
			return
		}
		line := string(t.partial[:i])
		t.partial = t.partial[i+1:]
		if len(line) > 512 {
			line = line[:512] + "…"
		}
		t.lines(line)
	}
}

func (t *Tail) String() string {
	t.lock.Lock()
	defer t.lock.Unlock()
	return string(t.data)
}

// Ending says how a worker ended while it worked on a request: why it was stopped, or what
// it crashed of. Its text completes "<the package's compile|render> ...".
type Ending struct {
	// Kind is one of "memory", "stack overflow", "deadline", "cpu", "crash", "killed".
	Kind string
	// Text says it for a person, e.g. "exceeded 512 MiB of memory".
	Text string
}

// CPUMarker starts the line a worker writes on stderr as it ends at the CPU time limit of
// its request (the kernel's SIGXCPU), the limit after it.
const CPUMarker = "calaf: CPU time limit: "

// CPUEnding is the end of a worker that used more than limit of CPU time.
func CPUEnding(limit time.Duration) Ending {
	return Ending{Kind: "cpu", Text: fmt.Sprintf("used more than %s of CPU time", limit)}
}

// cpuLimit finds the line CPUMarker starts in stderr, and the limit it names.
func cpuLimit(stderr string) (time.Duration, bool) {
	for _, line := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(line, CPUMarker); ok {
			limit, err := time.ParseDuration(rest)
			return limit, err == nil
		}
	}
	return 0, false
}

// Diagnose reads the end of a process from how it ended and its stderr; memory and stack
// are the limits it ran with (bytes; zero: none).
func Diagnose(state *os.ProcessState, stderr string, memory, stack int64) Ending {
	if limit, ok := cpuLimit(stderr); ok {
		return CPUEnding(limit)
	}
	fatal, where := lastWords(stderr)
	switch {
	case strings.Contains(fatal, "stack overflow") || strings.Contains(stderr, "goroutine stack exceeds"):
		return Ending{Kind: "stack overflow", Text: "crashed: stack overflow in " + where + stackLimit(stack)}
	case strings.Contains(fatal, "out of memory") || strings.Contains(stderr, "cannot allocate memory") || strings.Contains(stderr, "errno=12"):
		return Ending{Kind: "memory", Text: fmt.Sprintf("exceeded %d MiB of memory", memory>>20)}
	case fatal != "":
		return Ending{Kind: "crash", Text: "crashed: " + fatal + inWhere(where)}
	}
	if state != nil {
		if status, ok := state.Sys().(syscall.WaitStatus); ok && status.Signaled() {
			if status.Signal() == syscall.SIGKILL {
				return Ending{Kind: "killed", Text: "was killed (SIGKILL; by the kernel's OOM killer when memory runs out)"}
			}
			return Ending{Kind: "killed", Text: "was killed by " + status.Signal().String()}
		}
		return Ending{Kind: "crash", Text: fmt.Sprintf("crashed: its process exited with code %d%s", state.ExitCode(), LastLines(stderr, 1))}
	}
	return Ending{Kind: "crash", Text: "crashed"}
}

func stackLimit(stack int64) string {
	if stack <= 0 {
		return ""
	}
	return fmt.Sprintf(" (a goroutine stack above %d MiB: a cycle in the package's types or data?)", stack>>20)
}

func inWhere(where string) string {
	if where == "unknown code" {
		return ""
	}
	return " in " + where
}

// lastWords finds the Go runtime's report in stderr: the fatal error or panic, and the
// function where the crashing goroutine was (its first frame outside the runtime).
func lastWords(stderr string) (fatal, where string) {
	lines := strings.Split(stderr, "\n")
	where = "unknown code"
	inTrace := false
	for i, line := range lines {
		switch {
		case fatal == "" && strings.HasPrefix(line, "fatal error: "):
			fatal = strings.TrimPrefix(line, "fatal error: ")
		case fatal == "" && strings.HasPrefix(line, "panic: "):
			fatal = "panic: " + strings.TrimSuffix(strings.TrimPrefix(line, "panic: "), " [recovered]")
		case strings.HasPrefix(line, "goroutine ") && strings.HasSuffix(line, ":"):
			inTrace = fatal != ""
		case inTrace && line != "" && !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, "runtime.") && !strings.HasPrefix(line, "panic("):
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
				return truncate(fatal, 200), function(line)
			}
		}
	}
	return truncate(fatal, 200), where
}

// function turns a frame line, "pkg.(*T).m(0x1, ...)" or "created by ...", into the
// function's name.
func function(frame string) string {
	frame = strings.TrimPrefix(frame, "created by ")
	if i := strings.LastIndex(frame, "("); i > 0 && strings.HasSuffix(frame, ")") {
		frame = frame[:i]
	}
	if i := strings.Index(frame, " in goroutine"); i > 0 {
		frame = frame[:i]
	}
	return frame
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// LastLines returns the last n non-empty lines of s, as a suffix of a message.
func LastLines(s string, n int) string {
	var lines []string
	for _, line := range strings.Split(s, "\n") {
		if line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return ""
	}
	return ": " + truncate(strings.Join(lines, " / "), 500)
}
