package controller_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"calaf.io/calaf/api/v1alpha1"
)

// Packages that end the worker compiling or rendering them (package worker): in the
// operator's own process they would end it, and every Service with it.
const (
	// derivationCycle makes Puccini's Go code recurse until its stack overflows.
	derivationCycle = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
data_types:
  A:
    derived_from: B
  B:
    derived_from: A
topology_template:
  inputs:
    x:
      type: A
      default: {}
  node_templates:
    cm:
      type: calaf.nodes.ConfigMap
`
	// memoryBomb doubles a string in a TOSCA function, evaluated when rendering.
	memoryBomb = `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:tosca.function.probe: |-
    exports.evaluate = function() { let s = 'x'; while (true) { s = s + s; } };
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
    cm:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          value: { probe: [] }
`
)

// A package that crashes its worker, created with a good Service, fails alone: the good
// Service becomes Ready, the bad ones stall with why, and the operator — this test's
// process — goes on reconciling (the good Service takes a change afterwards).
func TestCrashingPackagesFailAlone(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	good := createService(t, ns, "good", upload(t, ns, "good", layeredPackage()), map[string]string{"greeting": `"hello"`})
	overflow := createService(t, ns, "overflow", upload(t, ns, "overflow", map[string]string{"service.yaml": derivationCycle}), nil)
	bomb := createService(t, ns, "bomb", upload(t, ns, "bomb", map[string]string{"service.yaml": memoryBomb}), nil)

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
