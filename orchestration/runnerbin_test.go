package orchestration

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadRunner(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "calaf-runner")
	content := []byte("\x7fELF rest of a binary")
	if err := os.WriteFile(bin, content, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := LoadRunner(bin)
	sum := sha256.Sum256(content)
	if err != nil || r.Hash != hex.EncodeToString(sum[:8]) || r.Path != bin || r.Size != int64(len(content)) {
		t.Fatalf("%+v, %v", r, err)
	}
	f, err := r.Open()
	if err != nil {
		t.Fatal(err)
	}
	streamed, _ := io.ReadAll(f)
	f.Close()
	if string(streamed) != string(content) {
		t.Errorf("Open streamed %q", streamed)
	}
	if err := os.WriteFile(bin, append(content, "longer"...), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Errorf("a replaced runner: %v", err)
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
