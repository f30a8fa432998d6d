package etsi

import (
	"regexp"
	"strings"
	"testing"
)

// TestIsDNSLabel holds isDNSLabel to the RFC 1123 label expression it replaced.
func TestIsDNSLabel(t *testing.T) {
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	cases := []string{"", "a", "0", "-", "a-", "-a", "a-b", "web", "web-1", "Web", "web_1", "web.1", "a--b",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "a" + strings.Repeat("-", 61) + "b", "ü", "a b"}
	for _, name := range cases {
		if got, want := isDNSLabel(name), label.MatchString(name); got != want {
			t.Errorf("isDNSLabel(%q) = %v, the expression says %v", name, got, want)
		}
	}
}
