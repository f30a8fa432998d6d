package lifecycle_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

func stopOp() v1alpha1.OperationSpec {
	return v1alpha1.OperationSpec{Type: v1alpha1.OperationOperate, Operate: &v1alpha1.OperateRequest{ChangeStateTo: v1alpha1.ChangeStateStopped}}
}

// With an NFVO (SOL003 direct mode), an occurrence of a VNF instance acts only once granted:
// the NFVO is asked with the operation, the instance and the links to the VNFM's
// resources, and the grant is recorded; a refused grant ends the occurrence ROLLED_BACK
// (GrantRefused) with the NFVO's words, the Service as it was. A Service that is no VNF
// instance, and a MODIFY, are not granted.
func TestGrantsBeforeActing(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	vnf := func(svc *v1alpha1.Service) { svc.Labels = map[string]string{v1alpha1.LabelVnfInstance: "true"} }
	deploy(t, ns, "granted", configTemplate("1", ""), vnf)
	deploy(t, ns, "denied-core", configTemplate("1", ""), vnf)
	deploy(t, ns, "plain", configTemplate("1", ""), nil)
	asked := len(env.nfvo.Requests())

	op := waitState(t, occurrence(t, ns, "granted", stopOp()), v1alpha1.StateCompleted, time.Minute)
	g.Expect(op.Status.GrantID).NotTo(BeEmpty())
	requests := env.nfvo.Requests()[asked:]
	g.Expect(requests).To(HaveLen(1))
	g.Expect(requests[0].Operation).To(Equal("OPERATE"))
	g.Expect(requests[0].VnfInstanceID).To(Equal("granted"))
	g.Expect(requests[0].VnfLcmOpOccID).To(Equal(op.Name))
	g.Expect(requests[0].Links.VnfLcmOpOcc.Href).To(Equal("https://vnfm.example/vnflcm/v2/vnf_lcm_op_occs/" + op.Name))

	refused := waitState(t, occurrence(t, ns, "denied-core", stopOp()), v1alpha1.StateRolledBack, time.Minute)
	g.Expect(refused.Status.GrantID).To(BeEmpty())
	ready := apimeta.FindStatusCondition(refused.Status.Conditions, v1alpha1.ConditionReady)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Reason).To(Equal(v1alpha1.OccurrenceGrantRefused))
	g.Expect(refused.Status.Message).To(ContainSubstring("no capacity left for denied-core"))
	g.Expect(states(refused)).To(Equal([]v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateRolledBack}))
	svc := &v1alpha1.Service{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "denied-core"}, svc)).To(Succeed())
	g.Expect(svc.Spec.Stopped).To(BeFalse(), "a refused occurrence changed the Service")

	before := len(env.nfvo.Requests())
	plain := waitState(t, occurrence(t, ns, "plain", stopOp()), v1alpha1.StateCompleted, time.Minute)
	modify := waitState(t, occurrence(t, ns, "granted", modifyOp("two")), v1alpha1.StateCompleted, time.Minute)
	g.Expect(plain.Status.GrantID).To(BeEmpty())
	g.Expect(modify.Status.GrantID).To(BeEmpty())
	g.Expect(env.nfvo.Requests()).To(HaveLen(before), "a grant was asked for a Service that is no VNF instance, or for a MODIFY")
}
