package operator

import (
	"strings"
	"testing"
)

// The receivers need a token each, readable, and not the same: the push webhook's token
// must not create occurrences.
func TestReceiverTokens(t *testing.T) {
	token := func(value string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(value), nil } }
	for name, c := range map[string]struct {
		push, alert func() ([]byte, error)
		want        string
	}{
		"none":                 {want: "serves no receiver"},
		"push only":            {push: token("p")},
		"alert only":           {alert: token("a")},
		"each its own":         {push: token("p"), alert: token("a\nb")},
		"shared":               {push: token("p"), alert: token("p")},
		"shared while rotated": {push: token("old\np"), alert: token("a\np")},
	} {
		err := checkReceiverTokens(Options{WebhookToken: c.push, AlertToken: c.alert})
		switch {
		case strings.HasPrefix(name, "shared") && (err == nil || !strings.Contains(err.Error(), "share a token")):
			t.Errorf("%s: %v, want a refusal of the shared token", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", name, err, c.want)
		case c.want == "" && !strings.HasPrefix(name, "shared") && err != nil:
			t.Errorf("%s: %v", name, err)
		}
	}
}
