// Package benchreport writes the sections of docs/benchmarks.md that the benchmarks
// measure, and describes the machine they ran on.
package benchreport

import (
	"os"
	"regexp"
	"strings"
)

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
