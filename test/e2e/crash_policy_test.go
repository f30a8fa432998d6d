//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
	"calaf.io/calaf/test/hostile"
)

// On the one-node cluster, a package that overflows its worker's stack and one that
// exhausts its memory, deployed at the same time as a good Service: the good one becomes
// Ready, the bad ones are Stalled with why, and the operator is the same process as
// before (never restarted: same PID, still running).
func TestCrashingPackagesLeaveOperatorUp(t *testing.T) {
	g := NewWithT(t)
	ns := framework.Connect(t).Namespace(t, "e2e-crash")
	pid := suite.operator.Pid()
	g.Expect(pid).NotTo(BeZero())

	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(configPackage), 0o644)).To(Succeed())
	calaf(t, "deploy", "good", dir, "-n", ns)
	deployUnchecked(t, suite.kubeconfig, ns, "overflow", hostile.DerivationCycle)
	deployUnchecked(t, suite.kubeconfig, ns, "bomb", hostile.MemoryBomb)

	waitReady(t, ns, "good", 2*time.Minute)
	svc := waitFailed(t, ns, "overflow", v1alpha1.ReasonInvalidPackage, func() string { return suite.operator.Tail(30) })
	g.Expect(isStalled(svc)).To(BeTrue())
	g.Expect(readyMessage(svc)).To(HavePrefix("service.yaml: compile of the package crashed: stack overflow in github.com/tliron/puccini/"))
	svc = waitFailed(t, ns, "bomb", v1alpha1.ReasonRenderFailed, func() string { return suite.operator.Tail(30) })
	g.Expect(isStalled(svc)).To(BeTrue())
	g.Expect(readyMessage(svc)).To(Equal("service.yaml: render of the package exceeded 512 MiB of memory"))

	g.Expect(suite.operator.Running()).To(BeTrue(), "the operator exited")
	g.Expect(suite.operator.Pid()).To(Equal(pid), "the operator was restarted")
	waitReady(t, ns, "good", time.Minute) // and it still serves the good one
}

// A renderer emitting a ClusterRoleBinding to cluster-admin (beside a ConfigMap) is
// refused by the render policy before anything of it reaches the API server: the Service
// is Stalled with PolicyViolation naming the object, and neither the binding nor the
// ConfigMap ever exists. (controller/service_policy_test.go counts the requests: none
// about ClusterRoleBindings.)
func TestClusterRoleBindingRefusedByPolicy(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-policy")
	ctx := context.Background()
	deployUnchecked(t, suite.kubeconfig, ns, "binder", renderPackage(`[
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'innocent' }, data: { a: 'b' } },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'e2e-take-over' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [ { kind: 'ServiceAccount', name: 'default', namespace: ctx.service.namespace } ] } ]`))
	svc := waitFailed(t, ns, "binder", v1alpha1.ReasonPolicyViolation, func() string { return suite.operator.Tail(30) })
	g.Expect(isStalled(svc)).To(BeTrue())
	g.Expect(readyMessage(svc)).To(Equal(`service.yaml: node "thing": ClusterRoleBinding "e2e-take-over": refused by the render policy: ClusterRoleBinding.rbac.authorization.k8s.io is on the denylist (RBAC that grants cluster roles)`))
	g.Expect(svc.Status.Inventory).To(BeEmpty())
	_, err := c.Clientset.RbacV1().ClusterRoleBindings().Get(ctx, "e2e-take-over", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ClusterRoleBinding: %v", err)
	_, err = c.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, "innocent", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap: %v", err)
}
