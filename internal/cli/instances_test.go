//go:build !calaf_offline

package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
)

// The commands of an instance's life refuse a wrong command line before reaching any
// cluster.
func TestInstanceCommandsUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"instantiate"}, "accepts between 1 and 1 arg(s)"},
		{[]string{"change-flavour", "core"}, "give --flavour F"},
		{[]string{"terminate", "core", "--forceful", "--graceful-timeout", "10s"}, "--graceful-timeout applies to a graceful termination, not with --forceful"},
		{[]string{"terminate", "core", "--graceful-timeout", "100ms"}, "--graceful-timeout 100ms: between 1s and 24h"},
		{[]string{"cancel"}, "accepts 1 arg(s)"},
	} {
		code, _, stderr := runCalaf(t, 10*time.Second, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, stderr, c.want)
		}
	}
}

// calaf instantiate reads the request's file, and --flavour and --level win over it;
// with neither, the Service's own request stays (nil).
func TestInstantiateRequestOf(t *testing.T) {
	file := filepath.Join(t.TempDir(), "request.yaml")
	if err := os.WriteFile(file, []byte("flavourId: simple\ninstantiationLevelId: l1\nadditionalParams: { namespace: x }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file, flavour, level string
		want                 string
	}{
		{"", "", "", "<nil>"},
		{"", "complex", "", "complex  0"},
		{file, "", "", "simple l1 1"},
		{file, "complex", "large", "complex large 1"},
	} {
		req, err := instantiateRequestOf(c.file, c.flavour, c.level)
		if err != nil {
			t.Fatal(err)
		}
		got := "<nil>"
		if req != nil {
			got = strings.Join([]string{req.FlavourID, req.InstantiationLevelID, string(rune('0' + len(req.AdditionalParams)))}, " ")
		}
		if got != c.want {
			t.Errorf("%q %q %q: %q, want %q", c.file, c.flavour, c.level, got, c.want)
		}
	}
	if _, err := instantiateRequestOf(filepath.Join(t.TempDir(), "missing.yaml"), "", ""); err == nil {
		t.Error("a missing request file must be an error")
	}
}

// A cancel is asked only of an occurrence that can still stop, once.
func TestAskCancel(t *testing.T) {
	for _, c := range []struct {
		state  v1alpha1.OperationState
		cancel v1alpha1.CancelMode
		want   string
	}{
		{v1alpha1.StateProcessing, "", ""},
		{v1alpha1.StateStarting, "", ""},
		{v1alpha1.StateCompleted, "", "core-x is COMPLETED: cancel applies only to an occurrence STARTING, PROCESSING or ROLLING_BACK"},
		{v1alpha1.StateFailedTemp, "", "core-x is FAILED_TEMP: cancel applies only"},
		{v1alpha1.StateProcessing, v1alpha1.CancelGraceful, "core-x was asked to cancel already (GRACEFUL)"},
	} {
		op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "core-x"}, Spec: v1alpha1.OperationSpec{Cancel: c.cancel}}
		op.Status.OperationState = c.state
		fc := fake.NewClientBuilder().WithScheme(operator.NewScheme()).WithObjects(op).WithStatusSubresource(op).Build()
		_, _, err := askCancel(context.Background(), fc, client.ObjectKeyFromObject(op), v1alpha1.CancelForceful)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.state, err)
		case c.want == "":
			got := &v1alpha1.Operation{}
			if err := fc.Get(context.Background(), client.ObjectKeyFromObject(op), got); err != nil || got.Spec.Cancel != v1alpha1.CancelForceful {
				t.Errorf("%s: cancel %q, %v", c.state, got.Spec.Cancel, err)
			}
		case err == nil || !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v, want %q", c.state, err, c.want)
		}
	}
}

// calaf status and calaf ops say the instantiation state, a cancel asked, and the pods an
// occurrence affected.
func TestDescribeInstances(t *testing.T) {
	for _, c := range []struct {
		wanted, is v1alpha1.InstantiationState
		want       string
	}{
		{"", v1alpha1.Instantiated, "Instantiation: INSTANTIATED\n"},
		{v1alpha1.NotInstantiated, v1alpha1.NotInstantiated, "Instantiation: NOT_INSTANTIATED (nothing deployed)\n"},
		{v1alpha1.NotInstantiated, v1alpha1.Instantiated, "Instantiation: NOT_INSTANTIATED asked: tearing down what runs\n"},
		{v1alpha1.Instantiated, v1alpha1.NotInstantiated, "Instantiation: INSTANTIATED asked: deploying\n"},
	} {
		svc := &v1alpha1.Service{Spec: v1alpha1.ServiceSpec{InstantiationState: c.wanted}, Status: v1alpha1.ServiceStatus{InstantiationState: c.is}}
		if got := describe(svc); !strings.Contains(got, c.want) {
			t.Errorf("%s/%s:\n%s\nwant a line %q", c.wanted, c.is, got, c.want)
		}
	}
	op := &v1alpha1.Operation{Spec: v1alpha1.OperationSpec{Cancel: v1alpha1.CancelGraceful}}
	op.Status.OperationState, op.Status.Message = v1alpha1.StateProcessing, "change the Service: waiting"
	op.Status.AffectedPods = []v1alpha1.AffectedPod{{Pod: "a", ChangeType: v1alpha1.ChangeAdded}, {Pod: "b", ChangeType: v1alpha1.ChangeAdded}, {Pod: "c", ChangeType: v1alpha1.ChangeRemoved}}
	if got, want := reasonOf(op), "pods +2 -1 ~0; cancel GRACEFUL asked: change the Service: waiting"; got != want {
		t.Errorf("reasonOf: %q, want %q", got, want)
	}
}
