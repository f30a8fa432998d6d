// Package raceworker gives tests that start worker pools (package worker) a worker that
// is not built with the race detector when the test binary is.
//
// A worker limits its address space (RLIMIT_AS) to bound what a package may take. The race
// detector's shadow memory counts against that limit, so a race-instrumented worker meeting
// a memory bomb or an endless recursion dies inside the detector ("too many address space
// collisions for -race mode") instead of ending as the memory exhaustion or stack overflow
// the tests expect. With a plain worker, the test binary's own code (the pool, the
// operator) stays under the detector and the workers behave as in production.
package raceworker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Command returns the command a pool under test should start its workers with: nil (the
// pool's default, the test binary itself) without the race detector; with it, a calaf
// binary built without it, in a directory cleanup removes.
func Command() (command []string, cleanup func(), err error) {
	if !Enabled {
		return nil, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "calaf-test-worker-")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	bin := filepath.Join(dir, "calaf")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "calaf.io/calaf/cmd/calaf-full")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("building a worker without the race detector: %w\n%s", err, out)
	}
	return []string{bin, "worker"}, cleanup, nil
}
