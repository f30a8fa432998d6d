package benchreport

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testPage has two sections whose headings begin alike, and a plain one.
func testPage() Page {
	return Page{Title: "# Bench", Opening: "For you: what it costs.", Sections: []*regexp.Regexp{
		regexp.MustCompile(`^## A$`),
		regexp.MustCompile(`^## At scale: \d+ things$`),
		regexp.MustCompile(`^## At scale: \d+ things, each its own$`),
	}}
}

// Sections land in the page's order whatever the order they are written in, a section is
// replaced by its next run (its count may change), their targets are gathered first,
// and what no benchmark writes is dropped.
func TestPageWrite(t *testing.T) {
	p := testPage()
	path := filepath.Join(t.TempDir(), "bench.md")
	// A page as someone left it: a notebook section no benchmark writes.
	if err := os.WriteFile(path, []byte("# Bench\n\n## History\n\nBefore: 1.77×\n\n## A\n\nold\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		section string
		want    string
	}{
		{"## At scale: 10 things, each its own\n\nd\n\n- each its own ≤ 2× — **missed** (2.50×).\n",
			"# Bench\n\nFor you: what it costs.\n\n## Targets at a glance\n\n| section | target | verdict |\n|---|---|---|\n| [At scale: 10 things, each its own](#at-scale-10-things-each-its-own) | each its own ≤ 2× | **missed** (2.50×) |\n\n## A\n\nold\n\n## At scale: 10 things, each its own\n\nd\n\n- each its own ≤ 2× — **missed** (2.50×).\n"},
		{"## At scale: 20 things\n\np\n\nTargets:\n\n- time ≤ 1.5× — **met** (1.40×).\n- writes | requests ≤ 5 — **met** (5.00).\n\n- not a target — measured",
			"# Bench\n\nFor you: what it costs.\n\n## Targets at a glance\n\n| section | target | verdict |\n|---|---|---|\n| [At scale: 20 things](#at-scale-20-things) | time ≤ 1.5× | **met** (1.40×) |\n| [At scale: 20 things](#at-scale-20-things) | writes \\| requests ≤ 5 | **met** (5.00) |\n| [At scale: 10 things, each its own](#at-scale-10-things-each-its-own) | each its own ≤ 2× | **missed** (2.50×) |\n\n## A\n\nold\n\n## At scale: 20 things\n\np\n\nTargets:\n\n- time ≤ 1.5× — **met** (1.40×).\n- writes | requests ≤ 5 — **met** (5.00).\n\n- not a target — measured\n\n## At scale: 10 things, each its own\n\nd\n\n- each its own ≤ 2× — **missed** (2.50×).\n"},
		{"## A\n\nnew\n",
			"# Bench\n\nFor you: what it costs.\n\n## Targets at a glance\n\n| section | target | verdict |\n|---|---|---|\n| [At scale: 20 things](#at-scale-20-things) | time ≤ 1.5× | **met** (1.40×) |\n| [At scale: 20 things](#at-scale-20-things) | writes \\| requests ≤ 5 | **met** (5.00) |\n| [At scale: 10 things, each its own](#at-scale-10-things-each-its-own) | each its own ≤ 2× | **missed** (2.50×) |\n\n## A\n\nnew\n\n## At scale: 20 things\n\np\n\nTargets:\n\n- time ≤ 1.5× — **met** (1.40×).\n- writes | requests ≤ 5 — **met** (5.00).\n\n- not a target — measured\n\n## At scale: 10 things, each its own\n\nd\n\n- each its own ≤ 2× — **missed** (2.50×).\n"},
	}
	for i, step := range steps {
		if err := p.Write(path, step.section); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got, _ := os.ReadFile(path)
		if diff := cmp.Diff(step.want, string(got)); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
	if err := p.Write(path, "## History\n\nagain\n"); err == nil || !strings.Contains(err.Error(), `"## History" is not a section`) {
		t.Errorf("a section of no known heading: %v", err)
	}
}

// A new file gets the page's title and opening; without targets, no table.
func TestPageWriteNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.md")
	if err := testPage().Write(path, "## A\n\na"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if diff := cmp.Diff("# Bench\n\nFor you: what it costs.\n\n## A\n\na\n", string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The writers' headings are docs/benchmarks.md's, and a section written under a title it
// does not have is refused.
func TestBenchmarksHeadings(t *testing.T) {
	p := Benchmarks()
	for _, heading := range []string{"## Compile and render", "## Sources", "## NFV interface", "## Operator at scale: 1000 Services",
		"## Operator at scale: 1000 Services, each its own package", "## Operator at scale: 2000 Services, 2 shards against 1 operator",
		"## Operator at scale: what a Service's requests cost the API server", "## Operator at scale: 200 Services in 2 target clusters"} {
		if p.index(heading) < 0 {
			t.Errorf("%q is not a section of docs/benchmarks.md", heading)
		}
	}
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := WriteBenchmark(path, "## Operator at scale: 30 Services\n\nx\n"); err != nil {
		t.Error(err)
	}
	if err := WriteBenchmark(path, "## Untrusted packages\n\nx\n"); err == nil {
		t.Error("a section of another page was written into docs/benchmarks.md")
	}
}

// Other pages (docs/robustness.md's table) have one section replaced, the rest as it is.
func TestWriteSection(t *testing.T) {
	title := func(title, section, want string) write {
		return write{func(path string) error { return WriteSection(path, title, section) }, want}
	}
	checkWrites(t, []write{
		title("## A", "## A\n\nfirst\n", "# Benchmarks\n\n## A\n\nfirst\n"),
		title("## B: 10 things", "## B: 10 things\n\nb\n", "# Benchmarks\n\n## A\n\nfirst\n\n## B: 10 things\n\nb\n"),
		title("## A", "## A\n\nsecond\n", "# Benchmarks\n\n## A\n\nsecond\n\n## B: 10 things\n\nb\n"),
		// The title is a prefix: a section whose heading names another count is replaced.
		title("## B:", "## B: 20 things\n\nbb", "# Benchmarks\n\n## A\n\nsecond\n\n## B: 20 things\n\nbb\n"),
		title("## A", "## A\n\nthird", "# Benchmarks\n\n## A\n\nthird\n\n## B: 20 things\n\nbb\n"),
	})
}

// Headings that begin alike are told apart by a whole-line pattern, whatever their order.
func TestWriteSectionMatching(t *testing.T) {
	heading := func(pattern, section, want string) write {
		return write{func(path string) error { return WriteSectionMatching(path, regexp.MustCompile(pattern), section) }, want}
	}
	plain, distinct := `^## At scale: \d+ things$`, `^## At scale: \d+ things, each its own$`
	checkWrites(t, []write{
		heading(distinct, "## At scale: 10 things, each its own\n\nd", "# Benchmarks\n\n## At scale: 10 things, each its own\n\nd\n"),
		heading(plain, "## At scale: 10 things\n\np", "# Benchmarks\n\n## At scale: 10 things, each its own\n\nd\n\n## At scale: 10 things\n\np\n"),
		heading(plain, "## At scale: 20 things\n\npp", "# Benchmarks\n\n## At scale: 10 things, each its own\n\nd\n\n## At scale: 20 things\n\npp\n"),
		heading(distinct, "## At scale: 20 things, each its own\n\ndd", "# Benchmarks\n\n## At scale: 20 things, each its own\n\ndd\n\n## At scale: 20 things\n\npp\n"),
	})
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Operator at scale: what a Service's requests cost the API server": "operator-at-scale-what-a-services-requests-cost-the-api-server",
		"Whole process: calaf compile and validate":                        "whole-process-calaf-compile-and-validate",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// docs/benchmarks.md is what the benchmarks write and nothing else: its sections are the
// writers', in the page's order, under the page's opening and the targets they gather.
func TestBenchmarksPageIsTheWriters(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	p := Benchmarks()
	sections := make([]string, len(p.Sections))
	for _, s := range splitSections(string(data)) {
		heading := firstLine(s)
		switch i := p.index(heading); {
		case heading == glanceHeading:
		case i < 0:
			t.Errorf("docs/benchmarks.md has %q, which no benchmark writes: the page is make bench's (change a section's writer instead)", heading)
		default:
			sections[i] = s
		}
	}
	if diff := cmp.Diff(p.render(sections), string(data)); diff != "" {
		t.Errorf("docs/benchmarks.md is not as make bench writes it (-written +page):\n%s", diff)
	}
}

// write is one write to a file, and the whole file it should leave.
type write struct {
	do   func(path string) error
	want string
}

// checkWrites makes the writes, in order, to a new file.
func checkWrites(t *testing.T, writes []write) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	for i, w := range writes {
		if err := w.do(path); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if diff := cmp.Diff(w.want, string(got)); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
}
