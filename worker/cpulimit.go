package worker

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"calaf.io/calaf/worker/crash"
)

// CPULimit holds a process's CPU time to what its work may use, with the kernel's
// RLIMIT_CPU: its hard limit, set once, bounds the process's whole life; its soft limit,
// raised before each piece of work to what the process used plus the work's budget, makes
// the kernel send SIGXCPU when the work passes its budget. The process then writes
// crash.CPUMarker and the budget on its stderr and exits. A process that ignores the
// signal (code that escaped the sandbox) is killed by the kernel at the hard limit.
type CPULimit struct {
	budget atomic.Int64
	stderr io.Writer
}

// exitCPU is the exit code of a process at the CPU time limit of its work.
const exitCPU = 3

// LimitCPU sets the hard limit of this process's CPU time to life (rounded up to a
// second; zero: none) and stops the process when a piece of work passes its budget
// (Work), saying so on stderr.
func LimitCPU(life time.Duration, stderr io.Writer) (*CPULimit, error) {
	if life > 0 {
		seconds := ceilSeconds(life)
		if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: seconds, Max: seconds}); err != nil {
			return nil, fmt.Errorf("CPU time limit: %w", err)
		}
	}
	l := &CPULimit{stderr: stderr}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGXCPU)
	go func() {
		<-signals
		fmt.Fprintf(l.stderr, "%s%s\n", crash.CPUMarker, time.Duration(l.budget.Load()))
		os.Exit(exitCPU)
	}()
	return l, nil
}

// Work gives the work that starts now budget of CPU time: the soft limit becomes what
// the process used so far plus budget (rounded up to a second, at most the hard limit).
func (l *CPULimit) Work(budget time.Duration) error {
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CPU, &limit); err != nil {
		return fmt.Errorf("CPU time limit: %w", err)
	}
	used, _ := usage()
	limit.Cur = min(ceilSeconds(used+budget), limit.Max)
	l.budget.Store(int64(budget))
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &limit); err != nil {
		return fmt.Errorf("CPU time limit: %w", err)
	}
	return nil
}

// ceilSeconds rounds a duration up to whole seconds, RLIMIT_CPU's unit.
func ceilSeconds(d time.Duration) uint64 {
	return uint64((d + time.Second - 1) / time.Second)
}
