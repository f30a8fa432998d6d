package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// RunnerName is the file name of the runner binary, next to the operator's own.
const RunnerName = "calaf-runner"

// Runner is the calaf-runner binary the operator streams into containers.
type Runner struct {
	Path string
	Data []byte
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
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if len(data) < 4 || string(data[1:4]) != "ELF" {
		return nil, fmt.Errorf("runner %s is not a Linux executable", path)
	}
	sum := sha256.Sum256(data)
	return &Runner{Path: path, Data: data, Hash: hex.EncodeToString(sum[:8])}, nil
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
