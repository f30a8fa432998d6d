package front_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"calaf.io/calaf/internal/front"
	"calaf.io/calaf/test/hostile"
)

// binaries builds calaf, calaf-full and calaf-offline into one directory, as make build
// does, and returns it.
func binaries(t *testing.T) string {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"-o", filepath.Join(dir, "calaf"), "../../cmd/calaf"},
		{"-o", filepath.Join(dir, front.FullBinary), "../../cmd/calaf-full"},
		{"-tags", "calaf_offline", "-o", filepath.Join(dir, front.OfflineBinary), "../../cmd/calaf-full"},
	} {
		cmd := exec.Command("go", append([]string{"build", "-trimpath"}, args...)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func calaf(t *testing.T, binary string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), out.String(), errOut.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errOut.String()
}

func writePackage(t *testing.T, template string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Through the front, the offline commands answer as calaf-full with its worker does: the
// same output, the same diagnostics for packages that crash or exhaust memory, and Helm
// charts rendered (by calaf-full, which links Helm).
func TestFrontAnswersAsCalafFull(t *testing.T) {
	dir := binaries(t)
	calafBin, full := filepath.Join(dir, "calaf"), filepath.Join(dir, front.FullBinary)
	// A Clout's vertex IDs are random, its timestamp the time, and its maps unordered.
	normalize := func(out string) string {
		out = regexp.MustCompile(`timestamp: .*|_[0-9A-Za-z]{27}\b`).ReplaceAllString(out, "")
		lines := strings.Split(out, "\n")
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	for _, args := range [][]string{
		{"compile", "../../examples/hello-world"},
		{"validate", "../../examples/network-service"},
		{"render", "../../test/etsi/cnf-helm", "--instantiate", "../../test/etsi/cnf-helm.simple.json"},
		{"validate", writePackage(t, hostile.DerivationCycle)},
		{"render", writePackage(t, hostile.MemoryBomb), "--script-timeout", "60s", "--worker-memory", "256Mi"},
	} {
		code, out, errOut := calaf(t, calafBin, args...)
		wantCode, wantOut, wantErr := calaf(t, full, args...)
		out, wantOut = normalize(out), normalize(wantOut)
		if code != wantCode || out != wantOut || errOut != wantErr {
			t.Errorf("calaf %v: exit %d, stderr %q, %d bytes of output; calaf-full: exit %d, stderr %q, %d bytes", args[0], code, errOut, len(out), wantCode, wantErr, len(wantOut))
		}
	}
}

// The diagnostics of the packages above, as calaf-full words them and the front must too.
func TestFrontCrashDiagnostics(t *testing.T) {
	dir := binaries(t)
	for _, tc := range []struct {
		template string
		args     []string
		want     string
	}{
		{hostile.DerivationCycle, nil, "error: service.yaml: compile of the package crashed: stack overflow in github.com/tliron/puccini/tosca/grammars/tosca_v2_0.(*DataType).GetInternalTypeName (a goroutine stack above 64 MiB: a cycle in the package's types or data?)\n"},
		{hostile.MemoryBomb, []string{"--script-timeout", "60s", "--worker-memory", "256Mi"}, "error: service.yaml: render of the package exceeded 256 MiB of memory\n"},
	} {
		code, _, errOut := calaf(t, filepath.Join(dir, "calaf"), append([]string{"validate", writePackage(t, tc.template)}, tc.args...)...)
		if code != 1 || errOut != tc.want {
			t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, tc.want)
		}
		if strings.Contains(errOut, "[running]") || strings.Count(errOut, "\n") != 1 {
			t.Error("the Go runtime's report reached the user")
		}
	}
}
