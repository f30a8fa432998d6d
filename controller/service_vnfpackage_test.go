package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/vnfpackages"
)

// onboardHello onboards the test package cnf-manifests as a VnfPackage of ns and waits
// until it is ONBOARDED.
func onboardHello(t *testing.T, ns, name string) *v1alpha1.VnfPackage {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	archive, err := vnfpackages.CSAR("cnf-manifests", vnfpackages.Options{Manifest: "hello.mf"})
	g.Expect(err).NotTo(HaveOccurred())
	src, err := vnfpackages.Upload(ctx, env.client, ns, name, archive)
	g.Expect(err).NotTo(HaveOccurred())
	pkg, err := vnfpackages.Create(ctx, env.client, ns, name, src, nil)
	g.Expect(err).NotTo(HaveOccurred())
	return waitPackage(t, client.ObjectKeyFromObject(pkg), func(g Gomega, pkg *v1alpha1.VnfPackage) {
		g.Expect(pkg.Status.OnboardingState).To(Equal(v1alpha1.OnboardingOnboarded), "status: %+v", pkg.Status)
	})
}

// waitPackage waits until a VnfPackage passes check.
func waitPackage(t *testing.T, key client.ObjectKey, check func(Gomega, *v1alpha1.VnfPackage)) *v1alpha1.VnfPackage {
	t.Helper()
	var pkg *v1alpha1.VnfPackage
	NewWithT(t).Eventually(func(g Gomega) {
		pkg = &v1alpha1.VnfPackage{}
		g.Expect(env.client.Get(context.Background(), key, pkg)).To(Succeed())
		check(g, pkg)
	}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
	return pkg
}

// helloByVnfdID is a Service of ns deploying the VnfPackage of the hello CNF's VNFD id
// (flavour simple, its front and store).
func helloByVnfdID(ns, name string) *v1alpha1.Service {
	files := jsonList([]apiextensionsv1.JSON{{Raw: []byte(`"Files/kubernetes/front.yaml"`)}, {Raw: []byte(`"Files/kubernetes/store.yaml"`)}})
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	svc.Spec.Source = v1alpha1.Source{VnfPackage: &v1alpha1.VnfPackageSource{VnfdID: vnfpackages.HelloVnfdID}}
	svc.Spec.Instantiate = &v1alpha1.InstantiateRequest{FlavourID: "simple", AdditionalParams: map[string]apiextensionsv1.JSON{"lcm-kubernetes-def-files": files}}
	// Deleted, its objects are left: the test ground has no garbage collector to end the
	// foreground deletion of a StatefulSet.
	svc.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
	return svc
}

// waitApplied waits until a Service applied its objects for its current generation (its
// workloads' pods do not run on the API-server test ground: readiness is the node-mode
// tests').
func waitApplied(t *testing.T, key client.ObjectKey) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = getService(g, key)
		g.Expect(applied(svc)).To(BeTrue(), "conditions: %+v", svc.Status.Conditions)
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	return svc
}

// applied tells whether a Service's current generation was applied, and nothing stalls it.
func applied(svc *v1alpha1.Service) bool {
	c := condition(svc, v1alpha1.ConditionApplied)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == svc.Generation && condition(svc, v1alpha1.ConditionStalled) == nil
}

// A Service names its package by VNFD id: it is labelled with it, waits (stalled) while
// no package holds the id, and once one is onboarded deploys exactly the revision its
// onboarding verified, reporting the VNF's identity. The package is then IN_USE, and a
// delete of it waits (the finalizer) until no Service names it.
func TestServiceByVnfdID(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	svc := helloByVnfdID(ns, "cnf")
	g.Expect(env.client.Create(ctx, svc)).To(Succeed())
	key := client.ObjectKeyFromObject(svc)
	stalled := waitStalled(t, key, v1alpha1.ReasonVnfPackageNotFound)
	g.Expect(condition(stalled, v1alpha1.ConditionStalled).Message).To(Equal("no VnfPackage of namespace " + ns + " holds VNFD " + vnfpackages.HelloVnfdID))
	g.Expect(stalled.Labels).To(HaveKeyWithValue(v1alpha1.LabelVnfdID, vnfpackages.HelloVnfdID))

	pkg := onboardHello(t, ns, "hello")
	ready := waitApplied(t, key)
	g.Expect(ready.Status.Package.Revision).To(Equal(pkg.Status.Revision))
	g.Expect(ready.Status.VNF.VnfdID).To(Equal(vnfpackages.HelloVnfdID))
	g.Expect(ready.Status.VNF.VnfProductName).To(Equal("Hello CNF"))

	pkgKey := client.ObjectKeyFromObject(pkg)
	waitPackage(t, pkgKey, func(g Gomega, pkg *v1alpha1.VnfPackage) {
		g.Expect(pkg.Status.UsageState).To(Equal(v1alpha1.PackageInUse))
		g.Expect(controllerutil.ContainsFinalizer(pkg, v1alpha1.VnfPackageFinalizer)).To(BeTrue())
	})
	g.Expect(env.client.Delete(ctx, pkg)).To(Succeed())
	deleting := waitPackage(t, pkgKey, func(g Gomega, pkg *v1alpha1.VnfPackage) {
		g.Expect(pkg.DeletionTimestamp).NotTo(BeNil())
	})
	g.Expect(deleting.Status.UsageState).To(Equal(v1alpha1.PackageInUse))
	handledReconcile(t, key)
	g.Expect(applied(getService(g, key))).To(BeTrue(), "the Service running the package keeps running")
	g.Expect(env.client.Get(ctx, pkgKey, &v1alpha1.VnfPackage{})).To(Succeed(), "a package in use stays")

	g.Expect(env.client.Delete(ctx, getService(g, key))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, pkgKey, &v1alpha1.VnfPackage{}))
	}, 60*time.Second, 100*time.Millisecond).Should(BeTrue(), "once no Service names it, the package goes")
}

// A DISABLED package is not newly instantiated: a new Service naming it stalls with
// VnfPackageDisabled, while the Service already running it keeps running. Enabled again,
// the new Service fetches it.
func TestDisabledPackage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	pkg := onboardHello(t, ns, "hello")
	running := helloByVnfdID(ns, "running")
	g.Expect(env.client.Create(ctx, running)).To(Succeed())
	runningKey := client.ObjectKeyFromObject(running)
	waitApplied(t, runningKey)

	patch := client.MergeFrom(pkg.DeepCopy())
	pkg.Spec.OperationalState = v1alpha1.PackageDisabled
	g.Expect(env.client.Patch(ctx, pkg, patch)).To(Succeed())
	fresh := helloByVnfdID(ns, "fresh")
	g.Expect(env.client.Create(ctx, fresh)).To(Succeed())
	freshKey := client.ObjectKeyFromObject(fresh)
	stalled := waitStalled(t, freshKey, v1alpha1.ReasonVnfPackageDisabled)
	g.Expect(condition(stalled, v1alpha1.ConditionStalled).Message).To(ContainSubstring("VnfPackage hello is DISABLED: it cannot be newly instantiated"))
	g.Expect(stalled.Status.Inventory).To(BeEmpty(), "nothing of it deployed")
	handledReconcile(t, runningKey)
	g.Expect(applied(getService(g, runningKey))).To(BeTrue(), "the Service running it keeps running")

	patch = client.MergeFrom(pkg.DeepCopy())
	pkg.Spec.OperationalState = v1alpha1.PackageEnabled
	g.Expect(env.client.Patch(ctx, pkg, patch)).To(Succeed())
	// Fetched now (both Services render the same objects: what follows is a take-over
	// refusal, not the package's).
	g.Eventually(func(g Gomega) {
		source := condition(getService(g, freshKey), v1alpha1.ConditionSourceReady)
		g.Expect(source).NotTo(BeNil())
		g.Expect(source.Status).To(Equal(metav1.ConditionTrue), "%+v", source)
		g.Expect(source.Message).To(ContainSubstring(pkg.Status.Revision))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}

// The VnfPackages are read as the identity the Service acts with: an account that may
// not list them stalls the Service (AccessDenied); once it may, the package is fetched.
func TestVnfPackageReadAsTheServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	onboardHello(t, ns, "hello")
	g.Expect(env.client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nfvo",
		Labels: map[string]string{v1alpha1.LabelUsableByServices: "true"}}})).To(Succeed())
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nfvo"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	g.Expect(env.client.Create(ctx, role)).To(Succeed())
	g.Expect(env.client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nfvo"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "nfvo"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "nfvo", Namespace: ns}}})).To(Succeed())
	svc := helloByVnfdID(ns, "cnf")
	svc.Spec.ServiceAccountName = "nfvo"
	g.Expect(env.client.Create(ctx, svc)).To(Succeed())
	key := client.ObjectKeyFromObject(svc)
	stalled := waitStalled(t, key, v1alpha1.ReasonAccessDenied)
	g.Expect(condition(stalled, v1alpha1.ConditionStalled).Message).To(ContainSubstring("reading the VnfPackages of namespace " + ns))

	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{"calaf.io"}, Resources: []string{"vnfpackages"}, Verbs: []string{"get", "list"}})
	g.Expect(env.client.Update(ctx, role)).To(Succeed())
	handledReconcile(t, key)
	g.Eventually(func(g Gomega) {
		source := condition(getService(g, key), v1alpha1.ConditionSourceReady)
		g.Expect(source).NotTo(BeNil())
		g.Expect(source.Status).To(Equal(metav1.ConditionTrue), "%+v", source)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}
