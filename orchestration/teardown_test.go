package orchestration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/artifacts/protocol"
	"calaf.io/calaf/render"
)

// teardownWorld is a node with Standard stop (in every pod) and delete (in one pod).
func teardownWorld(t *testing.T) *world {
	w := newWorld(t, map[string]string{
		"Artifacts/stop.js":   "calaf.log('draining');",
		"Artifacts/delete.sh": "echo deregistered",
	}, lifecycleOp("stop", "stop", map[string]any{"grace": int64(5)}), lifecycleOp("delete", "delete", nil))
	w.node.Artifacts["stop"] = render.Artifact{Type: "calaf.artifacts.JavaScript", File: "Artifacts/stop.js", Properties: map[string]any{"targets": "all"}}
	w.node.Artifacts["delete"] = render.Artifact{Type: "calaf.artifacts.Shell", File: "Artifacts/delete.sh", Properties: map[string]any{"targets": "one"}}
	return w
}

func (w *world) teardown() (bool, error) {
	w.t.Helper()
	in := w.input("rev1")
	res := w.orch.Teardown(context.Background(), in)
	w.record(in, res)
	w.waitIdle()
	return res.Done, res.Failure
}

// eventLog records Events as "type reason action: note".
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) Eventf(_ runtime.Object, _ runtime.Object, eventType, reason, action, note string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("%s %s %s: %s", eventType, reason, action, fmt.Sprintf(note, args...)))
}

// Stop runs in every ready pod, then delete in one; once they ran the node may go, and
// asking again runs nothing (also when the Service read shows an older status).
func TestTeardownRunsStopThenDeleteOnce(t *testing.T) {
	w := teardownWorld(t)
	w.addPod("smf-a", "rs-uid")
	w.addPod("smf-b", "rs-uid")
	events := &eventLog{}
	w.orch.recorder = events

	done, err := w.teardown()
	if done || err != nil {
		t.Fatalf("first call: done %v, %v", done, err)
	}
	if op := w.op("Standard.stop"); op.Phase != v1alpha1.OperationRunning || !strings.Contains(w.status.Message, "tearing down") {
		t.Fatalf("while running: %+v, %q", op, w.status.Message)
	}
	// In the pod that runs both, stop runs before delete (reqs are in the order of the runs).
	var inDeletePod []string
	calls := w.exec.take()
	for _, req := range w.exec.reqs {
		if req.Pod.Name == deletePod(calls) {
			inDeletePod = append(inDeletePod, req.Operation)
		}
	}
	if strings.Join(inDeletePod, ",") != "Standard.stop,Standard.delete" {
		t.Errorf("in pod %s the operations ran as %v, want stop then delete", deletePod(calls), inDeletePod)
	}
	expectCalls(t, calls, "Standard.delete@"+deletePod(calls), "Standard.stop@smf-a", "Standard.stop@smf-b")
	for _, req := range w.exec.reqs {
		if req.Operation == "Standard.stop" && req.Inputs["grace"] != int64(5) {
			t.Errorf("stop inputs: %v", req.Inputs)
		}
	}

	stale := w.status.DeepCopy() // what a cache may still show after the next call
	done, err = w.teardown()
	if !done || err != nil {
		t.Fatalf("after the run: done %v, %v", done, err)
	}
	for _, name := range []string{"Standard.stop", "Standard.delete"} {
		if op := w.op(name); op.Phase != v1alpha1.OperationSucceeded || op.Fingerprint != teardownFingerprint {
			t.Errorf("%s: %+v", name, op)
		}
	}
	// One Event per operation, each with an action of its own: events/v1 folds Events
	// with the same object, reason and action into one series, keeping the first note.
	if len(events.events) != 2 ||
		!strings.HasPrefix(events.events[0], "Normal OperationSucceeded smf Standard.stop: teardown: Standard.stop succeeded in smf-a") ||
		!strings.HasPrefix(events.events[1], "Normal OperationSucceeded smf Standard.delete: teardown: Standard.delete succeeded in smf-") {
		t.Errorf("events: %q", events.events)
	}
	w.status = *stale
	if done, err := w.teardown(); !done || err != nil {
		t.Fatalf("asked again with an old status: done %v, %v", done, err)
	}
	expectCalls(t, w.exec.take())
}

// deletePod returns the pod delete ran in.
func deletePod(calls []string) string {
	for _, call := range calls {
		if pod, ok := strings.CutPrefix(call, "Standard.delete@"); ok {
			return pod
		}
	}
	return "none"
}

// A failing stop is reported and recorded, its pod skips delete, and the node may go all
// the same; it is not run again.
func TestTeardownFailureDoesNotHoldTheNode(t *testing.T) {
	w := teardownWorld(t)
	w.addPod("smf-a", "rs-uid")
	w.exec.fn = func(target Target, req *protocol.Request) (*protocol.Result, error) {
		if req.Operation == "Standard.stop" {
			return &protocol.Result{Error: "cannot drain", ErrorKind: protocol.ErrorException, Stderr: "sessions: 3"}, nil
		}
		return &protocol.Result{}, nil
	}
	if done, err := w.teardown(); done || err != nil {
		t.Fatalf("first call: done %v, %v", done, err)
	}
	done, err := w.teardown()
	if !done || err == nil || !strings.Contains(err.Error(), "cannot drain") {
		t.Fatalf("after the run: done %v, %v", done, err)
	}
	if op := w.op("Standard.stop"); op.Phase != v1alpha1.OperationFailed || !strings.Contains(op.Message, "sessions: 3") {
		t.Errorf("stop: %+v", op)
	}
	if op := w.op("Standard.delete"); op.Phase != v1alpha1.OperationFailed || !strings.Contains(op.Message, "did not run") {
		t.Errorf("delete: %+v", op)
	}
	expectCalls(t, w.exec.take(), "Standard.stop@smf-a")
	if done, err := w.teardown(); !done || err == nil {
		t.Fatalf("asked again: done %v, %v", done, err)
	}
	expectCalls(t, w.exec.take())
}

// Nothing to run: no teardown operations, or no ready pod.
func TestTeardownWithNothingToRun(t *testing.T) {
	w := newWorld(t, map[string]string{"Artifacts/configure.js": ""}, lifecycleOp("configure", "configure", nil))
	w.addPod("smf-a", "rs-uid")
	if done, err := w.teardown(); !done || err != nil {
		t.Fatalf("no teardown operations: done %v, %v", done, err)
	}

	w = teardownWorld(t)
	if done, err := w.teardown(); !done || err != nil {
		t.Fatalf("no pod: done %v, %v", done, err)
	}
	if op := w.op("Standard.stop"); op.Phase != v1alpha1.OperationSucceeded || !strings.Contains(op.Message, "no ready pod") {
		t.Errorf("stop: %+v", op)
	}
	expectCalls(t, w.exec.take())
}
