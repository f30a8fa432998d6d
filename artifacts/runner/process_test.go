package runner

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"calaf.io/calaf/artifacts/protocol"
)

// The runner as the operator uses it: a static binary that reads one framed request on
// stdin and writes one framed result on stdout.
func TestRunnerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the runner")
	}
	bin := filepath.Join(t.TempDir(), "calaf-runner")
	build := exec.Command("go", "build", "-o", bin, "calaf.io/calaf/cmd/calaf-runner")
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}

	var stdin, stdout, stderr bytes.Buffer
	req := jsRequest(`calaf.setAttribute('pod', calaf.pod.name); calaf.log('hi');`)
	if err := protocol.WriteRequest(&stdin, req); err != nil {
		t.Fatal(err)
	}
	stdin.WriteString("trailing bytes the runner must not wait for")
	cmd := exec.Command(bin)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &stdin, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("runner: %v\n%s", err, stderr.String())
	}
	res, err := protocol.ReadResult(stdout.Bytes())
	if err != nil {
		t.Fatalf("%v in %q", err, stdout.String())
	}
	if res.Failed() || res.Attributes["pod"] != "core-smf-abc" || len(res.Logs) != 1 {
		t.Errorf("result: %+v", res)
	}

	stdout.Reset()
	cmd = exec.Command(bin)
	cmd.Stdin, cmd.Stdout = strings.NewReader("{}"), &stdout
	err = cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 2 {
		t.Errorf("a bad request: %v", err)
	}
	if res, err := protocol.ReadResult(stdout.Bytes()); err != nil || res.ErrorKind != protocol.ErrorInvalid {
		t.Errorf("a bad request: %+v, %v", res, err)
	}

	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "calaf-runner ") {
		t.Errorf("--version: %q, %v", out, err)
	}
}
