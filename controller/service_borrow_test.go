package controller_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
)

// A tenant who may create Services gains no service account by naming it: where the
// operator may act as any account of the namespace (the default install), a Service acts
// only as one its namespace's admin offered to Services with the label
// calaf.io/usable-by-services=true. Until then it stalls with AccessDenied, and nothing is
// read or written as the account; once offered (and a reconcile asked for), it acts as it.
func TestServiceAccountMustBeOffered(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	tenantAccount(t, ns)
	sa := &corev1.ServiceAccount{}
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant"}, sa)).To(Succeed())
	delete(sa.Labels, v1alpha1.LabelUsableByServices)
	g.Expect(env.client.Update(ctx, sa)).To(Succeed())

	key := createAs(t, ns, "borrower", "tenant", tenantRenderer(`[ { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'borrowed' } } ]`))
	svc := waitStalled(t, key, v1alpha1.ReasonAccessDenied)
	g.Expect(condition(svc, v1alpha1.ConditionSourceReady).Message).To(Equal(
		"service account tenant is not usable by Services: its namespace's admin offers it with the label calaf.io/usable-by-services=true"))
	err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "borrowed"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing is applied as an account not offered: %v", err)
	g.Expect(svc.Status.Inventory).To(BeEmpty())

	sa.Labels = map[string]string{v1alpha1.LabelUsableByServices: "true"}
	g.Expect(env.client.Update(ctx, sa)).To(Succeed())
	updateService(t, key, func(svc *v1alpha1.Service) {
		svc.Annotations = map[string]string{v1alpha1.ReconcileRequestAnnotation: "offered"}
	})
	waitReady(t, key)
	cm := &corev1.ConfigMap{}
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "borrowed"}, cm)).To(Succeed())
}

// In lockdown mode a Service naming an account the operator may not impersonate (the
// admin did not grant it) stalls with AccessDenied saying so — not a fetch failure
// retried for ever.
func TestLockdownRefusesAccountsNotGranted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env.stop() // the suite's operator handles every Service: a shard stands in for it
	t.Cleanup(func() { g.Expect(startOperator(false)).To(Succeed()) })
	startShard(t, "!"+shardKey)
	startLockdownShard(t, shardKey+"=lockdown")

	ns := newNamespace(t)
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder", Labels: map[string]string{shardKey: "lockdown"}},
		Spec: v1alpha1.ServiceSpec{Source: upload(t, ns, "intruder", map[string]string{"service.yaml": tenantRenderer(`[]`)}), ServiceAccountName: "intruder"}}
	g.Expect(env.client.Create(ctx, svc)).To(Succeed())
	svc = waitStalled(t, client.ObjectKeyFromObject(svc), v1alpha1.ReasonAccessDenied)
	g.Expect(condition(svc, v1alpha1.ConditionSourceReady).Message).To(Equal(
		"the operator may not act as service account intruder of namespace " + ns +
			": the cluster admin grants it (impersonate on serviceaccounts named intruder, deploy/rbac/lockdown)"))
}

// startLockdownShard starts an operator in lockdown mode (--default-service-account
// calaf-tenant) for the Services selector selects, as a user of its own with the RBAC of
// deploy/rbac/lockdown, and stops it when the test ends.
func startLockdownShard(t *testing.T, selector string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	const user = "calaf-lockdown-operator"
	for _, obj := range lockdownRoles(t) {
		if err := env.client.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	state := newNamespace(t)
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	bindings := []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "calaf-lockdown-test-"}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "calaf-operator-lockdown"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "calaf-lockdown-test-"}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "calaf-operator-impersonate"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: state, Name: "state"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "update", "delete"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: state, Name: "state"}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "state"}},
	}
	for _, obj := range bindings {
		g.Expect(env.client.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = env.client.Delete(context.Background(), obj) })
	}
	authenticated, err := env.testEnv.AddUser(envtest.User{Name: user}, env.config)
	g.Expect(err).NotTo(HaveOccurred())
	parsed, err := labels.Parse(selector)
	g.Expect(err).NotTo(HaveOccurred())
	opts := env.opts
	opts.ServiceSelector, opts.Registry = parsed, prometheus.NewRegistry()
	opts.DefaultServiceAccount, opts.StateNamespace = "calaf-tenant", state
	process, err := operator.NewProcess(authenticated.Config(), opts, zap.New(zap.Level(zapLevel())))
	g.Expect(err).NotTo(HaveOccurred())
	mgr, _, err := process.NewManager()
	g.Expect(err).NotTo(HaveOccurred())
	runCtx, cancel := context.WithCancel(env.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(runCtx); err != nil {
			t.Errorf("lockdown shard %s: %v", selector, err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// lockdownRoles are the ClusterRoles of deploy/rbac/lockdown as shipped.
func lockdownRoles(t *testing.T) []client.Object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "rbac", "lockdown", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var objects []client.Object
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			break
		}
		if obj.GetKind() == "ClusterRole" {
			objects = append(objects, obj)
		}
	}
	if len(objects) != 2 {
		t.Fatalf("deploy/rbac/lockdown/role.yaml has %d ClusterRoles, want 2", len(objects))
	}
	return objects
}
