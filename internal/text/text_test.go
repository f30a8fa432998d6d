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
