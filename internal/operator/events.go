package operator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

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
