package render

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestObjectName(t *testing.T) {
	long := strings.Repeat("a", 70)
	cases := []struct {
		service, node string
		want          string // "" when only validity and uniqueness are checked
	}{
		{"demo", "web", "demo-web"},
		{"demo", "plmn-config", "demo-plmn-config"},
		{"demo", "user_db", "demo-user-db"},
		{"demo", "user.db", "demo-user-db"},
		{"Demo", "Web", "demo-web"},
		{"demo", "_web_", "demo--web"},
		{"demo", "web server", ""},
		{"demo", "日本", ""},
		{"demo", "中国", ""},
		{"demo", "", ""},
		{"demo", "---", ""},
		{"demo", long, ""},
		{"demo", long + "b", ""},
		{long, "web", ""},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got := ObjectName(c.service, c.node)
		if c.want != "" && got != c.want {
			t.Errorf("ObjectName(%q, %q) = %q, want %q", c.service, c.node, got, c.want)
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("ObjectName(%q, %q) = %q is not a DNS label: %v", c.service, c.node, got, errs)
		}
		if got != ObjectName(c.service, c.node) {
			t.Errorf("ObjectName(%q, %q) is not stable", c.service, c.node)
		}
		key := c.service + "/" + c.node
		if other, dup := seen[got]; dup && strings.ToLower(other) != strings.ToLower(key) && c.want == "" {
			t.Errorf("ObjectName gives %q to both %s and %s", got, other, key)
		}
		seen[got] = key
	}
	// Lossy names keep a readable prefix.
	if got := ObjectName("demo", "web server"); !strings.HasPrefix(got, "demo-web-server-") {
		t.Errorf("ObjectName(demo, web server) = %q", got)
	}
	if got := ObjectName("demo", long); len(got) != 63 || !strings.HasPrefix(got, "demo-aaaa") {
		t.Errorf("ObjectName(demo, 70×a) = %q (%d characters)", got, len(got))
	}
}

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("n", 63)
	cases := []struct {
		node string
		want string // "" when only validity and uniqueness are checked
	}{
		{"web", "web"},
		{"plmn-config", "plmn-config"},
		{"user_db", "user_db"},
		{"User.DB", "User.DB"},
		{long, long},
		{long + "n", ""},
		{"web server", ""},
		{"web/server", ""},
		{"日本", ""},
		{"中国", ""},
		{"-web", ""},
		{"web-", ""},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got := LabelValue(c.node)
		if c.want != "" && got != c.want {
			t.Errorf("LabelValue(%q) = %q, want %q", c.node, got, c.want)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 || got == "" {
			t.Errorf("LabelValue(%q) = %q is not a label value: %v", c.node, got, errs)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("LabelValue gives %q to both %q and %q", got, other, c.node)
		}
		seen[got] = c.node
	}
}
