package artifacts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadRunner(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "calaf-runner")
	if err := os.WriteFile(bin, []byte("\x7fELF rest of a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := LoadRunner(bin)
	if err != nil || len(r.Hash) != 16 || r.Path != bin {
		t.Fatalf("%+v, %v", r, err)
	}
	other, _ := os.Create(filepath.Join(dir, "script"))
	other.WriteString("#!/bin/sh\n")
	other.Close()
	if _, err := LoadRunner(other.Name()); err == nil || !strings.Contains(err.Error(), "not a Linux executable") {
		t.Errorf("a script: %v", err)
	}
	if _, err := LoadRunner(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing runner")
	}
}
