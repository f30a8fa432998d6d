package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"calaf.io/calaf/tosca"
)

// Every Service's package revision has its own archive and digest, and raw Puccini
// compiles each with its Service's inputs.
func TestPackages(t *testing.T) {
	dir := t.TempDir()
	archives, err := writePackages(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]bool{}
	for i := range archives {
		pkg, err := tosca.Open(filepath.Join(dir, serviceName(i)), tosca.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		digests[pkg.Digest] = true
		pkg.Close()
	}
	if len(digests) != 3 || bytes.Equal(archives[0], archives[1]) || bytes.Equal(archives[1], archives[2]) {
		t.Errorf("%d digests of 3 packages", len(digests))
	}
	var out bytes.Buffer
	if err := rawLoop(context.Background(), &out, dir, 3); err != nil {
		t.Fatal(err)
	}
	var raw rawResult
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil || raw.Seconds <= 0 || raw.PeakRSS <= 0 {
		t.Errorf("raw loop: %q, %v", out.String(), err)
	}
}

func TestVariant(t *testing.T) {
	template := []byte("metadata:\n  template_version: '1.0'\n")
	got, err := variant(template, 42)
	if err != nil || string(got) != "metadata:\n  template_version: '1.42'\n" {
		t.Errorf("variant: %q, %v", got, err)
	}
	if _, err := variant([]byte("metadata: {}\n"), 1); err == nil {
		t.Error("a template without its version varies")
	}
}
