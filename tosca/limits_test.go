package tosca

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cloutpkg "github.com/tliron/puccini/clout"
)

// writePackage writes files (path → content) into a new directory and opens it.
func writePackage(t *testing.T, files map[string]string) *Package {
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
	pkg, err := Open(dir, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pkg.Close() })
	return pkg
}

const template = "tosca_definitions_version: tosca_simple_yaml_1_3\n"

// TestSizeLimitsBeforeCompile gives a Compiler whose compiles are counted packages beyond
// each template limit: each is refused with the limit named, and no compile starts; a
// package within the limits is compiled.
func TestSizeLimitsBeforeCompile(t *testing.T) {
	nodes := func(n int) string {
		var b strings.Builder
		b.WriteString(template + "topology_template:\n  node_templates:\n")
		for i := range n {
			fmt.Fprintf(&b, "    n%d:\n      type: tosca.nodes.Root\n", i)
		}
		return b.String()
	}
	imports := func(n int) map[string]string {
		files := map[string]string{}
		var b strings.Builder
		b.WriteString(template + "imports:\n")
		for i := range n {
			name := fmt.Sprintf("types/t%d.yaml", i)
			files[name] = template
			fmt.Fprintf(&b, "- %s\n", name)
		}
		files["service.yaml"] = b.String()
		return files
	}
	list := template + "metadata:\n  numbers: [" + strings.TrimSuffix(strings.Repeat("1,", 300000), ",") + "]\n"
	split := map[string]string{"service.yaml": template + "imports: [ types/a.yaml ]\n" + "metadata:\n  a: [" + strings.Repeat("1,", 100000) + "1]\n",
		"types/a.yaml": template + "metadata:\n  b: [" + strings.Repeat("1,", 100000) + "1]\n"}
	long := template + "metadata:\n  numbers: [" + strings.TrimSuffix(strings.Repeat("1,", MaxCollectionEntries+1), ",") + "]\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string // "" for a package within the limits
	}{
		{"within the limits", map[string]string{"service.yaml": nodes(10)}, ""},
		{"node templates", map[string]string{"service.yaml": nodes(MaxNodeTemplates + 1)},
			"service.yaml:4:5: node_templates: 2001 node templates in the package, more than the limit of 2000"},
		{"values of one template", map[string]string{"service.yaml": list},
			"service.yaml: the templates of the package hold up to 300007 YAML values (counting line breaks and , : - [ { ?), more than the limit of 150000"},
		{"values of two templates", split,
			"types/a.yaml: the templates of the package hold up to 200019 YAML values (counting line breaks and , : - [ { ?), more than the limit of 150000"},
		{"a long list", map[string]string{"service.yaml": long},
			"service.yaml:3:12: a list of 10001 items, more than the limit of 10000 per list or map"},
		{"templates", imports(MaxTemplates),
			"types/t255.yaml: more than 256 templates (the entry and the files it imports): the limit of a package"},
	} {
		t.Run(c.name, func(t *testing.T) {
			compiles := 0
			compiler := NewCompiler(1)
			compiler.Run = func(context.Context, *Package, map[string]any, CompileOptions) (*cloutpkg.Clout, error) {
				compiles++
				return cloutpkg.NewClout(), nil
			}
			_, err := compiler.Compile(context.Background(), writePackage(t, c.files), nil)
			if c.want == "" {
				if err != nil || compiles != 1 {
					t.Fatalf("error %v after %d compiles, want none after 1", err, compiles)
				}
				return
			}
			if err == nil || err.Error() != c.want {
				t.Errorf("error\n%v\nwant\n%s", err, c.want)
			}
			if compiles != 0 {
				t.Errorf("%d compiles started for a package beyond a limit", compiles)
			}
		})
	}
}
