package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

func modifyRequest(req v1alpha1.ModifyRequest) v1alpha1.OperationSpec {
	return v1alpha1.OperationSpec{Type: v1alpha1.OperationModify, Modify: &req}
}

// A MODIFY sets what SOL003 says of the instance — its name and description, its
// metadata merged as a JSON merge patch — in the Service's annotations; its rollback puts
// them back with the inputs; metadata past 16 KiB, metadata that is not an object, and a
// vnfdId for a Service whose source is not a VNF package are refused.
func TestModifyInstanceInformation(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	key := client.ObjectKey{Namespace: ns, Name: "cfg"}
	deploy(t, ns, "cfg", configTemplate("1", ""), nil)
	name, description := "cfg one", "the first"
	waitState(t, occurrence(t, ns, "cfg", modifyRequest(v1alpha1.ModifyRequest{VnfInstanceName: &name, VnfInstanceDescription: &description,
		Metadata: map[string]apiextensionsv1.JSON{"a": jsonOf(1), "b": jsonOf(map[string]int{"c": 2})}})), v1alpha1.StateCompleted, time.Minute)
	svc := getService(g, key)
	g.Expect(svc.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationVnfInstanceName, "cfg one"))
	g.Expect(svc.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationVnfInstanceDescription, "the first"))
	g.Expect(svc.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationVnfMetadata, `{"a":1,"b":{"c":2}}`))

	waitState(t, occurrence(t, ns, "cfg", modifyRequest(v1alpha1.ModifyRequest{
		Metadata: map[string]apiextensionsv1.JSON{"b": {Raw: []byte(`{"c":null}`)}, "d": jsonOf("x")}})), v1alpha1.StateCompleted, time.Minute)
	g.Expect(getService(g, key).Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationVnfMetadata, `{"a":1,"b":{},"d":"x"}`))

	// A change that fails is rolled back: the name and the inputs come back.
	broken := "broken"
	spec := modifyRequest(v1alpha1.ModifyRequest{VnfInstanceName: &broken, Inputs: map[string]apiextensionsv1.JSON{"greeting": jsonOf(map[string]int{"not": 1})}})
	spec.Timeout = &metav1.Duration{Duration: 5 * time.Second}
	op := waitState(t, occurrence(t, ns, "cfg", spec), v1alpha1.StateFailedTemp, time.Minute)
	g.Expect(getService(g, key).Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationVnfInstanceName, "broken"))
	g.Expect(op.Status.Previous.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationVnfInstanceName, "cfg one"))
	g.Expect(update(op, func(op *v1alpha1.Operation) { op.Spec.Resolution = v1alpha1.ResolutionRollback })).To(Succeed())
	waitState(t, op, v1alpha1.StateRolledBack, time.Minute)
	svc = waitReady(t, key)
	g.Expect(svc.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationVnfInstanceName, "cfg one"))
	g.Expect(svc.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationVnfMetadata, `{"a":1,"b":{},"d":"x"}`))
	g.Expect(svc.Spec.Inputs).To(BeEmpty())

	large := waitState(t, occurrence(t, ns, "cfg", modifyRequest(v1alpha1.ModifyRequest{
		Metadata: map[string]apiextensionsv1.JSON{"blob": jsonOf(strings.Repeat("x", 17<<10))}})), v1alpha1.StateFailed, time.Minute)
	g.Expect(large.Status.Message).To(MatchRegexp(`^refused: metadata of Service cfg: the metadata would be \d+ bytes, more than 16384$`))
	vnfd := waitState(t, occurrence(t, ns, "cfg", modifyRequest(v1alpha1.ModifyRequest{VnfdID: "vnfd-2"})), v1alpha1.StateFailed, time.Minute)
	g.Expect(vnfd.Status.Message).To(Equal("refused: Service cfg does not name its package by VNFD id (spec.source.vnfPackage): vnfdId cannot change it (change its package with CHANGE_PACKAGE)"))

	svc = getService(g, key)
	patch := client.MergeFrom(svc.DeepCopy())
	svc.Annotations[v1alpha1.AnnotationVnfMetadata] = "[1, 2]"
	g.Expect(env.client.Patch(t.Context(), svc, patch)).To(Succeed())
	garbled := waitState(t, occurrence(t, ns, "cfg", modifyRequest(v1alpha1.ModifyRequest{Metadata: map[string]apiextensionsv1.JSON{"a": jsonOf(2)}})), v1alpha1.StateFailed, time.Minute)
	g.Expect(garbled.Status.Message).To(Equal("refused: metadata of Service cfg: the annotation calaf.io/vnf-metadata is not a JSON object"))
}

// A MODIFY of vnfdId moves a Service that names its VNF package by VNFD id to another
// one; NOT_INSTANTIATED, it needs no package to be there.
func TestModifyVnfdID(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	key := createNotInstantiated(t, ns, "vnf", v1alpha1.Source{VnfPackage: &v1alpha1.VnfPackageSource{VnfdID: "vnfd-1"}})
	waitState(t, occurrence(t, ns, "vnf", modifyRequest(v1alpha1.ModifyRequest{VnfdID: "vnfd-2"})), v1alpha1.StateCompleted, time.Minute)
	svc := waitNotInstantiated(t, key)
	g.Expect(svc.Spec.Source.VnfPackage.VnfdID).To(Equal("vnfd-2"))
}
