// Command testsummary reads `go test -json` on its standard input and prints what a plain
// `go test` prints — each package's ok or FAIL line, and the output of the tests that
// failed — then appends a tally of the stage to a summary file: how many tests passed,
// failed and were skipped, and why each skipped one was. `make test` prints the file at
// its end, so that a green run that skipped something says so.
//
//	go test -json ./... | go run ./test/testsummary -stage unit -summary bin/test-summary.txt
//
// Lines that are not JSON (a wrapper's own) are printed as they come. It exits 1 when a
// test or a package failed, or when it read no test at all.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of `go test -json` (test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// tally is what a stage's tests did.
type tally struct {
	passed, failed, skipped int
	// subtests are counted apart: a test's subtests run within it.
	subPassed, subFailed, subSkipped int
	// skips say each skipped test and why (the last line it logged before skipping).
	skips []string
	// failedPackages are packages that failed outside any test (a build error, a panic in
	// TestMain); failedTests, those where a test failed.
	failedPackages []string
	failedTests    map[string]bool
}

func main() {
	stage := flag.String("stage", "tests", "the name of the stage in the summary")
	summary := flag.String("summary", "", "file the stage's tally is appended to (none: only printed)")
	flag.Parse()
	t, err := read(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	text := t.format(*stage)
	fmt.Print("\n" + text)
	if *summary != "" {
		f, err := os.OpenFile(*summary, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.WriteString(text)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(1)
		}
	}
	if !t.ok() {
		os.Exit(1)
	}
}

// read tallies the events of in and prints to out what plain `go test` would.
func read(in io.Reader, out io.Writer) (*tally, error) {
	t := &tally{failedTests: map[string]bool{}}
	outputs := map[string][]string{} // by package and test, until the test ends
	scanner := bufio.NewScanner(in)
	scanner.Buffer(nil, 16<<20)
	for scanner.Scan() {
		line := scanner.Text()
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
			fmt.Fprintln(out, line)
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			fmt.Fprint(out, e.Output)
		case e.Action == "output" && e.Test != "":
			outputs[key] = append(outputs[key], e.Output)
		case e.Action == "output":
			// A package's own lines: its ok/FAIL line, a build failure, TestMain's output.
			if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS\n") {
				fmt.Fprint(out, e.Output)
			}
		case e.Test == "" && e.Action == "fail" && !t.failedTests[e.Package]:
			t.failedPackages = append(t.failedPackages, e.Package)
		case e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			t.count(e, outputs[key])
			if e.Action == "fail" {
				t.failedTests[e.Package] = true
				fmt.Fprint(out, strings.Join(outputs[key], ""))
			}
			delete(outputs, key)
		}
	}
	return t, scanner.Err()
}

// count counts a test that ended, with what it logged.
func (t *tally) count(e event, output []string) {
	sub := strings.Contains(e.Test, "/")
	switch e.Action {
	case "pass":
		t.passed, t.subPassed = t.passed+b2i(!sub), t.subPassed+b2i(sub)
	case "fail":
		t.failed, t.subFailed = t.failed+b2i(!sub), t.subFailed+b2i(sub)
	case "skip":
		t.skipped, t.subSkipped = t.skipped+b2i(!sub), t.subSkipped+b2i(sub)
		t.skips = append(t.skips, fmt.Sprintf("%s %s: %s", e.Package, e.Test, skipReason(output)))
	}
}

// skipReason is the last line a test logged before its "--- SKIP" line: t.Skip's message.
func skipReason(output []string) string {
	for i := len(output) - 1; i >= 0; i-- {
		line := strings.TrimSpace(output[i])
		if line == "" || strings.HasPrefix(line, "--- SKIP") || strings.HasPrefix(line, "=== ") {
			continue
		}
		return line
	}
	return "(no reason given)"
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ok tells whether nothing failed and some test ran.
func (t *tally) ok() bool {
	return t.failed == 0 && t.subFailed == 0 && len(t.failedPackages) == 0 && t.passed+t.skipped > 0
}

// format says the stage's tally: one line, then each skip and each failed package.
func (t *tally) format(stage string) string {
	var b strings.Builder
	verdict := "ok"
	if !t.ok() {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "%s: %s — %d tests ran: %d passed, %d failed, %d skipped (subtests: %d passed, %d failed, %d skipped)\n",
		stage, verdict, t.passed+t.failed+t.skipped, t.passed, t.failed, t.skipped, t.subPassed, t.subFailed, t.subSkipped)
	skips := slices.Clone(t.skips)
	slices.Sort(skips)
	for _, s := range skips {
		fmt.Fprintf(&b, "  skipped %s\n", s)
	}
	for _, p := range t.failedPackages {
		fmt.Fprintf(&b, "  package failed: %s\n", p)
	}
	if t.passed+t.skipped+t.failed == 0 {
		b.WriteString("  no test ran\n")
	}
	return b.String()
}
