package operator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"calaf.io/calaf/internal/redact"
	"calaf.io/calaf/internal/text"
)

// maxEventNote bounds the note of an Event.
const maxEventNote = 1024

// oneLineRecorder records Events whose note is one line of at most 1 KiB, whatever the
// message (a list of applied objects, a stderr tail): `kubectl get events` shows one row
// per Event.
type oneLineRecorder struct {
	events.EventRecorder
}

// Eventf records an Event with its note on one line.
func (r oneLineRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", text.OneLine(fmt.Sprintf(note, args...), maxEventNote))
}

// redactingRecorder records Events whose note has every Service's secrets hidden before
// it is put on one line and cut short.
type redactingRecorder struct {
	oneLineRecorder
	secrets *redact.Registry
}

// newRecorder returns the recorder of the operator's Events: every Service's secrets
// hidden (opts.secrets), one line each.
func newRecorder(mgr ctrl.Manager, opts Options) redactingRecorder {
	return redactingRecorder{oneLineRecorder: oneLineRecorder{mgr.GetEventRecorder("calaf-operator")}, secrets: opts.secrets}
}

// Eventf records an Event with its secrets hidden, on one line.
func (r redactingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.oneLineRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", r.secrets.String(fmt.Sprintf(note, args...)))
}
