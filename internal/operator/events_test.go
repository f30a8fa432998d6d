package operator

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/redact"
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

// Every Service's secrets are hidden from an Event's note before it is put on one line and
// cut to size: a multi-line secret split by that, or cut, shows no part of itself.
func TestEventsHideSecrets(t *testing.T) {
	rec := &notes{}
	secrets := redact.NewRegistry()
	pem := "MIIEowIBAAKCAQEAvN1s0mEwz3Xk9c2YhUq8bq7m1WkT0xRr0a4Z6Jx3FtY2uQ8p\nw0rZk7jQe5Lb1aVn3S9cUoPq2XyHd4GfMi6Ts8Ke0Rz1NwLvBu7CjAhYm5Dg2x3E\n"
	one := redact.New()
	one.Add(pem)
	secrets.Set("uid-1", one)
	r := redactingRecorder{oneLineRecorder: oneLineRecorder{rec}, secrets: secrets}
	r.Eventf(&v1alpha1.Service{}, nil, "Warning", "OperationFailed", "x", "stderr: %s", strings.Repeat("x", 990)+pem)
	if got := rec.got[0]; strings.Contains(got, "MIIE") || strings.Contains(got, "w0rZ") || len(got) > maxEventNote {
		t.Errorf("note shows the secret, or is too long: %q", got)
	}
}
