package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// stringConstants returns the values of the string constants of a Go file whose names
// start with prefix.
func stringConstants(t *testing.T, path, prefix string) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range spec.Names {
			if !strings.HasPrefix(name.Name, prefix) || i >= len(spec.Values) {
				continue
			}
			if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				value, _ := strconv.Unquote(lit.Value)
				values = append(values, value)
			}
		}
		return true
	})
	slices.Sort(values)
	return values
}

// firstColumn returns the first column (`code`) of the table of a Markdown file whose
// header line starts with header.
func firstColumn(t *testing.T, path, header string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([A-Za-z_]+)` \\| ")
	var values []string
	inTable := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, header) {
			inTable = true
			continue
		}
		if inTable && !strings.HasPrefix(line, "|") {
			break
		}
		if m := row.FindStringSubmatch(line); inTable && m != nil {
			values = append(values, m[1])
		}
	}
	slices.Sort(values)
	return values
}

// Every condition reason an occurrence or a subscription can carry has a row in
// docs/lifecycle.md, and every row is a reason the code has; so has every operation type.
func TestLifecycleReasonsAndTypesAreDocumented(t *testing.T) {
	for _, c := range []struct {
		prefix, header string
		least          int
	}{
		{"Occurrence", "| reason | state and meaning |", 8},
		{"Operation", "| type | request | steps | rollback restores |", 8},
		{"Subscription", "| reason | meaning |", 4},
	} {
		code := stringConstants(t, "../../api/v1alpha1/lifecycle_types.go", c.prefix)
		docs := firstColumn(t, "../../docs/lifecycle.md", c.header)
		if len(code) < c.least {
			t.Fatalf("%s: found only %d constants: %v", c.prefix, len(code), code)
		}
		if !slices.Equal(code, docs) {
			t.Errorf("%s: the code has %v, docs/lifecycle.md documents %v", c.prefix, code, docs)
		}
	}
}
