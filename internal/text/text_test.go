package text

import "testing"

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
