package source_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/source"
)

// A Service acting as its own identity reads its upload as that identity; one whose
// identity may not read its ConfigMap does not get the package by its digest, even when
// another Service uploaded the same bytes and the store has them.
func TestUploadReadAsTheServiceIdentity(t *testing.T) {
	g := NewWithT(t)
	archive := csarOf(t, map[string]string{"service.yaml": template("hello")})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "pkg"}, BinaryData: map[string][]byte{source.UploadKey: archive}}
	allowed := secrets(cm)
	forbidden := fake.NewClientBuilder().WithScheme(operator.NewScheme()).WithObjects(cm).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return apierrors.NewForbidden(corev1.Resource("configmaps"), key.Name, nil)
		},
	}).Build()
	fetcher := &source.Fetcher{Store: newStore(t, 1<<30), Reader: secrets(), ReaderFor: func(svc *v1alpha1.Service) (client.Reader, error) {
		if svc.Name == "tenant" {
			return allowed, nil
		}
		return forbidden, nil
	}}
	service := func(name string) *v1alpha1.Service {
		svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name}}
		svc.Spec.Source = v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: "pkg", SHA256: source.SHA256(archive)}}
		return svc
	}

	_, err := fetcher.Fetch(context.Background(), service("tenant"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = fetcher.Fetch(context.Background(), service("intruder"))
	g.Expect(sourceError(err)).NotTo(BeNil())
	g.Expect(sourceError(err).Reason).To(Equal(v1alpha1.ReasonFetchFailed))
	g.Expect(err.Error()).To(ContainSubstring(`reading uploaded package ConfigMap "pkg": configmaps "pkg" is forbidden`))
}
