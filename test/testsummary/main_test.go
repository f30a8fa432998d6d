package main

import (
	"strings"
	"testing"
)

// A stream of go test -json: the tally counts tests and subtests apart, says why each
// skipped test skipped, prints the output of a failed test and the packages' lines, and
// passes a wrapper's own lines through.
func TestTally(t *testing.T) {
	stream := strings.Join([]string{
		`[ground 12:00:00] cluster up`,
		`{"Action":"start","Package":"calaf.io/a"}`,
		`{"Action":"run","Package":"calaf.io/a","Test":"TestOne"}`,
		`{"Action":"output","Package":"calaf.io/a","Test":"TestOne","Output":"=== RUN   TestOne\n"}`,
		`{"Action":"output","Package":"calaf.io/a","Test":"TestOne","Output":"    one_test.go:5: quiet detail\n"}`,
		`{"Action":"pass","Package":"calaf.io/a","Test":"TestOne"}`,
		`{"Action":"run","Package":"calaf.io/a","Test":"TestRaw"}`,
		`{"Action":"output","Package":"calaf.io/a","Test":"TestRaw","Output":"    raw_test.go:75: set CALAF_RAW_PUCCINI=1: runs raw Puccini\n"}`,
		`{"Action":"output","Package":"calaf.io/a","Test":"TestRaw","Output":"--- SKIP: TestRaw (0.00s)\n"}`,
		`{"Action":"skip","Package":"calaf.io/a","Test":"TestRaw"}`,
		`{"Action":"run","Package":"calaf.io/a","Test":"TestTable/case"}`,
		`{"Action":"pass","Package":"calaf.io/a","Test":"TestTable/case"}`,
		`{"Action":"pass","Package":"calaf.io/a","Test":"TestTable"}`,
		`{"Action":"output","Package":"calaf.io/a","Output":"PASS\n"}`,
		`{"Action":"output","Package":"calaf.io/a","Output":"ok  \tcalaf.io/a\t0.1s\n"}`,
		`{"Action":"pass","Package":"calaf.io/a"}`,
		`{"Action":"output","Package":"calaf.io/b","Test":"TestBad","Output":"    bad_test.go:9: want 1, got 2\n"}`,
		`{"Action":"fail","Package":"calaf.io/b","Test":"TestBad"}`,
		`{"Action":"output","Package":"calaf.io/b","Output":"FAIL\tcalaf.io/b\t0.2s\n"}`,
		`{"Action":"fail","Package":"calaf.io/b"}`,
		`{"Action":"build-output","ImportPath":"calaf.io/c","Output":"c.go:1:1: syntax error\n"}`,
		`{"Action":"fail","Package":"calaf.io/c"}`,
	}, "\n")
	var out strings.Builder
	tl, err := read(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	summary := tl.format("unit")
	for _, want := range []string{
		"unit: FAILED — 4 tests ran: 2 passed, 1 failed, 1 skipped (subtests: 1 passed, 0 failed, 0 skipped)\n",
		"  skipped calaf.io/a TestRaw: raw_test.go:75: set CALAF_RAW_PUCCINI=1: runs raw Puccini\n",
		"  package failed: calaf.io/c\n",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary lacks %q:\n%s", want, summary)
		}
	}
	if strings.Contains(summary, "package failed: calaf.io/b") {
		t.Errorf("a package whose test failed is counted as failed outside its tests:\n%s", summary)
	}
	for _, want := range []string{"[ground 12:00:00] cluster up\n", "ok  \tcalaf.io/a\t0.1s\n", "bad_test.go:9: want 1, got 2\n", "FAIL\tcalaf.io/b\t0.2s\n", "c.go:1:1: syntax error\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
	for _, unwanted := range []string{"quiet detail", "=== RUN", "PASS\n"} {
		if strings.Contains(out.String(), unwanted) {
			t.Errorf("the output has %q, which plain go test does not print:\n%s", unwanted, out.String())
		}
	}
}

// A green stage that skipped nothing says so; one that ran no test is not green.
func TestVerdict(t *testing.T) {
	green := &tally{passed: 3}
	if got := green.format("race"); got != "race: ok — 3 tests ran: 3 passed, 0 failed, 0 skipped (subtests: 0 passed, 0 failed, 0 skipped)\n" {
		t.Errorf("green: %q", got)
	}
	empty := &tally{}
	if empty.ok() || !strings.Contains(empty.format("e2e"), "e2e: FAILED — 0 tests ran") || !strings.Contains(empty.format("e2e"), "no test ran") {
		t.Errorf("a stage without tests: %q", empty.format("e2e"))
	}
}
