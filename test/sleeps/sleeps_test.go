// Package sleeps keeps the tests honest about time: "nothing happened" is proven by an
// observable fact (a watch between two markers, a counter, a resourceVersion read after a
// change the system must have processed), never by sleeping, and a test that waits on a
// clock injects it. The sleeps that remain in tests are listed here, each with why it is
// not an assertion of absence; a new one fails until it is listed or replaced.
package sleeps

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// allowed returns the sleeps and Consistently calls tests (and the helpers and benchmarks
// under test/) may hold: by file (from the repository root), the line as written
// (trimmed), and why it asserts no absence.
func allowed() map[string]map[string]string {
	return map[string]map[string]string{
		"lifecycle/suite_test.go": {
			"time.Sleep(100 * time.Millisecond)": "the loop of the stand-in workload controller (readyWorkloads), which plays kube-controller-manager on the API-server test ground: polling, asserts nothing",
		},
		"lifecycle/standin_test.go": {
			"time.Sleep(100 * time.Millisecond)": "the loop of the stand-in pod and workload controller: polling, asserts nothing",
		},
		"orchestration/orchestrator_test.go": {
			"time.Sleep(5 * time.Millisecond)": "polls until every job finished, bounded by a deadline that fails the test",
		},
		"test/e2e/framework/procattr_linux_test.go": {
			"time.Sleep(50 * time.Millisecond)": "polls until the stand-in process is gone (its presence is what fails), bounded by a deadline",
		},
		"test/e2e/outage_test.go": {
			"time.Sleep(outage)": "the API server's outage itself: the test stops it for this long, then checks what the operator did about it",
		},
		"test/sources/bench_test.go": {
			"time.Sleep(time.Duration(r) * interval / rounds) // spread the push over the interval": "a benchmark: spreads its pushes over the polling interval it measures",
		},
		"test/e2e/lifecycle_bench_test.go": {
			"time.Sleep(20 * time.Millisecond)": "a benchmark: polls for the occurrence's end and the replicas it times (twice), bounded by deadlines",
		},
		"test/e2e/orchestration_bench_test.go": {
			"time.Sleep(20 * time.Millisecond)": "a benchmark: polls for the on-demand operation it times, bounded by a deadline",
		},
		"test/e2e/nfv_bench_test.go": {
			"time.Sleep(20 * time.Millisecond) // polling, as an NFVO does":      "a benchmark: polls the occurrence it times, as an NFVO does",
			"time.Sleep(20 * time.Millisecond) // polling, as kubectl wait does": "a benchmark: polls the Service it times, as kubectl wait does",
		},
		"test/gitserver/gitserver.go": {
			"time.Sleep(time.Duration(d))": "the test git server's injected slowness (SetDelay), for tests of slow fetches",
		},
		"test/ociregistry/ociregistry.go": {
			"time.Sleep(100 * time.Millisecond)": "polls until the registry answers, bounded by a deadline",
		},
		"test/e2e/framework/operator.go": {
			"time.Sleep(200 * time.Millisecond)": "polls until the CRDs are served, bounded by a deadline",
		},
		"test/bench/fleet/main.go": {
			"time.Sleep(500 * time.Millisecond)": "a benchmark: polls for the baselines' Deployments to be Current",
		},
		"test/bench/fleet/costs.go": {
			"time.Sleep(5 * time.Second)": "a benchmark: the idle window whose CPU is subtracted from each request's",
			"time.Sleep(time.Second)":     "a benchmark: the second after the last request in which the API server sends its watch events, counted in the request's cost",
		},
		"test/bench/fleet/clear.go": {
			"for deadline := time.Now().Add(15 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {": "a benchmark: polls until a run's namespace is gone",
		},
		"test/bench/fleet/multicluster.go": {
			"for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {": "a benchmark: polls until a run's namespace in a target cluster (no namespace controller there) is gone",
		},
		"test/bench/fleet/operator.go": {
			"time.Sleep(2 * time.Second) // let them start their caches: not part of the measure":                                 "a benchmark: the operator's start, kept out of the measured window",
			"time.Sleep(2 * time.Second) // the bench's watch takes in the creates: not part of the measure":                      "a benchmark: the creates taken in, kept out of the backlog run's window",
			"for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {": "a benchmark: looks at the tally of Services Applied and Ready every 100 ms",
		},
	}
}

// sleep finds a sleep, or gomega's Consistently (a sleep that asserts all along).
var sleep = regexp.MustCompile(`\btime\.Sleep\(|\bConsistently\(`)

// TestSleepsAreListed fails on a sleep in a test that is not listed, and on a listed one
// that is gone (the list says what is there).
func TestSleepsAreListed(t *testing.T) {
	found, allowed := sleepsIn(t, filepath.Join("..", "..")), allowed()
	for file, lines := range found {
		for line, where := range lines {
			if _, ok := allowed[file][line]; !ok {
				t.Errorf("%s: %s: a sleep in a test. Prove what it waits for by an observable fact (a watch between two markers, a counter, a status written after the change), inject the clock, or list it in test/sleeps with the reason it asserts no absence", where, line)
			}
		}
	}
	for file, lines := range allowed {
		for line := range lines {
			if _, ok := found[file][line]; !ok {
				t.Errorf("%s: %q is listed but not there any more: take it off the list", file, line)
			}
		}
	}
}

// The scan finds what it must: a sleep, a Consistently, and not a word that only
// contains one.
func TestScanFindsSleeps(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a_test.go", "package a\nfunc f() {\n\ttime.Sleep(time.Second) // settle\n\tg.Consistently(get, time.Second).Should(Equal(1))\n\tmytime.Sleeper()\n}\n")
	write("a/a.go", "package a\nfunc g() { time.Sleep(time.Second) }\n")
	write("test/helper/helper.go", "package helper\nfunc w() { time.Sleep(time.Second) }\n")
	write("vendor/v/v_test.go", "package v\nfunc h() { time.Sleep(time.Second) }\n")
	found := sleepsIn(t, root)
	if len(found) != 2 || len(found["a/a_test.go"]) != 2 || len(found["test/helper/helper.go"]) != 1 {
		t.Fatalf("found %v, want the two of a/a_test.go and the test helper's", found)
	}
	if where := found["a/a_test.go"]["time.Sleep(time.Second) // settle"]; where != "a/a_test.go:3" {
		t.Errorf("the sleep is at %q", where)
	}
}

// sleepsIn returns the sleeps of the test files under root, and of every Go file under its
// test/ (the tests' helpers and the benchmarks): by file, the trimmed line and where it is
// (file:line, the first of identical lines).
func sleepsIn(t *testing.T, root string) map[string]map[string]string {
	t.Helper()
	found := map[string]map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "vendor" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(rel, "_test.go") && !strings.HasPrefix(rel, "test/") {
			return nil
		}
		if rel == "test/sleeps/sleeps_test.go" {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		scanner := bufio.NewScanner(f)
		scanner.Buffer(nil, 1<<20)
		for n := 1; scanner.Scan(); n++ {
			line := strings.TrimSpace(scanner.Text())
			if !sleep.MatchString(line) || strings.HasPrefix(line, "//") {
				continue
			}
			if found[rel] == nil {
				found[rel] = map[string]string{}
			}
			if _, seen := found[rel][line]; !seen {
				found[rel][line] = rel + ":" + strconv.Itoa(n)
			}
		}
		return scanner.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
