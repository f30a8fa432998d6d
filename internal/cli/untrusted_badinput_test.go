package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"calaf.io/calaf/test/benchreport"
)

// robustnessReport, when set, receives the measured table of TestUntrustedInputs as the
// section "## Untrusted packages" of that Markdown file (docs/robustness.md).
var robustnessReport = flag.String("robustness-report", "", "write the table of TestUntrustedInputs into this Markdown file")

// cliEnv makes the test binary be calaf itself (TestMain runs the command line of its
// arguments), so that the cases run as real processes whose time and memory are measured.
const cliEnv = "CALAF_TEST_AS_CLI"

// untrustedCase is a hostile or broken package of a class of untrusted input (untrusted_cases_test.go): calaf validate
// and calaf render must both end with exit code 1 and exactly this one line on stderr.
type untrustedCase struct {
	class, name string
	build       func(t *testing.T, dir string) []string
	want        string
}

// measured is what one run of a case cost.
type measured struct {
	class, name, command string
	wall                 time.Duration
	peak, workerPeak     int64
	line                 string
}

// renderer writes a package whose vendor node renders what the JavaScript expression
// objects evaluates to (node and ctx in scope).
func renderer(objects string) func(*testing.T, string) []string {
	return service(vendorType("exports.render = function (node, ctx) { return " + objects + "; };"))
}

// runAsCLI runs this test binary as calaf with args and measures it: its wall time, the
// peak memory of the largest of its processes, and its worker's peak memory.
func runAsCLI(t *testing.T, args ...string) (code int, stdout, stderr string, m measured) {
	t.Helper()
	stats := filepath.Join(t.TempDir(), "stats.json")
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), cliEnv+"=1", statsEnv+"="+stats)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	start := time.Now()
	err := cmd.Start()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(caseTimeout):
		_ = cmd.Process.Kill()
		t.Fatalf("calaf %s did not return within %s", strings.Join(args, " "), caseTimeout)
	}
	m.wall = time.Since(start)
	cliPeak, workerPeak := peaks(stats)
	m.peak, m.workerPeak = max(cliPeak, workerPeak), workerPeak
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), out.String(), errs.String(), m
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errs.String(), m
}

// peaks reads a stats file: the peak memory of the calaf process (recordPeak) and the
// largest of its workers'.
func peaks(path string) (cli, worker int64) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		var line struct {
			PeakBytes    int64 `json:"peakBytes"`
			CLIPeakBytes int64 `json:"cliPeakBytes"`
		}
		if json.Unmarshal(scanner.Bytes(), &line) == nil {
			worker, cli = max(worker, line.PeakBytes), max(cli, line.CLIPeakBytes)
		}
	}
	return cli, worker
}

// recordPeak appends the peak resident memory of this process (VmHWM: the high-water mark
// of its own address space — the rusage of a child started by vfork counts its parent's
// memory too) to the stats file at path, if any.
func recordPeak(path string) {
	status, err := os.ReadFile("/proc/self/status")
	if path == "" || err != nil {
		return
	}
	for _, line := range strings.Split(string(status), "\n") {
		if fields := strings.Fields(line); len(fields) == 3 && fields[0] == "VmHWM:" {
			kib, _ := strconv.ParseInt(fields[1], 10, 64)
			f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				return
			}
			fmt.Fprintf(f, "{\"cliPeakBytes\": %d}\n", kib<<10)
			f.Close()
		}
	}
}

// TestUntrustedInputs runs every case of untrustedCases through calaf validate and calaf
// render as real processes: each must exit 1 with exactly its one line on stderr, without
// a panic; time and memory are measured (and written with -robustness-report), not
// asserted.
func TestUntrustedInputs(t *testing.T) {
	var lock sync.Mutex
	var rows []measured
	t.Cleanup(func() {
		if *robustnessReport == "" || t.Failed() {
			return
		}
		if err := benchreport.WriteSection(*robustnessReport, untrustedTitle, untrustedTable(rows)); err != nil {
			t.Error(err)
		}
	})
	for _, c := range untrustedCases() {
		t.Run(c.class+"/"+c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := c.build(t, dir)
			for _, command := range []string{"validate", "render"} {
				code, stdout, stderr, m := runAsCLI(t, append([]string{command, "--script-timeout", "2s"}, args...)...)
				t.Logf("calaf %s: exit %d after %s, peak %d MiB (worker %d MiB)\n%s", command, code, m.wall.Round(time.Millisecond), m.peak>>20, m.workerPeak>>20, stderr)
				if code != ExitInvalid {
					t.Errorf("calaf %s: exit code %d, want %d", command, code, ExitInvalid)
				}
				if want := "error: " + c.want + "\n"; stderr != want {
					t.Errorf("calaf %s: stderr\n%q\nwant\n%q", command, stderr, want)
				}
				if m.peak >= maxCaseMemory {
					t.Errorf("calaf %s: peak memory %d MiB, the limits of the worker allow less than %d MiB", command, m.peak>>20, maxCaseMemory>>20)
				}
				if command == "render" && stdout != "" {
					t.Errorf("calaf render printed objects of a refused package:\n%s", stdout)
				}
				m.class, m.name, m.command, m.line = c.class, c.name, command, strings.TrimSuffix(stderr, "\n")
				lock.Lock()
				rows = append(rows, m)
				lock.Unlock()
			}
		})
	}
}

// maxCaseMemory bounds the resident memory of every process of a case: the worker's limit
// (512 MiB of address space above what it reserved at start) enforces it.
const maxCaseMemory = 1 << 30

const untrustedTitle = "## Untrusted packages"

// untrustedTable is the measured table for docs/robustness.md.
func untrustedTable(rows []measured) string {
	var b strings.Builder
	b.WriteString(untrustedTitle + "\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (`make bench-robustness`: `TestUntrustedInputs`, internal/cli/untrusted_badinput_test.go, `-robustness-report`) on %s; `make test` asserts every diagnostic below, not the times and sizes. Each case runs as a real `calaf validate` and `calaf render` process (the test binary as calaf), with `--script-timeout 2s` (60 s for the string-doubling case, so that the memory limit, not the deadline, ends it) and the default worker (512 MiB), on a machine of 2 cores shared with other work. Both must exit 1 with exactly the line shown on stderr; the time is the whole process, *peak* the peak resident memory of its largest process (the CLI's own high-water mark, VmHWM, or its worker's), *worker* the worker's own peak (its rusage, which also counts what the CLI held when it started the worker; 0: no worker was started).\n\n", time.Now().UTC().Format("2006-01-02"))
	b.WriteString("| class | case | calaf diagnostic (validate and render) | validate: time, peak (worker) | render: time, peak (worker) |\n|---|---|---|---|---|\n")
	byCase := map[string][]measured{}
	var order []string
	for _, r := range rows {
		key := r.class + "\x00" + r.name
		if _, seen := byCase[key]; !seen {
			order = append(order, key)
		}
		byCase[key] = append(byCase[key], r)
	}
	for _, key := range order {
		runs := byCase[key]
		cells := make([]string, 2)
		for _, r := range runs {
			cell := fmt.Sprintf("%.2f s, %d MiB (%d MiB)", r.wall.Seconds(), r.peak>>20, r.workerPeak>>20)
			if r.command == "validate" {
				cells[0] = cell
			} else {
				cells[1] = cell
			}
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s |\n", runs[0].class, runs[0].name, strings.ReplaceAll(runs[0].line, "|", "\\|"), cells[0], cells[1])
	}
	return b.String()
}
