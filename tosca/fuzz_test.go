package tosca

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// fuzzLimits keep a fuzzed archive small, so that the fuzzer explores shapes, not sizes.
func fuzzLimits() Limits {
	return Limits{MaxTotalBytes: 1 << 20, MaxFileBytes: 256 << 10, MaxFiles: 64}
}

// seedZip is a small valid CSAR.
func seedZip(t testing.TB, names ...string) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, name := range names {
		f, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("tosca_definitions_version: tosca_simple_yaml_1_3\n"))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// seedTar is a small valid tar package.
func seedTar(t testing.TB, names ...string) []byte {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, name := range names {
		body := "tosca_definitions_version: tosca_simple_yaml_1_3\n"
		if err := w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzOpenArchive feeds the package loader arbitrary zip and tar bytes: it must return a
// package or an *InvalidError, never panic, write nothing outside its temporary directory,
// and hold no more files than the limit allows.
func FuzzOpenArchive(f *testing.F) {
	f.Add(seedZip(f, "TOSCA-Metadata/TOSCA.meta", "Definitions/service.yaml"))
	f.Add(seedZip(f, "service.yaml", "dir/", "dir/", "../x"))
	f.Add(append(seedZip(f, "a.yaml"), seedZip(f, "b.yaml")...))
	f.Add(seedTar(f, "./service.yaml", "./types/t.yaml"))
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, data []byte) {
		tmp := t.TempDir() // each input its own: what one leaves behind is not blamed on the next
		t.Setenv("TMPDIR", tmp)
		pkg, err := OpenArchive(data, "fuzz.csar", fuzzLimits())
		if err != nil {
			if !IsInvalid(err) {
				t.Fatalf("not an *InvalidError: %v", err)
			}
			if strings.Contains(err.Error(), tmp) {
				t.Fatalf("the diagnostic names the temporary directory: %v", err)
			}
		} else {
			if len(pkg.Files) > fuzzLimits().MaxFiles {
				t.Fatalf("%d files, more than the limit", len(pkg.Files))
			}
			pkg.Close()
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Fatalf("left %s behind, holding %v (input %q)", filepath.Join(tmp, left[0].Name()), leftovers(filepath.Join(tmp, left[0].Name())), data)
		}
	})
}

// FuzzParseMeta feeds the TOSCA.meta parsers arbitrary text: they must not panic, and what
// parseMeta accepts has no key twice.
func FuzzParseMeta(f *testing.F) {
	f.Add([]byte(metaSeed))
	f.Add([]byte(metaSeed + "Entry-Definitions: other.yaml\n"))
	f.Add([]byte(metaSeed + "\nName: Files/a.sh\nContent-Type: text/plain\nAlgorithm: SHA-256\nHash: 00\n\nName: Files/b.sh\nAlgorithm: SHA-256\n"))
	f.Add([]byte("\xef\xbb\xbfentry_definitions: a.yaml\nEntry-Definitions: b.yaml\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		meta, err := parseMeta(data)
		if err == nil {
			for key := range meta {
				if strings.TrimSpace(key) != key || key == "" {
					t.Fatalf("key %q not trimmed", key)
				}
			}
		}
		_, _ = ParseMetaEntries(data)
	})
}

const metaSeed = "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: test\nEntry-Definitions: Definitions/service.yaml\n"

// FuzzParseManifest feeds the SOL004 manifest parser arbitrary text: it must return a
// manifest or an error, never panic.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte("metadata:\n  vnf_product_name: x\n\nSource: service.yaml\nAlgorithm: SHA-256\nHash: 00\n"))
	f.Add([]byte("Source: a\nSource: b\n-----BEGIN CMS-----\nxx\n-----END CMS-----\n"))
	f.Add([]byte("non_mano_artifact_sets:\n  x:\n    Source: a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		manifest, err := ParseManifest("fuzz.mf", data)
		if err == nil && manifest == nil {
			t.Fatal("no manifest and no error")
		}
	})
}

// FuzzInputsAsData feeds input values (YAML, as -i and --inputs give them) through the
// conversion Puccini gets: no map of one entry is left for Puccini to read as a function
// call, and converting never panics.
func FuzzInputsAsData(f *testing.F) {
	for _, seed := range []string{"{get_input: x}", "[{concat: [a, b]}, 1, {a: {b: {c: d}}}]", "3", "\"text\"", "{a: 1, b: {token: [x, y, 0]}}", "{}"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var value any
		if yaml.Unmarshal([]byte(text), &value) != nil {
			return
		}
		converted := toARDInputs(map[string]any{"x": normalizeForFuzz(value)})["x"]
		if path := singleEntryMap(converted, "x"); path != "" {
			t.Fatalf("a map of one entry left at %s: Puccini would read it as a function call", path)
		}
	})
}

// normalizeForFuzz makes decoded YAML look like parsed inputs: string keys.
func normalizeForFuzz(value any) any {
	switch v := value.(type) {
	case map[string]any:
		for key, item := range v {
			v[key] = normalizeForFuzz(item)
		}
	case []any:
		for i, item := range v {
			v[i] = normalizeForFuzz(item)
		}
	}
	return value
}

// singleEntryMap returns the path of a map of one entry in value, "" when there is none.
func singleEntryMap(value any, at string) string {
	switch v := value.(type) {
	case map[any]any:
		if len(v) == 1 {
			return at
		}
		for key, item := range v {
			if path := singleEntryMap(item, fmt.Sprint(at, ".", key)); path != "" {
				return path
			}
		}
	case []any:
		for _, item := range v {
			if path := singleEntryMap(item, at+"[]"); path != "" {
				return path
			}
		}
	}
	return ""
}

// leftovers lists up to 10 paths under dir, for a diagnostic of what an archive left
// behind.
func leftovers(dir string) []string {
	var paths []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && path != dir && len(paths) < 10 {
			rel, _ := filepath.Rel(dir, path)
			paths = append(paths, rel)
		}
		return nil
	})
	return paths
}
