package lifecycle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
)

// Requests of the wrong shape are refused at admission (the CRD's CEL rules), with a
// message saying what is wrong; none of them ever reaches the operator.
func TestAdmissionRefusesIllFormedRequests(t *testing.T) {
	ns := newNamespace(t)
	scale := &v1alpha1.ScaleRequest{AspectID: "smf", Type: v1alpha1.ScaleOut, NumberOfSteps: 1}
	cases := []struct {
		name    string
		spec    v1alpha1.OperationSpec
		message string
	}{
		{"SCALE without its request", v1alpha1.OperationSpec{Type: v1alpha1.OperationScale},
			"the request must be the member of its type"},
		{"a scale request on a CUSTOM operation", v1alpha1.OperationSpec{Node: "n", Operation: "A.b", Scale: scale},
			"the request must be the member of its type"},
		{"CUSTOM without a node", v1alpha1.OperationSpec{Type: v1alpha1.OperationCustom, Operation: "A.b"},
			"a CUSTOM operation names a node and an operation"},
		{"a node on a SCALE", v1alpha1.OperationSpec{Type: v1alpha1.OperationScale, Scale: scale, Node: "n"},
			"node and operation belong to CUSTOM operations"},
		{"zero steps", v1alpha1.OperationSpec{Type: v1alpha1.OperationScale, Scale: &v1alpha1.ScaleRequest{AspectID: "smf", NumberOfSteps: -1}},
			"spec.scale.numberOfSteps"},
		{"an unknown direction", v1alpha1.OperationSpec{Type: v1alpha1.OperationScale, Scale: &v1alpha1.ScaleRequest{AspectID: "smf", Type: "SIDEWAYS"}},
			`Unsupported value: "SIDEWAYS"`},
		{"a level and levels", v1alpha1.OperationSpec{Type: v1alpha1.OperationScaleToLevel, ScaleToLevel: &v1alpha1.ScaleToLevelRequest{
			InstantiationLevelID: "l1", ScaleInfo: []v1alpha1.ScaleInfo{{AspectID: "a", ScaleLevel: 1}}}},
			"set either instantiationLevelId or scaleInfo"},
		{"a negative level", v1alpha1.OperationSpec{Type: v1alpha1.OperationScaleToLevel, ScaleToLevel: &v1alpha1.ScaleToLevelRequest{
			ScaleInfo: []v1alpha1.ScaleInfo{{AspectID: "a", ScaleLevel: -1}}}},
			"scaleLevel"},
		{"pods and nodes", v1alpha1.OperationSpec{Type: v1alpha1.OperationHeal, Heal: &v1alpha1.HealRequest{Pods: []string{"p"}, Nodes: []string{"n"}}},
			"set pods or nodes, not both"},
		{"MODIFY of nothing", v1alpha1.OperationSpec{Type: v1alpha1.OperationModify, Modify: &v1alpha1.ModifyRequest{}},
			"spec.modify in body should have at least 1 properties"},
		{"a rollback of a HEAL", v1alpha1.OperationSpec{Type: v1alpha1.OperationHeal, Resolution: v1alpha1.ResolutionRollback},
			"only INSTANTIATE, SCALE, SCALE_TO_LEVEL, CHANGE_FLAVOUR, CHANGE_PACKAGE, MODIFY and OPERATE occurrences can be rolled back"},
		{"an unknown type", v1alpha1.OperationSpec{Type: "REBOOT"}, `Unsupported value: "REBOOT"`},
	}
	for _, c := range cases {
		c.spec.ServiceName = "svc"
		op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-", Namespace: ns}, Spec: c.spec}
		err := env.client.Create(context.Background(), op)
		if err == nil || !strings.Contains(err.Error(), c.message) {
			t.Errorf("%s: %v; want %q", c.name, err, c.message)
		}
	}
}

// The request cannot change after creation; retry, rollback and fail are accepted only
// while the occurrence is FAILED_TEMP (a rollback of a COMPLETED occurrence is refused),
// one retry at a time, and a resolution is final.
func TestAdmissionRefusesIllegalTransitions(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	deploy(t, ns, "cfg", configTemplate("1", ""), nil)
	op := occurrence(t, ns, "cfg", v1alpha1.OperationSpec{Type: v1alpha1.OperationModify,
		Modify: &v1alpha1.ModifyRequest{Inputs: map[string]apiextensionsv1.JSON{"greeting": {Raw: []byte(`"hi"`)}}}})
	waitState(t, op, v1alpha1.StateCompleted, time.Minute)

	err := update(op, func(op *v1alpha1.Operation) { op.Spec.Resolution = v1alpha1.ResolutionRollback })
	g.Expect(err).To(MatchError(ContainSubstring("rollback and fail are allowed only while the occurrence is FAILED_TEMP")))
	err = update(op, func(op *v1alpha1.Operation) { op.Spec.Retries = 1 })
	g.Expect(err).To(MatchError(ContainSubstring("retry is allowed only while the occurrence is FAILED_TEMP")))
	err = update(op, func(op *v1alpha1.Operation) {
		op.Spec.Modify.Inputs["greeting"] = apiextensionsv1.JSON{Raw: []byte(`"changed"`)}
	})
	g.Expect(err).To(MatchError(ContainSubstring("the request of an Operation cannot be changed")))
	err = update(op, func(op *v1alpha1.Operation) { op.Spec.Timeout = &metav1.Duration{Duration: time.Second} })
	g.Expect(err).To(MatchError(ContainSubstring("the request of an Operation cannot be changed")))
}
