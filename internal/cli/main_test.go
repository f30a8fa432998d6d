package cli

import (
	"os"
	"testing"

	"calaf.io/calaf/etsi/helmchart"
	"calaf.io/calaf/worker"
)

// TestMain lets the test binary serve as the worker of the commands under test: the
// worker pool starts this executable as a worker, as calaf starts itself.
func TestMain(m *testing.M) {
	if code, isWorker := worker.Main(os.Args, helmchart.Engine{}); isWorker {
		os.Exit(code)
	}
	if os.Getenv(cliEnv) == "1" { // a case of TestUntrustedInputs, run as calaf
		code := Run(os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
		recordPeak(os.Getenv(statsEnv))
		os.Exit(code)
	}
	os.Exit(m.Run())
}
