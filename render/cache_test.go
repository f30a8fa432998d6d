package render

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
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

// TestRenderOwnedMatchesCopy renders packages both ways: on a copy of the compiled Clout
// (RenderUncached) and on a Clout given away (RenderOwned, what a worker does with a Clout
// it has just bound). Both give the same result, attributes read included, and the owned
// render runs the renderers the package compiled with.
func TestRenderOwnedMatchesCopy(t *testing.T) {
	attributeInProperty := t.TempDir()
	if err := os.WriteFile(filepath.Join(attributeInProperty, "service.yaml"), []byte(`tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
    web:
      type: calaf.nodes.Deployment
      properties: { image: busybox:1.36 }
    config:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          replicas: { get_attribute: [ web, replicas ] }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"../examples/hello-world", "../examples/network-service", "../examples/vendor-profile", attributeInProperty} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			compiled := compileForResolve(t, dir, "")
			opts := Options{Service: "s", Namespace: "n"}
			renderer := NewRenderer(1)
			want, err := renderer.RenderUncached(context.Background(), compiled, opts)
			if err != nil {
				t.Fatal(err)
			}
			clout, err := compiled.Clout.Copy()
			if err != nil {
				t.Fatal(err)
			}
			owned := *compiled
			owned.Clout = clout
			got, err := renderer.RenderOwned(context.Background(), &owned, opts)
			if err != nil {
				t.Fatal(err)
			}
			wantJSON, _ := json.Marshal(want)
			gotJSON, _ := json.Marshal(got)
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("owned render differs:\n%s\nwant\n%s", gotJSON, wantJSON)
			}
			if dir == attributeInProperty && !want.ReadsAttributes {
				t.Errorf("a property reads an attribute, but the render says it reads none")
			}
		})
	}
}
