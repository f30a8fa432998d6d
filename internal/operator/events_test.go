package operator

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"calaf.io/calaf/api/v1alpha1"
)

// notes records the notes of the Events it is given.
type notes struct {
	events.EventRecorder
	got []string
}

func (n *notes) Eventf(_, _ runtime.Object, _, _, _, note string, args ...interface{}) {
	n.got = append(n.got, fmt.Sprintf(note, args...))
}

// Every Event the operator records has a one-line note of at most 1 KiB.
func TestEventsAreOneLine(t *testing.T) {
	rec := &notes{}
	r := oneLineRecorder{rec}
	svc := &v1alpha1.Service{}
	r.Eventf(svc, nil, "Normal", "Applied", "Apply", "%s", "Deployment/a created\nService/a configured")
	r.Eventf(svc, nil, "Warning", "OperationFailed", "x", "failed: %s", "exit 3; stderr:\n  line one\r\n  line two\n")
	r.Eventf(svc, nil, "Warning", "Long", "x", "%s", strings.Repeat("x\n", 2000))
	want := []string{"Deployment/a created | Service/a configured", "failed: exit 3; stderr: | line one | line two"}
	for i, w := range want {
		if rec.got[i] != w {
			t.Errorf("note %d = %q, want %q", i, rec.got[i], w)
		}
	}
	if long := rec.got[2]; len(long) > maxEventNote || strings.ContainsAny(long, "\n\r") {
		t.Errorf("a long note is %d bytes, or has line breaks", len(long))
	}
}
