// Package benchreport writes the sections of docs/benchmarks.md that the benchmarks
// measure, and describes the machine they ran on.
package benchreport

import (
	"os"
	"strings"
)

// WriteSection replaces the section of the Markdown file at path whose "## " heading line
// starts with title (up to the next "## " heading) by section, appends section when there
// is none, and creates the file when missing. Other sections stay as they are.
func WriteSection(path, title, section string) error {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	text := string(data)
	if text == "" {
		text = "# Benchmarks\n\n"
	}
	section = strings.TrimRight(section, "\n") + "\n"
	start := headingAt(text, title)
	if start < 0 {
		return os.WriteFile(path, []byte(strings.TrimRight(text, "\n")+"\n\n"+section), 0o644)
	}
	end := len(text)
	if next := strings.Index(text[start+len(title):], "\n## "); next >= 0 {
		end = start + len(title) + next + 1
		section += "\n"
	}
	return os.WriteFile(path, []byte(text[:start]+section+text[end:]), 0o644)
}

// headingAt returns where the line starting with title begins, or -1.
func headingAt(text, title string) int {
	if strings.HasPrefix(text, title) {
		return 0
	}
	if i := strings.Index(text, "\n"+title); i >= 0 {
		return i + 1
	}
	return -1
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
