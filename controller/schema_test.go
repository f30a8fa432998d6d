package controller_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// The API server of the test ground validates Services against the CRD's OpenAPI schema
// and CEL rules: a bad object is refused with the field named, a good one is stored with
// its defaults; built-in kinds (a Deployment) are served too.
func TestAPIServerValidatesServices(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	sha := sha256Hex("package")

	service := func(name string, mutate func(*v1alpha1.Service)) *v1alpha1.Service {
		svc := &v1alpha1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.ServiceSpec{
				Suspend: true, // stored only: this test is about the schema
				Source:  v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: "pkg", SHA256: sha}},
			},
		}
		if mutate != nil {
			mutate(svc)
		}
		return svc
	}

	invalid := []struct {
		name, field string
		mutate      func(*v1alpha1.Service)
	}{
		{"no-source", "exactly one of url, upload, git, oci and vnfPackage must be set", func(s *v1alpha1.Service) { s.Spec.Source = v1alpha1.Source{} }},
		{"two-sources", "exactly one of url, upload, git, oci and vnfPackage must be set", func(s *v1alpha1.Service) { s.Spec.Source.URL = "https://example.com/x.csar" }},
		{"bad-policy", "spec.deletionPolicy", func(s *v1alpha1.Service) { s.Spec.DeletionPolicy = "Shred" }},
		{"bad-digest", "spec.source.upload.sha256", func(s *v1alpha1.Service) { s.Spec.Source.Upload.SHA256 = "not-a-digest" }},
		{"bad-url", "spec.source.url", func(s *v1alpha1.Service) {
			s.Spec.Source = v1alpha1.Source{URL: "ftp://example.com/x.csar"}
		}},
		{"bad-git-url", "spec.source.git.url", func(s *v1alpha1.Service) {
			s.Spec.Source = v1alpha1.Source{Git: &v1alpha1.GitSource{URL: "file:///etc"}}
		}},
	}
	for _, tc := range invalid {
		err := env.client.Create(ctx, service(tc.name, tc.mutate))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", tc.name, err)
		g.Expect(err.Error()).To(ContainSubstring(tc.field), tc.name)
	}

	stored := service("good", nil)
	g.Expect(env.client.Create(ctx, stored)).To(Succeed())
	g.Expect(env.client.Get(ctx, client.ObjectKeyFromObject(stored), stored)).To(Succeed())
	g.Expect(stored.Spec.DeletionPolicy).To(Equal(v1alpha1.DeletionPolicyDelete), "defaulted by the schema")
	g.Expect(stored.Spec.Interval).To(Equal(&metav1.Duration{Duration: v1alpha1.DefaultInterval}), "defaulted by the schema")
	g.Expect(stored.Spec.Timeout).To(Equal(&metav1.Duration{Duration: v1alpha1.DefaultTimeout}), "defaulted by the schema")

	labels := map[string]string{"app": "schema-test"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "calaf.local/busybox:1"}}},
			},
		},
	}
	g.Expect(env.client.Create(ctx, deployment)).To(Succeed())
	g.Expect(deployment.UID).NotTo(BeEmpty())
}
