package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// tenantRenderer is a package whose one node renders what RENDER (a JavaScript array of
// objects) says.
func tenantRenderer(objects string) string {
	return strings.ReplaceAll(`tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:vendor.render.thing: |-
    exports.render = function (node, ctx) {
      return RENDER;
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
`, "RENDER", objects)
}

// tenantAccount makes the service account "tenant" of ns, offered to Services, which may
// manage ConfigMaps, Deployments, Roles and RoleBindings, and get only the Secret
// "allowed".
func tenantAccount(t *testing.T, ns string) {
	t.Helper()
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	objects := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant", Labels: map[string]string{v1alpha1.LabelUsableByServices: "true"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "allowed"}, StringData: map[string]string{"a": "b"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forbidden"}, StringData: map[string]string{"password": "hunter2"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: all},
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}, Verbs: all},
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: all},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"allowed"}, Verbs: []string{"get"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tenant"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "tenant", Namespace: ns}}},
	}
	for _, obj := range objects {
		NewWithT(t).Expect(env.client.Create(context.Background(), obj)).To(Succeed())
	}
}

// createAs creates a Service acting as a service account.
func createAs(t *testing.T, ns, name, account, pkg string) client.ObjectKey {
	t.Helper()
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ServiceSpec{
		Source: upload(t, ns, name, map[string]string{"service.yaml": pkg}), ServiceAccountName: account}}
	NewWithT(t).Expect(env.client.Create(context.Background(), svc)).To(Succeed())
	return client.ObjectKeyFromObject(svc)
}

// A Service acting as a service account cannot make a pod mount or read a Secret that
// account may not get (Kubernetes itself does not check it when the account creates the
// Deployment): the Service stalls with AccessDenied naming the Secret and where, nothing of
// the render is applied, and the Secret's value reaches no status. The Secret it may get is
// let through.
func TestServiceAccountCannotMountSecretItCannotRead(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	tenantAccount(t, ns)
	key := createAs(t, ns, "leak", "tenant", tenantRenderer(`[
        { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'leak' }, spec: {
          selector: { matchLabels: { app: 'leak' } },
          template: { metadata: { labels: { app: 'leak' } }, spec: {
            containers: [ { name: 'c', image: 'busybox', envFrom: [ { secretRef: { name: 'allowed' } } ] } ],
            volumes: [ { name: 's', secret: { secretName: 'forbidden' } } ] } } } } ]`))
	svc := waitStalled(t, key, v1alpha1.ReasonAccessDenied)
	g.Expect(condition(svc, v1alpha1.ConditionReady).Message).To(Equal(
		`Deployment/leak spec.template.spec.volumes[0].secret uses Secret "forbidden", which service account tenant may not get`))
	err := env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "leak"}, &appsv1.Deployment{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Deployment must not exist: %v", err)
	g.Expect(svc.Status.Inventory).To(BeEmpty())
}

// roleOnly renders a Role; withBinding a RoleBinding of it to the account tenant too.
const (
	roleOnly = `{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'reader' },
          rules: [ { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] } ] }`
	withBinding = roleOnly + `, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'reader' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
          subjects: [ { kind: 'ServiceAccount', name: 'tenant', namespace: ctx.service.namespace } ] }`
)

// A Service naming a service account allowed to create Roles and RoleBindings creates
// them: the take-over check, the apply and the health reads all act as that account. So
// does prune: while the account may not delete RoleBindings, the one the package no
// longer renders stays and the prune fails naming the account; once it may (and a
// reconcile is asked for), it goes. And
// deletion: the Role goes with the Service.
func TestServiceAccountCreatesRoleBinding(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	tenantAccount(t, ns)
	key := createAs(t, ns, "binder", "tenant", tenantRenderer("[ "+withBinding+" ]"))
	waitReady(t, key)
	binding := &rbacv1.RoleBinding{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "reader"}, binding)).To(Succeed())
	g.Expect(binding.Labels).To(HaveKeyWithValue(v1alpha1.LabelService, "binder"))

	setTenantVerbs(t, ns, "rolebindings", "get", "list", "watch", "create", "update", "patch")
	src := upload(t, ns, "binder", map[string]string{"service.yaml": tenantRenderer("[ " + roleOnly + " ]")})
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Source = src })
	g.Eventually(func(g Gomega) {
		applied := condition(getService(g, key), v1alpha1.ConditionApplied)
		g.Expect(applied).NotTo(BeNil())
		g.Expect(applied.Reason).To(Equal(v1alpha1.ReasonPruneFailed))
		g.Expect(applied.Message).To(ContainSubstring(`User "system:serviceaccount:` + ns + `:tenant" cannot delete resource "rolebindings"`))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "reader"}, binding)).To(Succeed())

	setTenantVerbs(t, ns, "rolebindings", "get", "list", "watch", "create", "update", "patch", "delete")
	updateService(t, key, func(svc *v1alpha1.Service) { // as `calaf reconcile` asks: a stall waits for a change
		svc.Annotations = map[string]string{v1alpha1.ReconcileRequestAnnotation: "granted"}
	})
	waitReady(t, key)
	err := env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "reader"}, binding)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the RoleBinding is pruned: %v", err)

	g.Expect(env.client.Delete(context.Background(), &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "binder"}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "reader"}, &rbacv1.Role{}))
	}, 30*time.Second, 200*time.Millisecond).Should(BeTrue(), "the Role goes with the Service")
}

// setTenantVerbs sets the verbs of the account tenant on an RBAC resource.
func setTenantVerbs(t *testing.T, ns, resource string, verbs ...string) {
	t.Helper()
	role := &rbacv1.Role{}
	g := NewWithT(t)
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tenant"}, role)).To(Succeed())
	rules := []rbacv1.PolicyRule{{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{resource}, Verbs: verbs}}
	for _, rule := range role.Rules {
		if !slices.Contains(rule.Resources, resource) {
			rules = append(rules, rule)
		}
	}
	role.Rules = rules
	g.Expect(env.client.Update(context.Background(), role)).To(Succeed())
}
