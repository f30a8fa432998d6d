package front

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHear(t *testing.T) {
	var a announcements
	for _, tc := range []struct {
		line     string
		deadline time.Duration
	}{
		{"limits 536870912 67108864", 0},
		{`work compile 60000000000 "Definitions/my service.yaml"`, time.Minute},
		{"work render 5 not-quoted", 0},
		{"nonsense", 0},
	} {
		if got := a.hear(tc.line); got != tc.deadline {
			t.Errorf("hear(%q) = %v, want %v", tc.line, got, tc.deadline)
		}
	}
	if a.memory != 512<<20 || a.stack != 64<<20 || a.op != "compile" || a.entry != "Definitions/my service.yaml" || a.charts {
		t.Errorf("heard %+v", a)
	}
	a.hear("charts")
	if !a.charts {
		t.Error("charts not heard")
	}
}

// The child's diagnostics are kept and written out; the Go runtime's report is kept apart.
func TestStderrOutputKeepsTheReportApart(t *testing.T) {
	o := newStderrOutput()
	for _, chunk := range []string{"warning: a\nerr", "or: b\n", "runtime: goroutine stack exceeds 1000-byte limit\nfatal error: stack overflow\n\ngoroutine 1 [running]:\n"} {
		o.Write([]byte(chunk))
	}
	var out bytes.Buffer
	o.writeTo(&out)
	if out.String() != "warning: a\nerror: b\n" || !o.crashed() || !strings.Contains(o.report.String(), "fatal error: stack overflow") {
		t.Errorf("diagnostics %q, crashed %v, report %q", out.String(), o.crashed(), o.report.String())
	}
}

// standIns writes shell scripts named calaf-offline and calaf-full into a directory, in
// place of the real binaries; an empty script is left out.
func standIns(t *testing.T, offline, full string) string {
	dir := t.TempDir()
	for name, script := range map[string]string{OfflineBinary: offline, FullBinary: full} {
		if script != "" {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func run(dir string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	f := &Front{Dir: dir, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}
	code = f.Run(args)
	return code, out.String(), errOut.String()
}

func TestDispatch(t *testing.T) {
	dir := standIns(t, `echo "offline $*"; echo "offline warns" >&2; exit 1`, `echo "full $*"; exit 3`)
	if code, out, errOut := run(dir, "validate", "pkg", "-o", "yaml"); code != 1 || out != "offline validate pkg -o yaml\n" || errOut != "offline warns\n" {
		t.Errorf("validate: %d %q %q", code, out, errOut)
	}
	if code, out, _ := run(dir, "deploy", "x", "pkg"); code != 3 || out != "full deploy x pkg\n" {
		t.Errorf("deploy: %d %q", code, out)
	}
	if code, out, _ := run(dir); code != 3 || out != "full \n" {
		t.Errorf("no arguments: %d %q", code, out)
	}
}

// A package that deploys a Helm chart runs again in calaf-full; what calaf-offline wrote
// is dropped.
func TestChartsRunAgainInFull(t *testing.T) {
	dir := standIns(t, `echo "warning: from offline" >&2; echo charts >&3; exit 1`, `echo "full $* $CALAF_FRONT_FD"`)
	code, out, errOut := run(dir, "render", "cnf")
	if code != 0 || out != "full render cnf 3\n" || errOut != "" {
		t.Errorf("render of a chart package: %d %q %q", code, out, errOut)
	}
}

// Without calaf-offline the package commands run in calaf-full (isolated the same way);
// without calaf-full calaf says what is missing.
func TestMissingBinaries(t *testing.T) {
	dir := standIns(t, "", `echo "full $* $CALAF_FRONT_FD"`)
	if code, out, _ := run(dir, "compile", "pkg"); code != 0 || out != "full compile pkg 3\n" {
		t.Errorf("without calaf-offline: %d %q", code, out)
	}
	dir = standIns(t, `echo offline`, "")
	code, _, errOut := run(dir, "status", "x")
	if code != exitFailed || !strings.Contains(errOut, "calaf-full is missing") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("without calaf-full: %d %q", code, errOut)
	}
	if code, out, _ := run(dir, "validate", "pkg"); code != 0 || out != "offline\n" {
		t.Errorf("validate without calaf-full: %d %q", code, out)
	}
}

// A piece of work that outlives the deadline the child announced is stopped, and said
// as the worker pool says it.
func TestDeadline(t *testing.T) {
	dir := standIns(t, `echo "limits 1048576 0" >&3; echo 'work compile 200000000 "Definitions/a b.yaml"' >&3; exec sleep 30`, "")
	start := time.Now()
	code, _, errOut := run(dir, "compile", "pkg")
	if code != exitFailed || errOut != "error: Definitions/a b.yaml: compile of the package did not finish within 200ms\n" {
		t.Errorf("a stuck compile: %d %q", code, errOut)
	}
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("the front waited %s for a child it should have stopped", elapsed)
	}
}

// A child killed by a signal ends in one diagnostic, not in silence.
func TestChildKilled(t *testing.T) {
	dir := standIns(t, `echo 'work render 60000000000 "service.yaml"' >&3; kill -KILL $$`, "")
	code, _, errOut := run(dir, "render", "pkg")
	if code != exitFailed || !strings.HasPrefix(errOut, "error: service.yaml: render of the package was killed (SIGKILL") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("a killed render: %d %q", code, errOut)
	}
}

// The isolated child gets no credential of the front's environment — no kubeconfig, no
// token, no cloud key — only the Go runtime's variables and a temporary directory of its
// own, which the front removes when the child ends (a confined child cannot).
func TestChildEnvironment(t *testing.T) {
	for name, value := range map[string]string{"KUBECONFIG": "/home/u/.kube/config", "CALAF_WEBHOOK_TOKEN": "t0ken",
		"AWS_SECRET_ACCESS_KEY": "k3y", "KUBERNETES_SERVICE_HOST": "10.96.0.1", "GOGC": "200"} {
		t.Setenv(name, value)
	}
	dir := standIns(t, `env | sort; touch "$TMPDIR/left"`, "")
	code, out, _ := run(dir, "render", "pkg")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var names []string
	tmp := ""
	for _, line := range lines {
		name, value, _ := strings.Cut(line, "=")
		switch name {
		case "TMPDIR":
			tmp = value
		case "PWD", "SHLVL", "_": // the shell's own
			continue
		}
		names = append(names, name)
	}
	allowed := append(childEnv(), "CALAF_FRONT_FD", "TMPDIR")
	for _, name := range names {
		if !slices.Contains(allowed, name) {
			t.Errorf("the child's environment has %s", name)
		}
	}
	if code != 0 || !slices.Contains(names, "GOGC") {
		t.Errorf("exit %d, the child's environment has %v, without GOGC", code, names)
	}
	if !strings.HasPrefix(tmp, filepath.Join(os.TempDir(), "calaf-offline-")) {
		t.Errorf("TMPDIR %q", tmp)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the child's temporary directory is still there: %v", err)
	}
}

// A child stopped by the kernel at the CPU time limit of its work says so, and the front
// words it as the worker pool does.
func TestChildAtItsCPULimit(t *testing.T) {
	dir := standIns(t, `echo 'work compile 60000000000 "service.yaml"' >&3; echo "calaf: CPU time limit: 1m0s" >&2; exit 3`, "")
	code, _, errOut := run(dir, "compile", "pkg")
	if code != exitFailed || errOut != "error: service.yaml: compile of the package used more than 1m0s of CPU time\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
