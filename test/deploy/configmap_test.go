package deploy_test

import (
	"context"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The ConfigMap mode overlay is what a tenant without cluster rights can apply: nothing
// cluster-scoped (no CRD, ClusterRole, Namespace), every object in its namespace, no rule
// on calaf.io, the operator told to keep its Services as ConfigMaps of that namespace;
// the API server accepts it all (server-side dry-run).
func TestConfigMapOverlay(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "calaf-tenant"}}
	if err := apiClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	objects := kustomize(t, "configmap")
	g.Expect(kinds(objects)).To(ConsistOf("ServiceAccount", "Role", "RoleBinding", "Deployment"))
	var args []string
	for _, obj := range objects {
		g.Expect(obj.GetNamespace()).To(Equal("calaf-tenant"), "%s %s", obj.GetKind(), obj.GetName())
		switch obj.GetKind() {
		case "Role":
			var role rbacv1.Role
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role)).To(Succeed())
			for _, rule := range role.Rules {
				g.Expect(rule.APIGroups).NotTo(ContainElement("calaf.io"), "%+v", rule)
				g.Expect(rule.Verbs).NotTo(ContainElement("impersonate"), "%+v", rule)
			}
		case "Deployment":
			var deployment appsv1.Deployment
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &deployment)).To(Succeed())
			args = deployment.Spec.Template.Spec.Containers[0].Args
		}
		g.Expect(apiClient.Patch(ctx, obj, client.Apply, client.FieldOwner("calaf-deploy-test"), client.ForceOwnership, client.DryRunAll)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
	}
	g.Expect(args).To(ContainElements("--resources=configmap", "--watch-namespace=calaf-tenant", "--leader-election-namespace=calaf-tenant"))
	g.Expect(slices.Contains(args, "--leader-election-namespace=calaf-system")).To(BeFalse())
}
