package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RepoRoot returns the root of the Calaf repository (for building and for its files).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// BuildCalaf builds calaf-full, named calaf, into dir and returns its path; calaf-runner (which
// the operator streams into pods to run operations) is built next to it, where the
// operator finds it.
func BuildCalaf(dir string) (string, error) {
	path := filepath.Join(dir, "calaf")
	for _, args := range [][]string{
		{"-o", path, "./cmd/calaf-full"}, // the whole of Calaf, under the name calaf
		{"-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, "calaf-runner"), "./cmd/calaf-runner"},
	} {
		cmd := exec.Command("go", append([]string{"build"}, args...)...)
		cmd.Dir = RepoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s: %v\n%s", args[len(args)-1], err, out)
		}
	}
	return path, nil
}

// InstallCRDs applies Calaf's CRDs (deploy/crd) with server-side apply and waits until they
// are served.
func InstallCRDs(ctx context.Context, c client.Client) error {
	files, err := filepath.Glob(filepath.Join(RepoRoot(), "deploy", "crd", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in deploy/crd: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&obj.Object); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if obj.GetKind() != "CustomResourceDefinition" {
			continue // kustomization.yaml
		}
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("calaf-e2e"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s: %w", file, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("calaf.io/v1alpha1")
		list.SetKind("ServiceList")
		if err := c.List(ctx, list); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the Calaf CRDs are not served: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Operator is a `calaf operator` process run by a test.
type Operator struct {
	Binary  string
	LogPath string
	Args    []string
	cmd     *exec.Cmd
	log     *os.File
	// exited is closed when the process ended.
	exited chan struct{}
}

// Start runs the operator; its output is appended to LogPath.
func (o *Operator) Start() error {
	log, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "\n===== operator started %s =====\n", time.Now().Format(time.RFC3339Nano))
	args := append([]string{"operator", "--metrics-bind-address=0", "--health-probe-bind-address=0"}, o.Args...)
	cmd := exec.Command(o.Binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = operatorProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	o.cmd, o.log, o.exited = cmd, log, make(chan struct{})
	go func(exited chan struct{}) { _ = cmd.Wait(); close(exited) }(o.exited)
	return nil
}

// Running tells whether the process started last still runs (it never exited, by crash
// or by itself).
func (o *Operator) Running() bool {
	if o.cmd == nil {
		return false
	}
	select {
	case <-o.exited:
		return false
	default:
		return true
	}
}

// Kill ends the operator with SIGKILL, as a crash would, and reaps it.
func (o *Operator) Kill() {
	o.signal(syscall.SIGKILL)
}

// Stop ends the operator with SIGTERM and waits for it.
func (o *Operator) Stop() {
	o.signal(syscall.SIGTERM)
}

func (o *Operator) signal(sig syscall.Signal) {
	if o.cmd == nil || o.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-o.cmd.Process.Pid, sig)
	select {
	case <-o.exited:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
		<-o.exited
	}
	o.log.Close()
	o.cmd = nil
}

// Tail returns the last lines of the operator's log.
func (o *Operator) Tail(lines int) string {
	data, _ := os.ReadFile(o.LogPath)
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// Calaf runs the calaf CLI with args against the cluster of kubeconfig and returns its
// combined output and exit code.
func Calaf(ctx context.Context, binary, kubeconfig string, args ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Dir = RepoRoot()
	out, err := cmd.CombinedOutput()
	if exitErr, ok := err.(*exec.ExitError); ok {
		return string(out), exitErr.ExitCode(), nil
	}
	if err != nil {
		return string(out), -1, err
	}
	return string(out), 0, nil
}

// KubeconfigPath returns the kubeconfig file the tests use.
func KubeconfigPath() string {
	for _, env := range KubeconfigEnv {
		if path := os.Getenv(env); path != "" {
			return path
		}
	}
	return ""
}

// Pid returns the operator's process ID (0 when not running).
func (o *Operator) Pid() int {
	if o.cmd == nil || o.cmd.Process == nil {
		return 0
	}
	return o.cmd.Process.Pid
}
