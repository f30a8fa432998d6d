package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tliron/exturl"
	"github.com/tliron/kutil/problems"
	"github.com/tliron/puccini/clout/js"
	"github.com/tliron/puccini/tosca/parser"
)

// pucciniVersion is the Puccini that Calaf is built with (go.mod).
const pucciniVersion = "v0.22.7"

// pucciniInputs are the inputs Puccini's own puccini_test.go gives its examples.
var pucciniInputs = map[string]map[string]any{
	"1.3/inputs-and-outputs.yaml": {"ram": "1gib"},
	"cloudify/advanced-blueprint-example.yaml": {
		"host_ip":                "1.2.3.4",
		"agent_user":             "my_user",
		"agent_private_key_path": "my_key",
	},
	"hot/hello-world.yaml": {"username": "test"},
}

// calafRefuses are the examples Puccini accepts that Calaf refuses on purpose, and why.
var calafRefuses = map[string]string{
	// An operation whose implementation is no file of the package would fail in the pods.
	"1.3/interfaces.yaml":                      "no artifact of the node and no file of the package",
	"cloudify/example.yaml":                    "no artifact of the node and no file of the package",
	"cloudify/advanced-blueprint-example.yaml": "no artifact of the node and no file of the package",
}

// pucciniExamples returns the directory of Puccini's examples in the module cache.
func pucciniExamples(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com", "tliron", "puccini@"+pucciniVersion, "examples")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("Puccini's examples are not in the module cache (go mod download github.com/tliron/puccini@%s): %v", pucciniVersion, err)
	}
	return dir
}

// rawPuccini does what Puccini's own tests do with a template — parse, compile, resolve
// and coerce, with a new parser — and returns its problems, or "" when it accepts it.
func rawPuccini(path string, inputs map[string]any) (rejection string) {
	defer func() {
		if r := recover(); r != nil {
			rejection = fmt.Sprintf("panic: %v", r)
		}
	}()
	urlContext := exturl.NewContext()
	defer urlContext.Release()
	parserContext := parser.NewParser().NewContext()
	parserContext.URL = urlContext.NewFileURL(path)
	parserContext.Inputs = inputs
	serviceTemplate, err := parserContext.Parse(context.Background())
	probs := parserContext.GetProblems()
	if !probs.Empty() {
		return firstProblem(probs)
	}
	if err != nil {
		return err.Error()
	}
	clout, err := serviceTemplate.Compile()
	if err != nil {
		return firstLine(err.Error())
	}
	execContext := js.ExecContext{Clout: clout, Problems: probs, URLContext: urlContext, History: true, Format: "yaml", Pretty: true}
	execContext.Resolve()
	if probs.Empty() {
		execContext.Coerce()
	}
	if !probs.Empty() {
		return firstProblem(probs)
	}
	return ""
}

// firstProblem describes the first of Puccini's problems: "@row,column item: message".
func firstProblem(probs *problems.Problems) string {
	problem := probs.Slice()[0]
	text := problem.Message
	if problem.Item != "" {
		text = problem.Item + ": " + text
	}
	if problem.Row > 0 {
		text = fmt.Sprintf("@%d,%d %s", problem.Row, problem.Column, text)
	}
	return text
}

// firstLine returns the first line of a problem report that says something.
func firstLine(text string) string {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(strings.ToUpper(line), "PROBLEMS") && !strings.Contains(line, "://") {
			return line
		}
	}
	return strings.TrimSpace(text)
}

// TestPucciniExamples runs calaf validate over every YAML file of Puccini's own examples
// and compares with what Puccini itself accepts: every template Puccini accepts, Calaf must
// accept too, but those of calafRefuses, which it must refuse for their reason. The
// comparison is logged as a table.
func TestPucciniExamples(t *testing.T) {
	root := pucciniExamples(t)
	var templates []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			rel, _ := filepath.Rel(root, path)
			templates = append(templates, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(templates)

	var table strings.Builder
	fmt.Fprintf(&table, "%-52s %-8s %-8s %s\n", "template", "puccini", "calaf", "first problem (puccini | calaf)")
	pucciniAccepts, both := 0, 0
	for _, template := range templates {
		inputs := pucciniInputs[template]
		rejection := rawPuccini(filepath.Join(root, filepath.FromSlash(template)), inputs)

		args := []string{"validate", filepath.Join(root, filepath.FromSlash(template))}
		names := make([]string, 0, len(inputs))
		for name := range inputs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			args = append(args, "-i", fmt.Sprintf("%s=%v", name, inputs[name]))
		}
		code, _, stderr := runCalaf(t, caseTimeout, args...)

		verdict := func(ok bool) string {
			if ok {
				return "accepts"
			}
			return "rejects"
		}
		problem := rejection
		if code != ExitOK {
			problem += " | " + strings.TrimPrefix(firstLine(stderr), "error: ")
		}
		fmt.Fprintf(&table, "%-52s %-8s %-8s %s\n", template, verdict(rejection == ""), verdict(code == ExitOK), problem)
		if reason, refused := calafRefuses[template]; refused {
			if rejection != "" || code != ExitInvalid || !strings.Contains(stderr, reason) {
				t.Errorf("calaf validate %s: exit %d, want 1 saying %q (and Puccini accepting it: %q)\n%s", template, code, reason, rejection, stderr)
			}
			continue
		}
		if rejection == "" {
			pucciniAccepts++
			if code == ExitOK {
				both++
			} else {
				t.Errorf("Puccini accepts %s, calaf validate does not (exit %d):\n%s", template, code, stderr)
			}
		}
		if code == ExitUsage {
			t.Errorf("calaf validate %s: usage error\n%s", template, stderr)
		}
	}
	t.Logf("Puccini %s examples: %d YAML files, Puccini accepts %d, Calaf accepts %d of those\n%s",
		pucciniVersion, len(templates), pucciniAccepts, both, table.String())
	// Puccini's own test suite compiles 35 of its examples; most must be here.
	if pucciniAccepts < 30 {
		t.Errorf("Puccini accepts only %d of its examples: the comparison is not meaningful", pucciniAccepts)
	}
}
