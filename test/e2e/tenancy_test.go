//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// lockdownAccount is the service account of the lockdown operator the tests start; it
// gets deploy/rbac/lockdown as shipped.
const lockdownAccount = "calaf-lockdown"

// configuredPackage is a Deployment whose configure operation (a JavaScript artifact the
// operator streams into its pod over exec) sets an attribute.
const configuredPackage = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
    app:
      type: calaf.nodes.Deployment
      properties:
        image: busybox:1.36
        command: [ sh, -c, 'exec sleep 1000000' ]
      artifacts:
        configure:
          type: calaf.artifacts.JavaScript
          file: Artifacts/configure.js
      interfaces:
        Standard:
          operations:
            configure:
              implementation: configure
              inputs:
                who: tenant
`

// lockdown is an operator in lockdown mode, run instead of the suite's.
type lockdown struct {
	operator   *framework.Operator
	kubeconfig string
}

// startLockdown stops the suite's operator (started again when t ends) and starts one in
// lockdown mode, as its own service account with the RBAC of deploy/rbac/lockdown.
func startLockdown(t *testing.T, c *framework.Cluster) *lockdown {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(framework.InstallLockdownRBAC(ctx, suite.client, lockdownAccount)).To(Succeed())
	dir := t.TempDir()
	kubeconfig, err := framework.AccountKubeconfig(ctx, c.Clientset, suite.kubeconfig, dir, framework.OperatorNamespace, lockdownAccount)
	g.Expect(err).NotTo(HaveOccurred())
	suite.operator.Stop()
	t.Cleanup(func() { g.Expect(suite.operator.Start()).To(Succeed()) })
	op := &framework.Operator{Binary: suite.calaf, LogPath: filepath.Join(dir, "lockdown.log"), Args: []string{
		"--kubeconfig=" + kubeconfig, "--progress-interval=2s", "--package-cache-dir=" + filepath.Join(dir, "packages"),
		"--default-service-account=calaf-tenant", "--state-namespace=" + framework.OperatorNamespace,
		"--outbound-allow=" + subscriberAddress + "/32",
	}}
	g.Expect(op.Start()).To(Succeed())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("lockdown operator log:\n%s", op.Tail(60))
		}
		op.Stop()
	})
	return &lockdown{operator: op, kubeconfig: kubeconfig}
}

// tenantNamespace makes a namespace with the accounts a tenant gives its Services:
// calaf-tenant (the default) may run Deployments with ConfigMaps and Services, exec in
// their pods, and read the Secret "visible" only; deployer may manage Roles and RoleBindings, and the operator may act as
// it in this namespace only (a RoleBinding of the admin). The Secret "hidden" holds a
// password and a token (labelled for subscriptions, which lockdown does not heed).
func tenantNamespace(t *testing.T, c *framework.Cluster) string {
	t.Helper()
	ns := c.Namespace(t, "e2e-tenant")
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	read := []string{"get", "list", "watch"}
	objects := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "calaf-tenant"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hidden", Labels: map[string]string{v1alpha1.LabelSecretUse: v1alpha1.SecretUseSubscriptions}},
			StringData: map[string]string{"password": "hunter2", "token": "hidden-token"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "visible"}, StringData: map[string]string{"greeting": "hello", "token": "visible-token"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "calaf-tenant"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: all},
			{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: all},
			{APIGroups: []string{""}, Resources: []string{"pods", "events"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create", "get"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"visible"}, Verbs: []string{"get"}},
		}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: all},
		}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "calaf-e2e-impersonate-deployer"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{"deployer"}, Verbs: []string{"impersonate"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "calaf-impersonate-deployer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "calaf-e2e-impersonate-deployer"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: lockdownAccount, Namespace: framework.OperatorNamespace}}},
	}
	for _, name := range []string{"calaf-tenant", "deployer"} {
		objects = append(objects, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}})
	}
	for _, obj := range objects {
		err := suite.client.Create(context.Background(), obj)
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
	}
	return ns
}

// In lockdown mode every Service acts as a service account of its namespace, whatever the
// operator itself may do: a Deployment mounting the Secret its account may read becomes
// Ready (apply, health and pods read as calaf-tenant), and so does one whose configure
// operation runs in its pod (exec as calaf-tenant) and sets an attribute; one mounting a Secret it may not
// read is refused with AccessDenied before anything is applied, and the password reaches
// no status; a privileged or host-network pod is refused by the render policy although
// the account may create Deployments; a Service naming deployer, which may create
// RoleBindings, creates one (the operator itself may not even read them), but not one
// binding an account of another namespace; a Service naming an account the operator may
// not act as stalls with AccessDenied saying so.
func TestLockdown(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := tenantNamespace(t, c)
	l := startLockdown(t, c)
	ctx := context.Background()

	deployUnchecked(t, suite.kubeconfig, ns, "visible", deploymentWith("visible", "",
		"envFrom: [ { secretRef: { name: 'visible' } } ]"))
	deployUnchecked(t, suite.kubeconfig, ns, "leak", deploymentWith("leak",
		"volumes: [ { name: 'loot', secret: { secretName: 'hidden' } } ],",
		"volumeMounts: [ { name: 'loot', mountPath: '/loot' } ]"))
	deployUnchecked(t, suite.kubeconfig, ns, "host", deploymentWith("host", "hostNetwork: true,",
		"securityContext: { privileged: true }"))
	deployUnchecked(t, suite.kubeconfig, ns, "binder", renderPackage(`[
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'config-reader' },
          rules: [ { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] } ] },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'config-reader' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'config-reader' },
          subjects: [ { kind: 'ServiceAccount', name: 'calaf-tenant', namespace: ctx.service.namespace } ] } ]`),
		"--service-account", "deployer")
	deployUnchecked(t, suite.kubeconfig, ns, "intruder", renderPackage(`[]`), "--service-account", "intruder")
	deployUnchecked(t, suite.kubeconfig, ns, "outsider", renderPackage(`[
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'outsider' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'config-reader' },
          subjects: [ { kind: 'ServiceAccount', name: 'default', namespace: 'kube-system' } ] } ]`),
		"--service-account", "deployer")
	deployFiles(t, suite.kubeconfig, ns, "configured", map[string]string{"service.yaml": configuredPackage,
		"Artifacts/configure.js": "calaf.setAttribute('configured', 'as ' + calaf.inputs.who);\n"})

	waitReady(t, ns, "visible", 2*time.Minute)
	svc := waitReady(t, ns, "configured", 3*time.Minute)
	g.Expect(svc.Status.Nodes).To(HaveLen(1))
	g.Expect(svc.Status.Nodes[0].Attributes).To(HaveKey("configured"))
	g.Expect(string(svc.Status.Nodes[0].Attributes["configured"].Raw)).To(Equal(`"as tenant"`))

	svc = waitFailed(t, ns, "leak", v1alpha1.ReasonAccessDenied, func() string { return l.operator.Tail(30) })
	g.Expect(readyMessage(svc)).To(Equal(`Deployment/leak spec.template.spec.volumes[0].secret uses Secret "hidden", which service account calaf-tenant may not get`))
	g.Expect(isStalled(svc)).To(BeTrue())
	g.Expect(statusJSON(svc)).NotTo(ContainSubstring("hunter2"))
	g.Expect(svc.Status.Inventory).To(BeEmpty())
	_, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, "leak", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment leak: %v", err)

	svc = waitFailed(t, ns, "host", v1alpha1.ReasonPolicyViolation, func() string { return l.operator.Tail(30) })
	g.Expect(readyMessage(svc)).To(And(ContainSubstring(`violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), privileged (container`), ContainSubstring("must not set securityContext.privileged=true")))
	_, err = c.Clientset.AppsV1().Deployments(ns).Get(ctx, "host", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment host: %v", err)

	waitReady(t, ns, "binder", 2*time.Minute)
	binding, err := c.Clientset.RbacV1().RoleBindings(ns).Get(ctx, "config-reader", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(binding.Labels).To(HaveKeyWithValue(v1alpha1.LabelService, "binder"))
	g.Expect(operatorMay(t, c, ns, "get", "rolebindings")).To(BeFalse(), "the lockdown operator itself may not read RoleBindings")

	svc = waitFailed(t, ns, "outsider", v1alpha1.ReasonAccessDenied, func() string { return l.operator.Tail(30) })
	g.Expect(readyMessage(svc)).To(Equal(`RoleBinding/outsider subjects[0].namespace ("kube-system") names another namespace: cross-namespace references are refused in lockdown mode`))
	_, err = c.Clientset.RbacV1().RoleBindings(ns).Get(ctx, "outsider", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "RoleBinding outsider: %v", err)

	svc = waitFailed(t, ns, "intruder", v1alpha1.ReasonAccessDenied, func() string { return l.operator.Tail(30) })
	g.Expect(readyMessage(svc)).To(Equal("the operator may not act as service account intruder of namespace " + ns +
		": the cluster admin grants it (impersonate on serviceaccounts named intruder, deploy/rbac/lockdown)"))
	g.Expect(isStalled(svc)).To(BeTrue(), "an account not granted stalls the Service: no fetch retried for ever")

	state := &corev1.Secret{}
	g.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: framework.OperatorNamespace, Name: ns + ".visible.calaf-state"}, state)).To(Succeed())
	g.Expect(state.Annotations).To(HaveKeyWithValue("calaf.io/state-of-service", ns+"/visible"))
	recordCanI(t, l, ns)
}

// operatorMay tells whether the lockdown operator's own account may do verb on resource
// in ns (a SubjectAccessReview).
func operatorMay(t *testing.T, c *framework.Cluster, ns, verb, resource string) bool {
	t.Helper()
	review, err := c.Clientset.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + framework.OperatorNamespace + ":" + lockdownAccount,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + framework.OperatorNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: resource},
		}}, metav1.CreateOptions{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return review.Status.Allowed
}

// recordCanI runs `kubectl auth can-i --list` as the lockdown operator in a tenant
// namespace and in its own, checks that it holds no Secret outside its own namespace and
// impersonates only named accounts, and writes the output to $CALAF_E2E_RECORD (for
// docs/security.md) when set.
func recordCanI(t *testing.T, l *lockdown, ns string) {
	t.Helper()
	g := NewWithT(t)
	kubectl := "kubectl"
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		kubectl = filepath.Join(assets, "kubectl")
	}
	run := func(args ...string) string {
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", l.kubeconfig}, args...)...)
		out, _ := cmd.CombinedOutput()
		return "$ kubectl " + strings.Join(args, " ") + "\n" + string(out)
	}
	tenant := run("auth", "can-i", "--list", "-n", ns)
	own := run("auth", "can-i", "--list", "-n", framework.OperatorNamespace)
	checks := run("auth", "can-i", "get", "secrets", "--all-namespaces") +
		run("auth", "can-i", "list", "pods", "--all-namespaces") +
		run("auth", "can-i", "create", "deployments", "-n", ns) +
		run("auth", "can-i", "impersonate", "serviceaccounts", "-n", ns) +
		run("auth", "can-i", "impersonate", "serviceaccounts/calaf-tenant", "-n", ns) +
		run("auth", "can-i", "impersonate", "serviceaccounts/deployer", "-n", ns) +
		run("auth", "can-i", "impersonate", "serviceaccounts/deployer", "-n", "default")
	for _, line := range strings.Split(tenant, "\n") {
		g.Expect(line).NotTo(HavePrefix("secrets "), "Secrets in a tenant namespace:\n%s", tenant)
		g.Expect(line).NotTo(HavePrefix("*.*"), "a wildcard rule:\n%s", tenant)
		if strings.Contains(line, "[impersonate]") {
			g.Expect(line).To(MatchRegexp(`^serviceaccounts\s+\[\]\s+\[(calaf-tenant|deployer)\]`), "unbounded impersonation:\n%s", tenant)
		}
	}
	g.Expect(checks).To(Equal(strings.Join([]string{
		"$ kubectl auth can-i get secrets --all-namespaces", "no",
		"$ kubectl auth can-i list pods --all-namespaces", "no",
		"$ kubectl auth can-i create deployments -n " + ns, "no",
		"$ kubectl auth can-i impersonate serviceaccounts -n " + ns, "no",
		"$ kubectl auth can-i impersonate serviceaccounts/calaf-tenant -n " + ns, "yes",
		"$ kubectl auth can-i impersonate serviceaccounts/deployer -n " + ns, "yes",
		"$ kubectl auth can-i impersonate serviceaccounts/deployer -n default", "no", "",
	}, "\n")))
	record := tenant + "\n" + own + "\n" + checks
	t.Logf("the lockdown operator's rights:\n%s", record)
	if path := os.Getenv("CALAF_E2E_RECORD"); path != "" {
		g.Expect(os.WriteFile(path, []byte(record), 0o644)).To(Succeed())
	}
}

// In lockdown mode a subscription's credentials are read as the namespace's tenant
// account: the Secret it may read is sent, the one it may not is not (its label for
// subscriptions notwithstanding: the label is the other installs' consent), and the
// subscription says why.
func TestLockdownSubscriptionCredentials(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := tenantNamespace(t, c)
	l := startLockdown(t, c)
	readable := newCounter(t, subscriberAddress, http.StatusNoContent)
	hidden := newCounter(t, subscriberAddress, http.StatusNoContent)
	createSubscription(t, suite.client, ns, "readable", readable.server.URL, "visible")
	sub := createSubscription(t, suite.client, ns, "hidden", hidden.server.URL, "hidden")
	notifyOnce(t, ns)
	g.Eventually(readable.count, time.Minute, 250*time.Millisecond).Should(BeNumerically(">", 0), func() string { return l.operator.Tail(30) })
	readable.mu.Lock()
	g.Expect(readable.auth[0]).To(Equal("Bearer visible-token"))
	readable.mu.Unlock()
	g.Eventually(func(g Gomega) {
		ready, _ := subscriptionReady(g, sub)
		g.Expect(ready.Reason).To(Equal(v1alpha1.SubscriptionCredentialsRefused), ready.Message)
		g.Expect(ready.Message).To(ContainSubstring(`User "system:serviceaccount:` + ns + `:calaf-tenant" cannot get resource "secrets"`))
	}, time.Minute, 250*time.Millisecond).Should(Succeed())
	g.Expect(hidden.count()).To(BeZero())
}
