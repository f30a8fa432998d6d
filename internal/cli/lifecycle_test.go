package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
)

// The lifecycle commands refuse a wrong command line before reaching any cluster.
func TestLifecycleUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"scale", "core"}, "give --aspect A [--steps N] [--in], or --level L"},
		{[]string{"scale", "core", "--aspect", "smf", "--level", "l1"}, "give --aspect A [--steps N] [--in], or --level L"},
		{[]string{"scale", "core", "--aspect", "smf", "--steps", "0"}, "--steps 0: at least 1"},
		{[]string{"scale"}, "accepts between 1 and 1 arg(s)"},
		{[]string{"heal", "core", "--node", "smf", "--pod", "smf-0"}, "give --node or --pod, not both"},
		{[]string{"upgrade", "core", "pkg", "--rollback", "sometimes"}, `--rollback "sometimes": Auto or Manual`},
		{[]string{"upgrade", "core", "a", "b"}, "accepts between 1 and 2 arg(s)"},
		{[]string{"retry"}, "accepts 1 arg(s)"},
		{[]string{"ops", "a", "b"}, "accepts at most 1 arg(s)"},
	} {
		code, _, stderr := runCalaf(t, 10*time.Second, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, stderr, c.want)
		}
	}
}

// --wait ends with the occurrence: nil once COMPLETED; an error (exit code 1) when it is
// FAILED_TEMP (unless it rolls back by itself), FAILED or ROLLED_BACK; it prints every
// state entered after those already seen.
func TestFollowOccurrence(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))
	occurrence := func(states ...v1alpha1.OperationState) *v1alpha1.Operation {
		op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "core-scale-x"}}
		for _, s := range states {
			op.Status.Transitions = append(op.Status.Transitions, v1alpha1.StateTransition{State: s, Time: at, Message: strings.ToLower(string(s))})
		}
		op.Status.OperationState, op.Status.Message = states[len(states)-1], "last: "+string(states[len(states)-1])
		return op
	}
	for _, c := range []struct {
		name   string
		op     *v1alpha1.Operation
		seen   int64
		auto   bool
		failed bool
		out    string
	}{
		{"completed", occurrence(v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateCompleted), 0, false, false,
			"15:04:05 STARTING: starting\n15:04:05 PROCESSING: processing\n15:04:05 COMPLETED: completed\n"},
		{"failed temporarily", occurrence(v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateFailedTemp), 2, false, true,
			"15:04:05 FAILED_TEMP: failed_temp\n"},
		{"failed", occurrence(v1alpha1.StateStarting, v1alpha1.StateFailed), 0, false, true, ""},
		{"rolled back", occurrence(v1alpha1.StateProcessing, v1alpha1.StateFailedTemp, v1alpha1.StateRollingBack, v1alpha1.StateRolledBack), 0, true, true, ""},
		{"a retry that completed", occurrence(v1alpha1.StateFailedTemp, v1alpha1.StateProcessing, v1alpha1.StateCompleted), 1, false, false,
			"15:04:05 PROCESSING: processing\n15:04:05 COMPLETED: completed\n"},
	} {
		fc := fake.NewClientBuilder().WithScheme(operator.NewScheme()).WithObjects(c.op).WithStatusSubresource(c.op).Build()
		var out bytes.Buffer
		err := followOccurrence(context.Background(), &out, fc, client.ObjectKey{Namespace: "ns", Name: "core-scale-x"}, c.seen, c.auto, 5*time.Second)
		if c.failed != errors.Is(err, errOccurrenceFailed) || !c.failed && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.out != "" && out.String() != c.out {
			t.Errorf("%s: printed %q, want %q", c.name, out.String(), c.out)
		}
	}
	// An occurrence that dropped its oldest transitions: what comes after the last seen
	// (by sequence number) is printed, whatever its place in the list.
	trimmed := occurrence(v1alpha1.StateFailedTemp, v1alpha1.StateProcessing, v1alpha1.StateCompleted)
	for i := range trimmed.Status.Transitions {
		trimmed.Status.Transitions[i].Sequence = int64(70 + i)
	}
	fc := fake.NewClientBuilder().WithScheme(operator.NewScheme()).WithObjects(trimmed).WithStatusSubresource(trimmed).Build()
	var printed bytes.Buffer
	if err := followOccurrence(context.Background(), &printed, fc, client.ObjectKeyFromObject(trimmed), 70, false, 5*time.Second); err != nil ||
		printed.String() != "15:04:05 PROCESSING: processing\n15:04:05 COMPLETED: completed\n" {
		t.Errorf("past the transitions kept: %v, printed %q", err, printed.String())
	}
	// A decision the operator has not picked up yet: the FAILED_TEMP it was made on is not
	// the end; --wait goes on (here until its timeout).
	op := occurrence(v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateFailedTemp)
	fc = fake.NewClientBuilder().WithScheme(operator.NewScheme()).WithObjects(op).WithStatusSubresource(op).Build()
	err := followOccurrence(context.Background(), io.Discard, fc, client.ObjectKeyFromObject(op), 3, false, time.Second)
	if err == nil || errors.Is(err, errOccurrenceFailed) || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("a decision not picked up yet: %v, want a timeout", err)
	}
}
