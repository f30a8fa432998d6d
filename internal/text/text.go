// Package text holds the small text helpers Calaf's status and Event messages share.
package text

import (
	"strings"
	"unicode/utf8"
)

// Truncate returns s cut to at most n bytes, ending in "..." when cut; it never cuts a
// UTF-8 sequence in half.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 3 {
		return s[:max(n, 0)]
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// OneLine returns s on one line — its line breaks (and the spaces around them) become
// " | " — cut to at most n bytes: what an Event's note or a one-row view can hold.
func OneLine(s string, n int) string {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	parts := lines[:0]
	for _, line := range lines {
		if line = strings.TrimSpace(line); line != "" {
			parts = append(parts, line)
		}
	}
	return Truncate(strings.Join(parts, " | "), n)
}
