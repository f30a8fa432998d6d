package orchestration

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// RunnerName is the file name of the runner binary, next to the operator's own.
const RunnerName = "calaf-runner"

// Runner is the calaf-runner binary the operator streams into containers. It is read
// from Path for each transfer, so the operator does not keep megabytes of it in memory.
type Runner struct {
	Path string
	Size int64
	// Hash identifies the binary (the first 16 hex digits of its SHA-256); it names the
	// file in the container, so a new runner is installed beside an old one.
	Hash string
}

// LoadRunner reads the runner binary: path if given, else calaf-runner next to the
// running executable, else on $PATH.
func LoadRunner(path string) (*Runner, error) {
	if path == "" {
		path = findRunner()
		if path == "" {
			return nil, errors.New("no " + RunnerName + " binary next to the operator or on $PATH (give --runner)")
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic[1:4]) != "ELF" {
		return nil, fmt.Errorf("runner %s is not a Linux executable", path)
	}
	sum := sha256.New()
	sum.Write(magic)
	rest, err := io.Copy(sum, f)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	return &Runner{Path: path, Size: rest + int64(len(magic)), Hash: hex.EncodeToString(sum.Sum(nil)[:8])}, nil
}

// Open opens the binary for one transfer; it fails if the file changed size since it
// was loaded (a runner replaced under a running operator needs a restart).
func (r *Runner) Open() (*os.File, error) {
	f, err := os.Open(r.Path)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if info, err := f.Stat(); err != nil || info.Size() != r.Size {
		f.Close()
		return nil, fmt.Errorf("runner %s changed since the operator loaded it; restart the operator", r.Path)
	}
	return f, nil
}

func findRunner() string {
	if self, err := os.Executable(); err == nil {
		candidate := filepath.Join(filepath.Dir(self), RunnerName)
		if _, err := os.Stat(candidate); err == nil {
			return candidate
		}
	}
	if found, err := exec.LookPath(RunnerName); err == nil {
		return found
	}
	return ""
}
