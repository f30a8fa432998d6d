package render

import (
	"archive/zip"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"calaf.io/calaf/tosca"
)

// zipDirectory packs a directory as a zip archive (a CSAR).
func zipDirectory(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(full string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, full)
		data, err := os.ReadFile(full)
		if err != nil {
			return err
		}
		f, err := w.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCompileCacheHitUsesCallersPackage: a compile cache hit for a package of the same
// digest must render from the caller's package, even after the package first compiled was
// closed (its extracted files removed), as happens when a package store evicts it.
func TestCompileCacheHitUsesCallersPackage(t *testing.T) {
	ctx := context.Background()
	archive := zipDirectory(t, "../examples/network-service")
	compiler, renderer := tosca.NewCompiler(4), NewRenderer(4)

	first, err := tosca.OpenArchive(archive, "first.csar", tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compiler.Compile(ctx, first, nil); err != nil {
		t.Fatal(err)
	}
	first.Close()

	second, err := tosca.OpenArchive(archive, "second.csar", tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if second.Digest != first.Digest {
		t.Fatalf("same archive, digests %s and %s", first.Digest, second.Digest)
	}
	compiled, err := compiler.Compile(ctx, second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if compiled.Package != second {
		t.Errorf("the cache hit carries the closed package %s", compiled.Package.Root)
	}
	// plmn-config reads Files/config/amf.conf from the package while rendering.
	if _, err := renderer.Render(ctx, compiled, Options{Service: "demo", Namespace: "demo"}); err != nil {
		t.Fatalf("render after the first package was closed: %v", err)
	}
}
