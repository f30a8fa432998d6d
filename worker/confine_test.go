package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"calaf.io/calaf/tosca"
	"calaf.io/calaf/worker/crash"
)

// confineCheckEnv makes this test binary confine itself as a worker and try what code that
// escaped the sandbox would (confineCheck), instead of running tests.
const confineCheckEnv = "CALAF_TEST_CONFINE_CHECK"

// confineCase is what the confined test binary is given and what it found.
type confineCase struct {
	Confinement Confinement
	// Package is the package it is handed; Own, Other and Token files it tries to read;
	// Listener a TCP address it tries to connect to.
	Package, Own, Other, Token, Listener string
}

// confineCheck confines this process as a worker handed c.Package and prints, as JSON,
// what it confined itself with and why each attempt failed ("" when it succeeded).
func confineCheck(c confineCase) int {
	confined, err := Confine(c.Confinement)
	if err == nil && confined.Landlock > 0 {
		err = restrictReads(confined.Landlock, []string{c.Package})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	results := map[string]string{
		"read its package":       attempt(func() error { _, err := os.ReadFile(c.Own); return err }),
		"read another package":   attempt(func() error { _, err := os.ReadFile(c.Other); return err }),
		"read the token":         attempt(func() error { _, err := os.ReadFile(c.Token); return err }),
		"list /":                 attempt(func() error { _, err := os.ReadDir("/"); return err }),
		"write in its package":   attempt(func() error { return os.WriteFile(filepath.Join(c.Package, "new"), nil, 0o644) }),
		"write in TMPDIR":        attempt(func() error { return os.WriteFile(filepath.Join(os.TempDir(), "calaf-escape"), nil, 0o644) }),
		"execute /bin/sh":        attempt(func() error { return exec.Command("/bin/sh", "-c", "true").Run() }),
		"connect by TCP":         attempt(func() error { conn, err := net.Dial("tcp", c.Listener); closeIf(conn); return err }),
		"signal its parent":      attempt(func() error { return syscall.Kill(os.Getppid(), 0) }),
		"no_new_privs unset yet": attempt(noNewPrivs),
	}
	out, _ := json.Marshal(map[string]any{"confined": confined, "results": results})
	fmt.Println(string(out))
	return 0
}

func attempt(try func() error) string {
	if err := try(); err != nil {
		return err.Error()
	}
	return ""
}

func closeIf(conn net.Conn) {
	if conn != nil {
		conn.Close()
	}
}

// noNewPrivs fails when no_new_privs is set.
func noNewPrivs() error {
	set, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err == nil && set == 1 {
		return errors.New("no_new_privs is set")
	}
	return err
}

// runConfined runs this test binary confined as c says and returns what it found.
func runConfined(t *testing.T, c confineCase) (Confined, map[string]string) {
	t.Helper()
	data, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), confineCheckEnv+"="+string(data))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the confined process: %v\n%s", err, out)
	}
	var found struct {
		Confined Confined
		Results  map[string]string
	}
	if err := json.Unmarshal(out, &found); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return found.Confined, found.Results
}

// confineFixture lays out a package store of two packages, a token outside it and a
// listening TCP port, as a worker in the operator's container would find them.
func confineFixture(t *testing.T) confineCase {
	t.Helper()
	store, secrets := t.TempDir(), t.TempDir()
	for _, name := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(store, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(store, name, "service.yaml"), []byte("tosca_definitions_version: tosca_2_0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	token := filepath.Join(secrets, "token")
	if err := os.WriteFile(token, []byte("eyJhbGciOi.secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	return confineCase{Confinement: Confinement{Read: []string{store}}, Package: filepath.Join(store, "a"),
		Own: filepath.Join(store, "a", "service.yaml"), Other: filepath.Join(store, "b", "service.yaml"), Token: token, Listener: listener.Addr().String()}
}

// TestConfinement confines a process as a worker handed one package of a store: it reads
// that package and nothing else — not another package, not a token beside the store, not
// the root directory — writes nothing, executes nothing, connects nowhere, signals no
// process outside, and has no_new_privs.
func TestConfinement(t *testing.T) {
	c := confineFixture(t)
	confined, results := runConfined(t, c)
	if confined.Landlock < 6 || !confined.NoNewPrivs {
		t.Fatalf("confined with %+v, want Landlock ABI 6 or later (this kernel's) and no_new_privs", confined)
	}
	want := map[string]string{
		"read its package":       "",
		"read another package":   "permission denied",
		"read the token":         "permission denied",
		"list /":                 "permission denied",
		"write in its package":   "permission denied",
		"write in TMPDIR":        "permission denied",
		"execute /bin/sh":        "permission denied",
		"connect by TCP":         "permission denied",
		"signal its parent":      "operation not permitted",
		"no_new_privs unset yet": "no_new_privs is set",
	}
	for what, why := range want {
		if got := results[what]; why == "" && got != "" || why != "" && !strings.Contains(got, why) {
			t.Errorf("%s: got %q, want %q", what, got, why)
		}
	}
}

// TestConfinementAbsent simulates a kernel without Landlock: the process says why it is
// not confined, keeps no_new_privs, and can read the token (which is why a pool that
// requires confinement refuses such workers: TestRequiredConfinement).
func TestConfinementAbsent(t *testing.T) {
	c := confineFixture(t)
	c.Confinement.MaxABI = -1
	confined, results := runConfined(t, c)
	if confined.Landlock != 0 || !confined.NoNewPrivs || confined.Unconfined != "Landlock disabled (simulated)" {
		t.Errorf("confined with %+v, want no Landlock, no_new_privs and why", confined)
	}
	if results["read the token"] != "" || results["no_new_privs unset yet"] != "no_new_privs is set" {
		t.Errorf("results %v", results)
	}
}

// TestRequiredConfinement refuses workers that cannot confine themselves when the pool
// requires it, and runs them, saying so, when it does not.
func TestRequiredConfinement(t *testing.T) {
	ctx := context.Background()
	var started []Confined
	required := newPool(t, func(o *Options) {
		o.Confinement = Confinement{Required: true, MaxABI: -1}
		o.OnStart = func(c Confined) { started = append(started, c) }
	})
	err := required.Warm(ctx)
	if err == nil || err.Error() != "workers must be confined, and cannot be: Landlock disabled (simulated)" {
		t.Errorf("required: got %v", err)
	}
	degraded := newPool(t, func(o *Options) { o.Confinement = Confinement{MaxABI: -1} })
	if _, err := compileAndRender(ctx, degraded, openExample(t, "hello-world")); err != nil {
		t.Errorf("best effort: %v", err)
	}
	if len(started) != 1 || started[0].String() != "not confined by Landlock (Landlock disabled (simulated))" {
		t.Errorf("started %v", started)
	}
}

// TestWorkersReadTheirPackageAlone runs the operator's pool on a package store: a worker
// compiles and renders its package, cannot open another package's file nor a token beside
// the store, and another package gets another worker.
func TestWorkersReadTheirPackageAlone(t *testing.T) {
	ctx := context.Background()
	store := t.TempDir()
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	var pkgs []*tosca.Package
	for _, name := range []string{"hello-world", "network-service"} {
		if err := os.CopyFS(filepath.Join(store, name), os.DirFS(filepath.Join("..", "examples", name))); err != nil {
			t.Fatal(err)
		}
		pkg, err := tosca.Open(filepath.Join(store, name), tosca.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, pkg)
	}
	started := 0
	pool := newPool(t, func(o *Options) {
		o.Size = 1
		o.Confinement.Read = []string{store}
		o.OnStart = func(Confined) { started++ }
	})
	if _, err := compileAndRender(ctx, pool, pkgs[0]); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(pkgs[0].Root, pkgs[0].Entry): "",
		filepath.Join(pkgs[1].Root, pkgs[1].Entry): "permission denied",
		token: "permission denied",
	} {
		confined, why, err := pool.probe(ctx, pkgs[0].Root, path)
		if err != nil || confined.Landlock == 0 || want == "" && why != "" || !strings.Contains(why, want) {
			t.Errorf("%s: %v, %q, %v; want %q", path, confined, why, err, want)
		}
	}
	if _, err := compileAndRender(ctx, pool, pkgs[1]); err != nil {
		t.Fatal(err)
	}
	if started != 2 { // the first package's, which served the probes too, and the second's
		t.Errorf("%d workers started, want 2", started)
	}
	if _, why, _ := pool.Probe(ctx, token); !strings.Contains(why, "permission denied") {
		t.Errorf("a worker of no package read the token: %q", why)
	}
}

// TestCPULimitIsTheKernels checks that a worker's CPU time is limited by the kernel
// (RLIMIT_CPU): the hard limit its life's, the soft one its request's.
func TestCPULimitIsTheKernels(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, func(o *Options) {
		o.Size = 1
		o.Limits.CPU = time.Hour
	})
	if _, err := compileAndRender(ctx, pool, openExample(t, "hello-world")); err != nil {
		t.Fatal(err)
	}
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pool.idle[0].hello.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var soft, hard string
	for _, line := range strings.Split(string(limits), "\n") {
		if fields := strings.Fields(line); len(fields) >= 5 && strings.HasPrefix(line, "Max cpu time") {
			soft, hard = fields[3], fields[4]
		}
	}
	if hard != "3600" || soft == "unlimited" || soft == hard {
		t.Errorf("Max cpu time: soft %q, hard %q; want a request's and 3600", soft, hard)
	}
}

// cpuSpinEnv makes this test binary limit its CPU time as a worker does and spin: with
// "budget", past a piece of work's budget; with "life", past its life, ignoring the
// kernel's SIGXCPU as code that escaped the sandbox could.
const cpuSpinEnv = "CALAF_TEST_CPU_SPIN"

func cpuSpin(mode string) int {
	life := time.Second
	if mode == "budget" {
		life = time.Minute
	}
	limit, err := LimitCPU(life, os.Stderr)
	if err == nil && mode == "budget" {
		err = limit.Work(time.Second / 2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if mode == "life" {
		signal.Ignore(syscall.SIGXCPU)
	}
	for x := 0; ; x++ {
		if x < 0 {
			return x
		}
	}
}

// TestCPULimitStopsSpinning spins past a piece of work's CPU budget: the kernel's signal
// ends the process, which says why in the words of the pool; and past the CPU time of its
// life, the signal ignored: the kernel kills it. Nothing watches it but the kernel.
func TestCPULimitStopsSpinning(t *testing.T) {
	for mode, want := range map[string]string{
		"budget": "used more than 500ms of CPU time",
		"life":   "was killed (SIGKILL; by the kernel's OOM killer when memory runs out)",
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), cpuSpinEnv+"="+mode)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		_ = cmd.Run()
		if got := crash.Diagnose(cmd.ProcessState, stderr.String(), 0, 0); got.Text != want {
			t.Errorf("%s: %s (%s), want %q", mode, got.Text, cmd.ProcessState, want)
		}
	}
}

// TestWorkerEnvironment starts a worker from a process that holds credentials in its
// environment: the worker gets none of them.
func TestWorkerEnvironment(t *testing.T) {
	t.Setenv("KUBECONFIG", "/home/u/.kube/config")
	t.Setenv("CALAF_WEBHOOK_TOKEN", "t0ken")
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	pool := newPool(t, func(o *Options) { o.Size = 1 })
	if err := pool.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pool.idle[0].hello.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, variable := range strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00") {
		name, _, _ := strings.Cut(variable, "=")
		names = append(names, name)
	}
	if strings.Join(names, " ") != "TMPDIR GOTRACEBACK" {
		t.Errorf("a worker's environment: %v", names)
	}
}

// TestWorkersReadTheirImports: a package that imports a profile by reference is compiled
// and rendered by a worker that reads the package and that profile's files — fetched and
// verified by the pool's process, cached beside the store — and no other profile's.
func TestWorkersReadTheirImports(t *testing.T) {
	ctx := context.Background()
	store := t.TempDir()
	for _, dir := range []string{"acme", "other"} {
		if err := os.CopyFS(filepath.Join(store, "profiles", dir), os.DirFS(filepath.Join("..", "examples", "vendor-profile", "Profiles", "acme", "1.0"))); err != nil {
			t.Fatal(err)
		}
	}
	const url = "oci://registry.example/acme/profile:1.0"
	if err := os.CopyFS(filepath.Join(store, "package"), os.DirFS(filepath.Join("..", "examples", "vendor-profile"))); err != nil {
		t.Fatal(err)
	}
	template := filepath.Join(store, "package", "Definitions", "service.yaml")
	data, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(template, []byte(strings.Replace(string(data), "- ../Profiles/acme/1.0/profile.yaml", "- "+url, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(store, "package", "Profiles")); err != nil {
		t.Fatal(err)
	}
	pkg, err := tosca.Open(filepath.Join(store, "package"), tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	profile, err := tosca.OpenEntry(filepath.Join(store, "profiles", "acme"), "profile.yaml", tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	pkg = pkg.WithImports([]tosca.Import{{URL: url, Digest: "sha256:" + strings.Repeat("0", 64), Profile: profile.Describe()}})
	pool := newPool(t, func(o *Options) {
		o.Size = 1
		o.Confinement.Read = []string{store}
	})
	result, err := compileAndRender(ctx, pool, pkg)
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Objects) != 6 || result.Nodes[0].Renderer != "acme.render.cache" && result.Nodes[1].Renderer != "acme.render.cache" {
		t.Errorf("rendered %d objects with %+v", len(result.Objects), result.Nodes)
	}
	for path, want := range map[string]string{
		filepath.Join(profile.Root, "js", "cache.js"):               "",
		filepath.Join(store, "profiles", "other", "js", "cache.js"): "permission denied",
	} {
		confined, why, err := pool.probe(ctx, pkg.Root, path)
		if err != nil || confined.Landlock == 0 || want == "" && why != "" || !strings.Contains(why, want) {
			t.Errorf("%s: %v, %q, %v; want %q", path, confined, why, err, want)
		}
	}
}
