package tosca

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestLinesBoundAndDeduplicate: diagnostics print each once, at most MaxDiagnostics of
// them, each within MaxDiagnosticLength characters, with the Go spellings of values named
// as values.
func TestLinesBoundAndDeduplicate(t *testing.T) {
	var diags []Diagnostic
	for range 3 {
		diags = append(diags, Diagnostic{File: "service.yaml", Line: 3, Message: "the same problem"})
	}
	for i := range MaxDiagnostics + 5 {
		diags = append(diags, Diagnostic{File: "service.yaml", Message: fmt.Sprintf("problem %d", i)})
	}
	diags = append(diags, Diagnostic{File: "service.yaml", Message: "start " + strings.Repeat("x", 10000) + " the cause"})
	lines := Lines(diags)
	if len(lines) != MaxDiagnostics+1 || lines[0] != "service.yaml:3: the same problem" || lines[1] != "service.yaml: problem 0" {
		t.Fatalf("lines %q", lines)
	}
	if last := lines[MaxDiagnostics]; last != "… and 7 more problems" {
		t.Errorf("last line %q", last)
	}
	long := Diagnostic{File: "service.yaml", Message: "start " + strings.Repeat("x", 10000) + " the cause"}.String()
	if n := len([]rune(long)); n != MaxDiagnosticLength || !strings.HasPrefix(long, "service.yaml: start xxx") || !strings.HasSuffix(long, "xxx the cause") {
		t.Errorf("a long line of %d characters: %.80s…%s", n, long, long[len(long)-40:])
	}
	goish := Diagnostic{Message: `yaml: invalid map key: map[string]interface {}{"a":1} in []interface {}`}.String()
	if goish != `yaml: invalid map key: map{"a":1} in list` {
		t.Errorf("Go spellings: %q", goish)
	}
}

// TestYAMLProblem words the errors of the YAML library without Go's types.
func TestYAMLProblem(t *testing.T) {
	decode := func(text string, into any) error { return yaml.Unmarshal([]byte(text), into) }
	var m map[string]any
	var anything any
	var s []string
	for _, c := range []struct {
		err  error
		line int
		want string
	}{
		{decode("- a\n- b\n", &m), 1, "a list where a map is expected"},
		{decode("a: 1\na: 2\n", &m), 2, `mapping key "a" already defined at line 1`},
		{decode("? {a: 1}\n: v\n", &anything), 0, "a key that is a map or a list: keys are text"},
		{decode("a: [1,\n", &anything), 1, "did not find expected node content"},
		{decode("\xff\xfe\x00", &anything), 0, "the text is not UTF-8 (a binary file?)"},
		{decode("{a: 1}", &s), 1, "a map where a list is expected"},
		{errors.New("yaml: line 7: found character that cannot start any token"), 7, "found character that cannot start any token"},
	} {
		line, message := YAMLProblem(c.err)
		if line != c.line || message != c.want {
			t.Errorf("%v: line %d, %q; want line %d, %q", c.err, line, message, c.line, c.want)
		}
	}
}

// TestKindOf names values as a person does.
func TestKindOf(t *testing.T) {
	for value, want := range map[any]string{"x": "text", int64(3): "a number", 2.5: "a number", true: "true or false"} {
		if got := KindOf(value); got != want {
			t.Errorf("KindOf(%v) = %q, want %q", value, got, want)
		}
	}
	if KindOf(nil) != "null" || KindOf([]any{}) != "a list" || KindOf(map[string]any{}) != "a map" || KindOf(func() {}) != "a function" {
		t.Error("KindOf of null, a list, a map or a function")
	}
}
