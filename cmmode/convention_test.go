package cmmode

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Dotted keys win over spec.yaml and take the type the CRD's schema gives their field;
// under inputs (no schema) a value is read as YAML; a value that is not of its field's
// type is refused naming its key.
func TestSpecSource(t *testing.T) {
	g := NewWithT(t)
	schemas, err := NewSchemas()
	g.Expect(err).NotTo(HaveOccurred())
	data := map[string]string{
		KeySpec:                   "source: {url: https://packages.example/p.csar}\nsuspend: false\ninputs: {replicas: 1, name: a}\n",
		"spec.suspend":            "true",
		"spec.inputs.replicas":    "3",
		"spec.inputs.ports":       "[80, 443]",
		"spec.source.sha256":      "1234",
		"spec.interval":           "30s",
		"spec.source.git.path":    "deploy",
		"spec.instantiationState": "INSTANTIATED",
	}
	spec, err := specSource(data, schemas.structural("Service"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(spec).To(HaveKeyWithValue("suspend", true))
	g.Expect(spec["inputs"]).To(Equal(map[string]any{"replicas": int64(3), "name": "a", "ports": []any{int64(80), int64(443)}}))
	g.Expect(spec["source"]).To(HaveKeyWithValue("sha256", "1234"), "a string field stays text")
	g.Expect(spec["source"]).To(HaveKeyWithValue("git", map[string]any{"path": "deploy"}))
	g.Expect(spec).To(HaveKeyWithValue("interval", "30s"))

	_, err = specSource(map[string]string{KeySpec: "source: {url: u}\n", "spec.suspend": "maybe"}, schemas.structural("Service"))
	g.Expect(err).To(MatchError(ContainSubstring("key spec.suspend")))
	_, err = specSource(map[string]string{KeySpec: "source: [1\n"}, schemas.structural("Service"))
	g.Expect(err).To(MatchError(ContainSubstring("key spec.yaml")))
}

// A Service's custom resource and its ConfigMap convert into each other: the ConfigMap
// carries the convention's labels and the spec as written; back, the dotted keys are
// folded in; an invalid one is refused with the API server's message.
func TestConvert(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	schemas, err := NewSchemas()
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello", Labels: map[string]string{LabelKind: "Service", LabelVersion: "v1alpha1", "team": "blue"}},
		Data: map[string]string{KeySpec: "source: {url: https://packages.example/p.csar}\n", "spec.inputs.replicas": "2"}}
	cr, err := schemas.FromConfigMap(ctx, cm)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cr.GetKind()).To(Equal("Service"))
	g.Expect(cr.GetLabels()).To(Equal(map[string]string{"team": "blue"}))
	g.Expect(cr.Object["spec"]).To(Equal(map[string]any{"source": map[string]any{"url": "https://packages.example/p.csar"}, "inputs": map[string]any{"replicas": int64(2)}}))
	back, err := schemas.ToConfigMap(ctx, cr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Labels).To(Equal(cm.Labels))
	g.Expect(back.Data).To(Equal(map[string]string{KeySpec: "inputs:\n  replicas: 2\nsource:\n  url: https://packages.example/p.csar\n"}))

	cm.Data["spec.source.oci.url"] = "oci://registry.example/p"
	_, err = schemas.FromConfigMap(ctx, cm)
	g.Expect(err).To(MatchError(`Service.calaf.io "hello" is invalid: spec.source: Invalid value: exactly one of url, upload, git, oci and vnfPackage must be set`))
}
