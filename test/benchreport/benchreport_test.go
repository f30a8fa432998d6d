package benchreport

import (
	"os"
	"path/filepath"
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
