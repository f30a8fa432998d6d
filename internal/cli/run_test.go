package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"calaf.io/calaf/api/v1alpha1"
)

func TestRunUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "core", "smf"}, "accepts 3 arg(s)"},
		{[]string{"run", "core", "smf", "configure"}, `"configure" is not INTERFACE.OPERATION`},
		{[]string{"run", "core", "smf", "Admin.report", "-i", "verbose"}, `input "verbose" is not name=value`},
		{[]string{"run", "core", "smf", "Admin.report", "-o", "toml"}, `unknown output format "toml"`},
	} {
		code, _, stderr := runCalaf(t, 10*time.Second, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q", c.args, code, stderr)
		}
	}
}

func TestOperationPrefix(t *testing.T) {
	for in, want := range map[[3]string]string{
		{"core", "smf", "Admin.report"}:           "core-smf-admin-report-",
		{"core", "my_node", "Standard.configure"}: "core-my-node-standard-configure-",
		{strings.Repeat("a", 60), "n", "I.o"}:     strings.Repeat("a", 50) + "-",
		{"x", "n", "Iface.op_with.__underscores"}: "x-n-iface-op-with-underscores-",
	} {
		if got := operationPrefix(in[0], in[1], in[2]); got != want {
			t.Errorf("%v: %q, want %q", in, got, want)
		}
	}
}

func TestPrintOperation(t *testing.T) {
	op := &v1alpha1.Operation{
		Spec: v1alpha1.OperationSpec{ServiceName: "core", Node: "smf", Operation: "Admin.report"},
		Status: v1alpha1.OperationStatus{Phase: v1alpha1.OperationFailed, Message: "Admin.report failed in pod b: boom", Results: []v1alpha1.PodResult{
			{Pod: "a", Succeeded: true, DurationMillis: 41, Message: "3 settings", Attributes: map[string]apiextensionsv1.JSON{"last_report": {Raw: []byte(`"a: 3"`)}}},
			{Pod: "b", Succeeded: false, DurationMillis: 12, Message: "boom", Stderr: "no file\nat all"},
		}},
	}
	op.Name = "core-smf-admin-report-x"
	var out bytes.Buffer
	if err := printOperation(&out, op, "text"); err != nil {
		t.Fatal(err)
	}
	want := `Admin.report core-smf-admin-report-x on core/smf: Failed — Admin.report failed in pod b: boom
  pod a: ok (41ms): 3 settings
    attribute last_report = "a: 3"
  pod b: FAILED (12ms): boom
    stderr: no file
            at all
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
