package cmmode_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/cmmode"
)

// What a lifecycle occurrence does to a Service through ConfigMap mode's client: a merge
// patch of its spec is admitted, moves the generation and is written into spec.yaml with
// the dotted keys folded in; a status patch touches the companion only; a write over a
// stale resourceVersion is a conflict, as the API server's.
func TestClientWrites(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "svc",
		Labels: map[string]string{cmmode.LabelKind: "Service", cmmode.LabelVersion: "v1alpha1"}},
		Data: map[string]string{cmmode.KeySpec: "source: {url: https://packages.example/p.csar}\n", "spec.inputs.replicas": "2"}}
	g.Expect(env.client.Create(ctx, cm)).To(Succeed())
	refused, err := env.store.Admit(ctx, cm)
	g.Expect(refused).To(BeNil())
	g.Expect(err).NotTo(HaveOccurred())

	svc := &v1alpha1.Service{}
	g.Expect(env.cm.Get(ctx, client.ObjectKeyFromObject(cm), svc)).To(Succeed())
	g.Expect(svc.Generation).To(BeEquivalentTo(1))
	stale := svc.DeepCopy()
	patch := client.MergeFrom(svc.DeepCopy())
	svc.Spec.Suspend = true
	g.Expect(env.cm.Patch(ctx, svc, patch)).To(Succeed())
	g.Expect(svc.Generation).To(BeEquivalentTo(2))
	g.Expect(env.client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveLen(1))
	g.Expect(cm.Data[cmmode.KeySpec]).To(ContainSubstring("suspend: true"))
	g.Expect(cm.Data[cmmode.KeySpec]).To(ContainSubstring("replicas: 2"))

	statusPatch := client.MergeFrom(svc.DeepCopy())
	svc.Status.ObservedGeneration = 2
	g.Expect(env.cm.Status().Patch(ctx, svc, statusPatch)).To(Succeed())
	before := cm.ResourceVersion
	g.Expect(env.client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Expect(cm.ResourceVersion).To(Equal(before), "a status write leaves the spec's ConfigMap alone")
	g.Expect(companion(g, ns, "svc").Data[cmmode.KeyStatus]).To(ContainSubstring("observedGeneration: 2"))

	stale.Spec.Suspend = false
	g.Expect(apierrors.IsConflict(env.cm.Update(ctx, stale))).To(BeTrue(), "an update over a stale resourceVersion")
	locked := client.MergeFromWithOptions(stale.DeepCopy(), client.MergeFromWithOptimisticLock{})
	stale.Status.ObservedGeneration = 1
	g.Expect(apierrors.IsConflict(env.cm.Status().Patch(ctx, stale, locked))).To(BeTrue(), "a locked status patch over a stale resourceVersion")
}
