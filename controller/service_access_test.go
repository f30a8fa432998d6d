package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// references and foreignNamespaces find what an object uses beyond itself.
func TestReferences(t *testing.T) {
	g := NewWithT(t)
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "a"},
		"spec": map[string]any{
			"serviceAccountName": "admin",
			"imagePullSecrets":   []any{map[string]any{"name": "pull"}},
			"containers": []any{map[string]any{"name": "c", "env": []any{map[string]any{"name": "X",
				"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "env", "key": "k"}}}}}},
			"volumes": []any{map[string]any{"name": "v", "projected": map[string]any{"sources": []any{
				map[string]any{"secret": map[string]any{"name": "projected"}}}}},
				map[string]any{"name": "csi", "csi": map[string]any{"driver": "d", "nodePublishSecretRef": map[string]any{"name": "csi"}}}},
		}}}
	var got []string
	for _, ref := range references(pod) {
		got = append(got, ref.kind+" "+ref.name+" at "+ref.at)
	}
	g.Expect(got).To(ConsistOf(
		"ServiceAccount admin at spec.serviceAccountName",
		"Secret pull at spec.imagePullSecrets",
		"Secret env at spec.containers[0].env[0].valueFrom.secretKeyRef",
		"Secret projected at spec.volumes[0].projected.sources[0].secret",
		"Secret csi at spec.volumes[1].csi.nodePublishSecretRef",
	))
	binding := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "b", "namespace": "a"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "x", "namespace": "kube-system"}, map[string]any{"kind": "ServiceAccount", "name": "y", "namespace": "a"}}}}
	g.Expect(foreignNamespaces(binding, "a")).To(Equal([]string{`subjects[0].namespace ("kube-system")`}))
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"},
		"stringData": map[string]any{"namespace": "elsewhere", "secretRef": map[string]any{"name": "x"}}}}
	g.Expect(references(secret)).To(BeEmpty())
	g.Expect(foreignNamespaces(secret, "a")).To(BeEmpty())
}
