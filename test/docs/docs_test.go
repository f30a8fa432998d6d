// Package docs checks that the documentation says what the code does: every condition
// reason and every metric the operator has is documented, and nothing documented is gone.
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

	"github.com/prometheus/client_golang/prometheus"

	"calaf.io/calaf/controller"
	"calaf.io/calaf/orchestration"
	"calaf.io/calaf/worker"
)

// reasonConstants returns the values of the Reason* constants of api/v1alpha1.
func reasonConstants(t *testing.T) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "../../api/v1alpha1/conditions.go", nil, 0)
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
			if !strings.HasPrefix(name.Name, "Reason") || i >= len(spec.Values) {
				continue
			}
			if lit, ok := spec.Values[i].(*ast.BasicLit); ok {
				value, _ := strconv.Unquote(lit.Value)
				values = append(values, value)
			}
		}
		return true
	})
	slices.Sort(values)
	return values
}

// tableReasons returns the first column of the reason table of docs/operator.md.
func tableReasons(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../docs/operator.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([A-Za-z]+)` \\| ")
	var reasons []string
	inTable := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "| reason |") {
			inTable = true
			continue
		}
		if inTable && !strings.HasPrefix(line, "|") {
			break
		}
		if m := row.FindStringSubmatch(line); inTable && m != nil {
			reasons = append(reasons, m[1])
		}
	}
	slices.Sort(reasons)
	return reasons
}

// Every reason a condition can carry has a row in docs/operator.md, and every row is a
// reason the code has.
func TestReasonTableMatchesTheCode(t *testing.T) {
	code, docs := reasonConstants(t), tableReasons(t)
	if len(code) < 10 {
		t.Fatalf("found only %d reasons in the code: %v", len(code), code)
	}
	for _, r := range code {
		if !slices.Contains(docs, r) {
			t.Errorf("reason %s is not in the table of docs/operator.md", r)
		}
	}
	for _, r := range docs {
		if !slices.Contains(code, r) {
			t.Errorf("docs/operator.md documents reason %s, which the code does not have", r)
		}
	}
}

// recorder is a Registerer that keeps the names of what is registered.
type recorder struct{ names []string }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recorder) Register(c prometheus.Collector) error {
	descs := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(descs); close(descs) }()
	for d := range descs {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names = append(r.names, m[1])
		}
	}
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }

// Every calaf_* metric the operator registers is named in docs/operator.md, and every
// calaf_* metric named there is registered.
func TestMetricsAreDocumented(t *testing.T) {
	reg := &recorder{}
	controller.NewMetrics(reg)
	orchestration.NewMetrics(reg)
	worker.NewMetrics(reg)
	slices.Sort(reg.names)
	data, err := os.ReadFile("../../docs/operator.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := regexp.MustCompile(`calaf_[a-z_]+`).FindAllString(string(data), -1)
	slices.Sort(documented)
	documented = slices.Compact(documented)
	if len(reg.names) < 5 {
		t.Fatalf("only %d metrics registered: %v", len(reg.names), reg.names)
	}
	for _, name := range reg.names {
		if !slices.Contains(documented, name) {
			t.Errorf("metric %s is not documented in docs/operator.md", name)
		}
	}
	for _, name := range documented {
		if !slices.Contains(reg.names, name) {
			t.Errorf("docs/operator.md names metric %s, which the operator does not register", name)
		}
	}
}
