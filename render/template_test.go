package render

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"calaf.io/calaf/tosca"
)

// compileTemplate compiles a one-file package whose service.yaml is template.
func compileTemplate(t *testing.T, template string) *tosca.Compiled {
	t.Helper()
	return compilePackage(t, map[string]string{"service.yaml": template})
}

// compilePackage compiles a package of files (path → content) whose entry is service.yaml.
func compilePackage(t *testing.T, files map[string]string) *tosca.Compiled {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := tosca.NewCompiler(1).Compile(context.Background(), pkg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return compiled
}

// renderTemplate compiles a one-file package and renders it for Service "s" in namespace
// "n" with opts.
func renderTemplate(t *testing.T, template string, opts Options) (*Result, error) {
	t.Helper()
	opts.Service, opts.Namespace = "s", "n"
	return NewRenderer(4).Render(context.Background(), compileTemplate(t, template), opts)
}
