package text

import (
	"strings"
	"testing"
)

func TestTruncate(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer message", 10, "a longe..."},
		{"héhéhéhé", 6, "hé..."},
		{"héhéhéhé", 5, "h..."}, // "é" is two bytes: never cut in half
		{"abc", 2, "ab"},
	}
	for _, tc := range cases {
		if got := Truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"Deployment/a created\nService/a configured\n", 100, "Deployment/a created | Service/a configured"},
		{"error: x\r\n  stderr: boom\n\n", 100, "error: x | stderr: boom"},
		{"one line", 100, "one line"},
		{"a\nb", 3, "..."},
	}
	for _, tc := range cases {
		if got := OneLine(tc.in, tc.n); got != tc.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"Definitions/service.yaml": "Definitions/service.yaml",
		"héllo wörld":              "héllo wörld",
		"a\nvalid: forged.yaml":    `a\nvalid: forged.yaml`,
		"\x1b[2K\rvalid: x":        `\x1b[2K\rvalid: x`,
		"evil\u202egpj.yaml":       `evil\u202egpj.yaml`,
		"bad\xffbyte":              `bad\xffbyte`,
		"c1\u0085next":             `c1\u0085next`,
		"tab\there":                `tab\there`,
		"del\x7f":                  `del\x7f`,
		"sep\u2028line":            `sep\u2028line`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShortenAndElide(t *testing.T) {
	long := strings.Repeat("x", 600)
	for _, tc := range []struct{ got, want string }{
		{Shorten("short", 10), "short"},
		{Shorten("a longer name", 8), "a longe…"},
		{Shorten("héhéhéhé", 3), "hé…"},
		{Elide("short", 10), "short"},
		{Elide("start-middle-end", 13), "start- … -end"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if n := len([]rune(Elide(long, 100))); n != 100 {
		t.Errorf("Elide of 600 runes to 100 has %d", n)
	}
	if n := len([]rune(Shorten(long, 80))); n != 80 {
		t.Errorf("Shorten of 600 runes to 80 has %d", n)
	}
}
