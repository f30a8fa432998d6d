//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/test/e2e/framework"
)

// tackerKinds is what a cluster admin grants the operator to deploy Tacker's CNFs beyond
// deploy/rbac: the RBAC kinds (and, as the API server refuses to let anyone grant what it
// does not hold, what the package's ClusterRole grants: reading nodes), quotas, limit
// ranges, leases, pod templates and controller revisions.
var tackerKinds = []rbacv1.PolicyRule{
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"resourcequotas", "limitranges", "podtemplates"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{"apps"}, Resources: []string{"controllerrevisions"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
}

// trustClusterRBAC grants the operator tackerKinds and restarts it with a render policy
// trusting the Services of ns with cluster RBAC, for the test, and returns the policy's
// file; the operator is restarted as it was, and the grant removed, when the test ends.
func trustClusterRBAC(t *testing.T, c *framework.Cluster, ns string) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "calaf-e2e-tacker-kinds"}, Rules: tackerKinds}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "calaf-e2e-tacker-kinds"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: framework.OperatorNamespace, Name: framework.OperatorServiceAccount}}}
	_, err := c.Clientset.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	g.Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "%v", err)
	_, err = c.Clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	g.Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "%v", err)
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	g.Expect(os.WriteFile(policyFile, []byte("apiVersion: calaf.io/v1alpha1\nkind: RenderPolicy\nnamespaces:\n  "+ns+": { clusterRBAC: true }\n"), 0o644)).To(Succeed())

	args := suite.operator.Args
	suite.operator.Stop()
	suite.operator.Args = append(append([]string{}, args...), "--render-policy="+policyFile)
	g.Expect(suite.operator.Start()).To(Succeed())
	t.Cleanup(func() {
		suite.operator.Stop()
		suite.operator.Args = args
		if err := suite.operator.Start(); err != nil {
			t.Errorf("restarting the operator: %v", err)
		}
		_ = c.Clientset.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = c.Clientset.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
	return policyFile
}

// onThisCluster writes a copy of an instantiate request whose Kubernetes VIM is known by
// its vimId alone (the VNFM's own cluster, as Tacker's default VIM) instead of the
// endpoint and token of a cluster that does not exist, and returns its path.
func onThisCluster(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), file))
	if err != nil {
		t.Fatal(err)
	}
	var request map[string]any
	if err := json.Unmarshal(data, &request); err != nil {
		t.Fatal(err)
	}
	request["vimConnectionInfo"] = map[string]any{"vim1": map[string]any{"vimId": "default", "vimType": "ETSINFV.KUBERNETES.V_1"}}
	return writeJSON(t, request)
}

// Tacker's request shapes on the one-node cluster, with the admin's policy trusting the
// namespace with cluster RBAC: the all-kinds manifest request (ClusterRole and binding,
// Role, quota, limits, lease, pod template, controller revision, Job, HPA, create-only
// reviews without names, the Namespace the manifests were written for) and Tacker's v1
// Helm request (two releases of the package's chart, helm_replica_values, vdu_mapping)
// run, every VDU ready with its level's replicas; deleting the Services removes the
// cluster RBAC with them.
func TestEtsiTackerCNF(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-tacker")
	ctx := context.Background()
	policy := trustClusterRBAC(t, c, ns)

	// calaf deploy checks the render against the same policy before it creates the Service.
	calaf(t, "deploy", "kinds", "test/etsi/cnf-tacker", "-n", ns, "--instantiate", onThisCluster(t, "test/etsi/cnf-tacker.all-kinds.json"), "--policy", policy)
	calaf(t, "deploy", "helm", "test/etsi/cnf-tacker", "-n", ns, "--instantiate", "test/etsi/cnf-tacker.helm-v1.json")
	svc := expectVNF(t, ns, "kinds", map[string]int32{"VDU1": 2, "VDU2": 1}, map[string]int32{"vdu1_aspect": 1})
	// status.warnings keeps the first 20: the idioms of the package come first.
	warnings := strings.Join(svc.Status.Warnings, "\n")
	for _, want := range []string{`"Created-by" is spelled "Created-By"`, `artifact file "Scripts/tacker_mgmt.py" is not next to`,
		"left unassigned (as in Tacker's CNF packages)", `requirement "virtual_link_external" left unsatisfied`} {
		g.Expect(warnings).To(ContainSubstring(want))
	}
	_, err := c.Clientset.CoreV1().Namespaces().Get(ctx, "tacker-cnf", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Namespace the manifests were written for: %v", err)
	binding, err := c.Clientset.RbacV1().ClusterRoleBindings().Get(ctx, "tacker-node-reader", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "tacker-reader", Namespace: ns}))
	_, err = c.Clientset.RbacV1().ClusterRoles().Get(ctx, "tacker-node-reader", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, get := range []func() error{
		func() error {
			_, err := c.Clientset.CoreV1().ResourceQuotas(ns).Get(ctx, "tacker-quota", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := c.Clientset.CoreV1().LimitRanges(ns).Get(ctx, "tacker-limits", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := c.Clientset.CoordinationV1().Leases(ns).Get(ctx, "tacker-lease", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := c.Clientset.CoreV1().PodTemplates(ns).Get(ctx, "tacker-template", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := c.Clientset.AppsV1().ControllerRevisions(ns).Get(ctx, "tacker-revision", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := c.Clientset.RbacV1().RoleBindings(ns).Get(ctx, "tacker-pod-reader", metav1.GetOptions{})
			return err
		},
	} {
		g.Expect(get()).To(Succeed())
	}
	job, err := c.Clientset.BatchV1().Jobs(ns).Get(ctx, "tacker-job", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(job.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "calaf"))

	expectVNF(t, ns, "helm", map[string]int32{"VDU1": 2, "VDU2": 3}, map[string]int32{"vdu1_aspect": 1, "vdu2_aspect": 2})
	for release, port := range map[string]int32{"vdu1": 8081, "vdu2": 8082} {
		service, err := c.Clientset.CoreV1().Services(ns).Get(ctx, release+"-localchart", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(service.Spec.Ports[0].Port).To(Equal(port), "release %s: its helmparameter service.port", release)
	}

	calaf(t, "delete", "kinds", "-n", ns, "--wait")
	calaf(t, "delete", "helm", "-n", ns, "--wait")
	g.Eventually(func() bool {
		_, err := c.Clientset.RbacV1().ClusterRoles().Get(ctx, "tacker-node-reader", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, time.Second).Should(BeTrue(), "the package's ClusterRole outlives its Service")
	_, err = c.Clientset.RbacV1().ClusterRoleBindings().Get(ctx, "tacker-node-reader", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ClusterRoleBinding: %v", err)
}
