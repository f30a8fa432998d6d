// Package text holds the small text helpers Calaf's status and Event messages share.
package text

import "unicode/utf8"

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
