package worker

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"calaf.io/calaf/etsi/chart"
)

// commandName is the hidden command a pool starts its workers with: `calaf worker`.
const commandName = "worker"

// testingGuard comes before commandName when a test binary starts workers: a test binary
// whose TestMain does not call Main then runs no test and exits, instead of running its
// tests again (and starting workers of its own).
const testingGuard = "-test.run=^$"

// defaultCommand is this executable started as a worker.
func defaultCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("worker command: %w", err)
	}
	if testing.Testing() {
		return []string{exe, testingGuard, commandName}, nil
	}
	return []string{exe, commandName}, nil
}

// Main serves as a worker when args (a process's os.Args) say it was started as one, and
// returns its exit code; isWorker is false otherwise. Test binaries whose code starts
// pools call it first in TestMain, as calaf does through its hidden command. charts
// renders Helm charts (nil: none).
func Main(args []string, charts chart.Engine) (code int, isWorker bool) {
	switch {
	case len(args) > 1 && args[1] == commandName:
		args = args[2:]
	case len(args) > 2 && args[1] == testingGuard && args[2] == commandName:
		args = args[3:]
	default:
		return 0, false
	}
	return Run(args, os.Stdin, os.Stdout, os.Stderr, charts), true
}

// Run is a worker process: it reads its limits from args (--memory, --stack, in bytes;
// --cpu), what it may read (--read, repeated) and its garbage collection target
// (--gc-percent), serves requests on in and out, and logs on errOut. It returns the exit
// code. charts renders Helm charts (nil: none).
func Run(args []string, in io.Reader, out, errOut io.Writer, charts chart.Engine) int {
	flags := flag.NewFlagSet(commandName, flag.ContinueOnError)
	flags.SetOutput(errOut)
	setup := Setup{Limits: DefaultLimits(), Stderr: errOut}
	limits, confinement := &setup.Limits, &setup.Confinement
	flags.Int64Var(&limits.Memory, "memory", limits.Memory, "address space the worker may add to what it reserved at start, in bytes")
	flags.Int64Var(&limits.Stack, "stack", limits.Stack, "maximum stack of one goroutine, in bytes")
	flags.DurationVar(&limits.CPU, "cpu", limits.CPU, "CPU time of the worker's life")
	flags.Func("read", "a directory the worker may read (repeated)", func(dir string) error {
		confinement.Read = append(confinement.Read, dir)
		return nil
	})
	flags.IntVar(&confinement.MaxABI, "landlock-abi", 0, "use at most this Landlock ABI (0: the kernel's; -1: none)")
	gcPercent := flags.Int("gc-percent", 0, "garbage collection target, as GOGC (0: the runtime's)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *gcPercent > 0 {
		debug.SetGCPercent(*gcPercent)
	}
	log := logr.New(funcr.New(func(prefix, args string) { fmt.Fprintln(errOut, prefix, args) }, funcr.Options{}).GetSink())
	if err := Serve(in, out, setup, charts, log); err != nil {
		fmt.Fprintln(errOut, "worker:", err)
		return 1
	}
	return 0
}
