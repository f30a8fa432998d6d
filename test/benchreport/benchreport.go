// Package benchreport writes the sections of docs/benchmarks.md that the benchmarks
// measure, and describes the machine they ran on.
package benchreport

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"unicode"
)

// WriteBenchmark writes section, starting with its "## " heading line, into
// docs/benchmarks.md at path (Benchmarks): the page is rebuilt around it.
func WriteBenchmark(path, section string) error {
	return Benchmarks().Write(path, section)
}

// WriteSection replaces the section of the Markdown file at path whose "## " heading line
// starts with title (up to the next "## " heading) by section, appends section when there
// is none, and creates the file when missing. Other sections stay as they are.
func WriteSection(path, title, section string) error {
	return writeSection(path, func(line string) bool { return strings.HasPrefix(line, title) }, section)
}

// WriteSectionMatching is WriteSection for the section whose whole heading line heading
// matches: for sections whose headings begin alike.
func WriteSectionMatching(path string, heading *regexp.Regexp, section string) error {
	return writeSection(path, heading.MatchString, section)
}

func writeSection(path string, isHeading func(line string) bool, section string) error {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	text := string(data)
	if text == "" {
		text = "# Benchmarks\n\n"
	}
	section = strings.TrimRight(section, "\n") + "\n"
	start, end := sectionAt(text, isHeading)
	if start < 0 {
		return os.WriteFile(path, []byte(strings.TrimRight(text, "\n")+"\n\n"+section), 0o644)
	}
	if end < len(text) {
		section += "\n"
	}
	return os.WriteFile(path, []byte(text[:start]+section+text[end:]), 0o644)
}

// sectionAt returns where the first section whose heading line isHeading accepts begins,
// and where it ends: at the next "## " heading, or at the end of text. start is -1 when
// there is none.
func sectionAt(text string, isHeading func(line string) bool) (start, end int) {
	for start < len(text) {
		lineEnd := strings.IndexByte(text[start:], '\n')
		if lineEnd < 0 {
			lineEnd = len(text) - start
		}
		lineEnd += start
		if isHeading(text[start:lineEnd]) {
			if next := strings.Index(text[lineEnd:], "\n## "); next >= 0 {
				return start, lineEnd + next + 1
			}
			return start, len(text)
		}
		start = lineEnd + 1
	}
	return -1, 0
}

// Page is a report that benchmarks write section by section: its title, what it opens
// with, and the headings of its sections in their order. Writing a section rebuilds the
// whole page — the opening, every section's targets at a glance, the sections in order —
// so that the page holds what the benchmarks wrote and nothing else.
type Page struct {
	Title, Opening string
	// Sections match the heading lines of the page's sections, in the page's order.
	Sections []*regexp.Regexp
}

// Benchmarks is docs/benchmarks.md, which `make bench` writes whole.
func Benchmarks() Page {
	headings := []string{
		`^## Compile and render$`,
		`^## Package size$`,
		`^## Package work in worker processes$`,
		`^## Whole process: calaf compile and validate$`,
		`^## ETSI VNF packages$`,
		`^## Sources$`,
		`^## Orchestration$`,
		`^## Lifecycle$`,
		`^## NFV interface$`,
		`^## Operator at scale: \d+ Services$`,
		`^## Operator at scale: what a Service's requests cost the API server$`,
		`^## Operator at scale: \d+ Services, each its own package$`,
		`^## Operator at scale: \d+ Services, \d+ shards against 1 operator$`,
		`^## Operator at scale: \d+ Services in \d+ target clusters$`,
	}
	p := Page{Title: "# Benchmarks", Opening: benchmarksOpening}
	for _, h := range headings {
		p.Sections = append(p.Sections, regexp.MustCompile(h))
	}
	return p
}

const benchmarksOpening = `For operators sizing a Calaf installation and contributors checking a change: what Calaf costs against a baseline of the same run doing the same work without it, and whether each target is met.

` + "`make bench`" + ` writes this whole page (its sections run one after the other; see ` + "`make help`" + ` for each one's target). Each section says what it measures, where and when it ran, its table, and its targets with their verdicts; the targets of every section are gathered first. A figure is that of the run its section dates — a loaded machine makes every run slower, baselines included, which is why each figure is a ratio to a baseline of the same run. Earlier runs are in the page's git history.`

// glanceHeading is the heading of the targets gathered from every section.
const glanceHeading = "## Targets at a glance"

// Write puts section (starting with its "## " heading line) into the page at path and
// rebuilds the page; a section whose heading is not one of the page's is refused.
func (p Page) Write(path, section string) error {
	heading, _, _ := strings.Cut(section, "\n")
	at := p.index(heading)
	if at < 0 {
		return fmt.Errorf("benchreport: %q is not a section of the page %s", heading, p.Title)
	}
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	sections := make([]string, len(p.Sections))
	for _, old := range splitSections(string(data)) {
		if i := p.index(firstLine(old)); i >= 0 {
			sections[i] = old
		}
	}
	sections[at] = strings.TrimRight(section, "\n") + "\n"
	return os.WriteFile(path, []byte(p.render(sections)), 0o644)
}

// index returns the place of the section whose heading line this is, or -1.
func (p Page) index(heading string) int {
	for i, h := range p.Sections {
		if h.MatchString(heading) {
			return i
		}
	}
	return -1
}

// render is the whole page: title, opening, targets at a glance, sections in order.
func (p Page) render(sections []string) string {
	parts := []string{p.Title + "\n", strings.TrimRight(p.Opening, "\n") + "\n", glance(sections)}
	parts = append(parts, sections...)
	var kept []string
	for _, part := range parts {
		if strings.TrimSpace(part) != "" {
			kept = append(kept, part)
		}
	}
	return strings.Join(kept, "\n")
}

// glance gathers the targets of the sections — their lines "- target — **met** (figure)"
// — into one table, each linked to its section.
func glance(sections []string) string {
	var rows []string
	for _, s := range sections {
		heading := strings.TrimPrefix(firstLine(s), "## ")
		for _, line := range strings.Split(s, "\n") {
			target, verdict, ok := strings.Cut(strings.TrimPrefix(line, "- "), " — **")
			if !ok || !strings.HasPrefix(line, "- ") || !(strings.HasPrefix(verdict, "met**") || strings.HasPrefix(verdict, "missed**")) {
				continue
			}
			rows = append(rows, fmt.Sprintf("| [%s](#%s) | %s | **%s |", heading, anchor(heading), cell(target), cell(strings.TrimSuffix(verdict, "."))))
		}
	}
	if len(rows) == 0 {
		return ""
	}
	return glanceHeading + "\n\n| section | target | verdict |\n|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
}

// anchor is the link GitHub gives a heading: lower case, punctuation dropped, spaces made
// hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cell makes text fit a table cell.
func cell(text string) string { return strings.ReplaceAll(text, "|", "\\|") }

// splitSections returns the "## " sections of a page, each up to the next.
func splitSections(text string) []string {
	var out []string
	lines := strings.SplitAfter(text, "\n")
	current := -1
	for _, line := range lines {
		if strings.HasPrefix(line, "## ") {
			out = append(out, "")
			current = len(out) - 1
		}
		if current >= 0 {
			out[current] += line
		}
	}
	for i := range out {
		out[i] = strings.TrimRight(out[i], "\n") + "\n"
	}
	return out
}

func firstLine(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	return line
}

// Verdict says whether a target was met, in bold.
func Verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**missed**"
}

// CPUModel returns the CPU's model name from /proc/cpuinfo.
func CPUModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if key, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return "unknown CPU"
}

// LoadAverage returns the 1, 5 and 15 minute load averages, which tell how busy the
// machine was while a benchmark ran.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}
