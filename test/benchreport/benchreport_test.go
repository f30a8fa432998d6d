package benchreport

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
