// Package text holds the small text helpers Calaf's status and Event messages share.
package text

import (
	"fmt"
	"strconv"
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

// Shorten returns s cut to at most n runes, ending in "…" when cut: a name or a value
// echoed in a message, however long it is.
func Shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	runes := []rune(s)
	return string(runes[:n-1]) + "…"
}

// Elide returns s cut to at most n runes by taking out its middle, replaced by " … ": a
// message keeps where it starts (what failed) and where it ends (why).
func Elide(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	const gap = " … "
	if n <= len(gap)+2 {
		return Shorten(s, n)
	}
	runes := []rune(s)
	keep := n - utf8.RuneCountInString(gap)
	head := keep * 2 / 3
	return string(runes[:head]) + gap + string(runes[len(runes)-(keep-head):])
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

// Escape returns s with what could move a terminal's cursor or reorder text escaped: C0
// and C1 control characters, DEL, Unicode's bidirectional controls and line separators
// (as \n, \t, \x1b, \u202e...), and bytes that are not UTF-8 (as \xff). Printed on one
// line, an escaped name cannot forge another line.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case escaped(r):
			quoted := strconv.QuoteRune(r) // none of them is printable: always escaped
			b.WriteString(quoted[1 : len(quoted)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape tells whether Escape changes s.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || escaped(r) {
			return true
		}
		i += size
	}
	return false
}

// escaped tells whether Escape escapes a rune.
func escaped(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true // bidirectional controls
	case r == 0x2028, r == 0x2029:
		return true // line and paragraph separators
	}
	return false
}
