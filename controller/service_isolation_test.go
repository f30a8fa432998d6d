package controller_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/hostile"
)

// A package that crashes its worker, created with a good Service, fails alone: the good
// Service becomes Ready, the bad ones stall with why, and the operator — this test's
// process — goes on reconciling (the good Service takes a change afterwards).
func TestCrashingPackagesFailAlone(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	good := createService(t, ns, "good", upload(t, ns, "good", layeredPackage()), map[string]string{"greeting": `"hello"`})
	overflow := createService(t, ns, "overflow", upload(t, ns, "overflow", map[string]string{"service.yaml": hostile.DerivationCycle}), nil)
	bomb := createService(t, ns, "bomb", upload(t, ns, "bomb", map[string]string{"service.yaml": hostile.MemoryBomb}), nil)

	waitReady(t, good)
	svc := waitStalled(t, overflow, v1alpha1.ReasonInvalidPackage)
	g.Expect(condition(svc, v1alpha1.ConditionReady).Message).To(Equal(
		"service.yaml: compile of the package crashed: stack overflow in github.com/tliron/puccini/tosca/grammars/tosca_v2_0.(*DataType).GetInternalTypeName (a goroutine stack above 64 MiB: a cycle in the package's types or data?)"))
	svc = waitStalled(t, bomb, v1alpha1.ReasonRenderFailed)
	g.Expect(condition(svc, v1alpha1.ConditionReady).Message).To(Equal("service.yaml: render of the package exceeded 512 MiB of memory"))

	updateService(t, good, func(svc *v1alpha1.Service) { svc.Spec.Inputs = jsonInputs(map[string]string{"greeting": `"again"`}) })
	waitReady(t, good)
	g.Expect(getConfigMap(g, ns, "good-base").Data).To(HaveKeyWithValue("greeting", "again"))
}
