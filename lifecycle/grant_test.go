package lifecycle_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
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

// With an NFVO, a Service naming a VNFD id no VnfPackage of its namespace holds is deployed
// from the package the NFVO onboarded (SOL003 VNF package management), fetched once.
func TestPackagesFromTheNFVO(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	dir := t.TempDir()
	for path, content := range configTemplate("nfvo", "") {
		g.Expect(os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644)).To(Succeed())
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	archive, err := source.Pack(pkg)
	g.Expect(err).NotTo(HaveOccurred())
	env.nfvo.AddPackage("vnfd-at-the-nfvo", archive)

	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-nfvo"},
		Spec: v1alpha1.ServiceSpec{Source: v1alpha1.Source{VnfPackage: &v1alpha1.VnfPackageSource{VnfdID: "vnfd-at-the-nfvo"}}}}
	g.Expect(env.client.Create(context.Background(), svc)).To(Succeed())
	svc = waitReady(t, client.ObjectKeyFromObject(svc))
	g.Expect(string(svc.Status.Outputs["version"].Raw)).To(Equal(`"nfvo"`))
	g.Expect(svc.Status.Package.Revision).To(Equal("sha256:" + source.SHA256(archive)))

	// A reconcile asked for and handled fetches nothing again: a VNFD id names one version.
	patch := client.MergeFrom(svc.DeepCopy())
	svc.Annotations = map[string]string{v1alpha1.ReconcileRequestAnnotation: "again"}
	g.Expect(env.client.Patch(context.Background(), svc, patch)).To(Succeed())
	g.Eventually(func() string { return getService(g, client.ObjectKeyFromObject(svc)).Status.LastHandledReconcileAt }, time.Minute).Should(Equal("again"))
	g.Expect(env.nfvo.Downloads("vnfd-at-the-nfvo")).To(Equal(1))
}
