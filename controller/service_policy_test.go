package controller_test

import (
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"calaf.io/calaf/api/v1alpha1"
)

// requestedResource is the resource an API request path names: "clusterrolebindings" for
// /apis/rbac.authorization.k8s.io/v1/clusterrolebindings/x, "configmaps" for
// /api/v1/namespaces/ns/configmaps/y.
func requestedResource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return ""
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return ""
	}
	return parts[0]
}

// requestsFor returns how many requests the operator sent about a resource so far.
func requestsFor(resource string) int64 {
	counter, _ := env.resources.LoadOrStore(resource, &atomic.Int64{})
	return counter.(*atomic.Int64).Load()
}

// bindingRenderer is a package whose renderer emits a ClusterRoleBinding to
// cluster-admin beside a ConfigMap.
const bindingRenderer = `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:vendor.render.thing: |-
    exports.render = function (node, ctx) {
      return [
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'innocent' }, data: { a: 'b' } },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'take-over' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [ { kind: 'ServiceAccount', name: 'default', namespace: ctx.service.namespace } ] },
      ];
    };
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  vendor.nodes.Thing:
    derived_from: calaf.nodes.Root
    metadata:
      calaf.render: vendor.render.thing
topology_template:
  node_templates:
    thing:
      type: vendor.nodes.Thing
`

// A renderer emitting a ClusterRoleBinding is refused by the render policy before any
// request to the API server: the Service stalls with PolicyViolation naming the object,
// the operator never asked anything about ClusterRoleBindings, and the ConfigMap beside it
// was not applied either.
func TestPolicyRefusesBeforeAnyRequest(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	before := requestsFor("clusterrolebindings")
	key := createService(t, ns, "binder", upload(t, ns, "binder", map[string]string{"service.yaml": bindingRenderer}), nil)
	svc := waitStalled(t, key, v1alpha1.ReasonPolicyViolation)
	g.Expect(condition(svc, v1alpha1.ConditionReady).Message).To(Equal(
		`service.yaml: node "thing": ClusterRoleBinding "take-over": refused by the render policy: ClusterRoleBinding.rbac.authorization.k8s.io is on the denylist (RBAC that grants cluster roles)`))
	g.Expect(condition(svc, v1alpha1.ConditionApplied).Reason).To(Equal(v1alpha1.ReasonPolicyViolation))
	g.Expect(requestsFor("clusterrolebindings")).To(Equal(before), "requests about ClusterRoleBindings")
	g.Expect(svc.Status.Inventory).To(BeEmpty())
	g.Expect(requestsFor("services")).To(BeNumerically(">", 0)) // the counter parses paths: Calaf's Services
}
