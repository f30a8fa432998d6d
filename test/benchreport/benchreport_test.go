package benchreport

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	steps := []struct {
		title, section, want string
	}{
		{"## A", "## A\n\nfirst\n", "# Benchmarks\n\n## A\n\nfirst\n"},
		{"## B: 10 things", "## B: 10 things\n\nb\n", "# Benchmarks\n\n## A\n\nfirst\n\n## B: 10 things\n\nb\n"},
		{"## A", "## A\n\nsecond\n", "# Benchmarks\n\n## A\n\nsecond\n\n## B: 10 things\n\nb\n"},
		// The title is a prefix: a section whose heading names another count is replaced.
		{"## B:", "## B: 20 things\n\nbb", "# Benchmarks\n\n## A\n\nsecond\n\n## B: 20 things\n\nbb\n"},
		{"## A", "## A\n\nthird", "# Benchmarks\n\n## A\n\nthird\n\n## B: 20 things\n\nbb\n"},
	}
	for i, step := range steps {
		if err := WriteSection(path, step.title, step.section); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if diff := cmp.Diff(step.want, string(got)); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
}

// Headings that begin alike are told apart by a whole-line pattern, whatever their order.
func TestWriteSectionMatching(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	plain, distinct := regexp.MustCompile(`^## At scale: \d+ things$`), regexp.MustCompile(`^## At scale: \d+ things, each its own$`)
	steps := []struct {
		heading       *regexp.Regexp
		section, want string
	}{
		{distinct, "## At scale: 10 things, each its own\n\nd", "# Benchmarks\n\n## At scale: 10 things, each its own\n\nd\n"},
		{plain, "## At scale: 10 things\n\np", "# Benchmarks\n\n## At scale: 10 things, each its own\n\nd\n\n## At scale: 10 things\n\np\n"},
		{plain, "## At scale: 20 things\n\npp", "# Benchmarks\n\n## At scale: 10 things, each its own\n\nd\n\n## At scale: 20 things\n\npp\n"},
		{distinct, "## At scale: 20 things, each its own\n\ndd", "# Benchmarks\n\n## At scale: 20 things, each its own\n\ndd\n\n## At scale: 20 things\n\npp\n"},
	}
	for i, step := range steps {
		if err := WriteSectionMatching(path, step.heading, step.section); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if diff := cmp.Diff(step.want, string(got)); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
}
