package controller_test

import (
	"context"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// configOnlyTemplate is a ConfigMap alone.
const configOnlyTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
` + profileImport + `
topology_template:
  node_templates:
    config:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          mode: settled
`

// settleTemplate has a Deployment (scaled to zero) beside the ConfigMap: on the API-server
// test ground no controller looks at the Deployment, so the test plays its controller.
const settleTemplate = configOnlyTemplate + `    app:
      type: calaf.nodes.Deployment
      properties:
        image: busybox:1.36
        replicas: 0
      requirements:
      - dependency: config
`

// A new Service whose Deployment only waits for its controller's first look sends one
// status patch on its way to Ready, not Progressing then Ready: the patch is held until
// the controller's status update reconciles the Service again. A Deployment no controller
// looks at gets its Progressing status once the settle delay (suite: 10 s) is over. The
// events go out with the status: one for the quick Service (ready, and what was applied),
// an Applied one for the slow Service when its held patch goes out.
func TestStatusPatchedOnceWhenControllersLookSoon(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := createService(t, ns, "quick", upload(t, ns, "quick", map[string]string{"service.yaml": settleTemplate}), nil)
	deployment := &appsv1.Deployment{}
	g.Eventually(func() error {
		return env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "quick-app"}, deployment)
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Expect(condition(getService(g, key), v1alpha1.ConditionApplied)).To(BeNil(), "the status patch is held")

	observe(g, deployment)
	svc := waitReady(t, key)
	g.Expect(condition(svc, v1alpha1.ConditionApplied).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(svc.Status.Inventory).To(HaveLen(2))
	g.Expect(requestsIn(ns)).To(HaveKeyWithValue("PATCH:metadata services/status quick", 1))
	g.Eventually(func() []string { return eventsOf(g, ns, "quick") }, 10*time.Second, 100*time.Millisecond).Should(ContainElement(
		"Normal Succeeded revision " + svc.Status.LastAppliedRevision + ": 2 nodes ready | ConfigMap/quick-config created | Deployment/quick-app created"))
	g.Expect(eventsOf(g, ns, "quick")).To(HaveLen(1), "one event: what was applied, and ready")

	slow := createService(t, ns, "slow", upload(t, ns, "slow", map[string]string{"service.yaml": settleTemplate}), nil)
	g.Eventually(func(g Gomega) {
		svc := getService(g, slow)
		g.Expect(condition(svc, v1alpha1.ConditionApplied)).NotTo(BeNil())
		g.Expect(condition(svc, v1alpha1.ConditionApplied).Status).To(Equal(metav1.ConditionTrue))
		ready := condition(svc, v1alpha1.ConditionReady)
		g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonProgressing))
		g.Expect(ready.Message).To(ContainSubstring("Deployment/slow-app"))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func() []string { return eventsOf(g, ns, "slow") }, 10*time.Second, 100*time.Millisecond).Should(
		Equal([]string{"Normal Applied ConfigMap/slow-config created | Deployment/slow-app created"}))
}

// eventsOf returns the events regarding Service name, oldest first, each as "type reason
// note".
func eventsOf(g Gomega, ns, name string) []string {
	var list eventsv1.EventList
	g.Expect(env.client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	sort.SliceStable(list.Items, func(i, j int) bool { return list.Items[i].EventTime.Before(&list.Items[j].EventTime) })
	var events []string
	for _, event := range list.Items {
		if event.Regarding.Kind == "Service" && event.Regarding.Name == name {
			events = append(events, event.Type+" "+event.Reason+" "+event.Note)
		}
	}
	return events
}

// observe writes what a Deployment's controller writes once it looked at a Deployment
// scaled to zero: it is current.
func observe(g Gomega, deployment *appsv1.Deployment) {
	deployment.Status = appsv1.DeploymentStatus{
		ObservedGeneration: deployment.Generation,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		},
	}
	g.Expect(env.client.Status().Update(context.Background(), deployment)).To(Succeed())
}

// While a Service's status patch is held, what the reconcile created is not in the
// status yet; a change that drops one of those objects before the held patch goes out
// still prunes it: the operator remembers what it applied, not only what the status says.
func TestObjectsAppliedWhileStatusHeldArePruned(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := createService(t, ns, "held", upload(t, ns, "held", map[string]string{"service.yaml": settleTemplate}), nil)
	g.Eventually(func() error {
		return env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held-app"}, &appsv1.Deployment{})
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Expect(getService(g, key).Status.Inventory).To(BeEmpty(), "the status patch is held")

	smaller := upload(t, ns, "held-v2", map[string]string{"service.yaml": configOnlyTemplate})
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Source = smaller })
	svc := waitReady(t, key)
	g.Expect(svc.Status.Inventory).To(HaveLen(1))
	g.Eventually(func() bool {
		err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held-app"}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err)
	}, 10*time.Second, 100*time.Millisecond).Should(BeTrue(), "the Deployment the new revision dropped is pruned")
}

// A Service deleted while its status patch is held deletes what that reconcile created.
// The Deployment is deleted in the foreground; with no garbage collector on this test
// ground, the test removes the foreground finalizer once the deletion was asked for.
func TestServiceDeletedWhileStatusHeldDeletesItsObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := createService(t, ns, "gone", upload(t, ns, "gone", map[string]string{"service.yaml": settleTemplate}), nil)
	app := client.ObjectKey{Namespace: ns, Name: "gone-app"}
	g.Eventually(func() error { return env.client.Get(ctx, app, &appsv1.Deployment{}) }, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	svc := getService(g, key)
	g.Expect(svc.Status.Inventory).To(BeEmpty(), "the status patch is held")

	g.Expect(env.client.Delete(ctx, svc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		deployment := &appsv1.Deployment{}
		err := env.client.Get(ctx, app, deployment)
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		cur := &v1alpha1.Service{}
		_ = env.client.Get(ctx, key, cur)
		t.Logf("DEBUG inventory %v conds %v", cur.Status.Inventory, cur.Status.Conditions)
		g.Expect(deployment.DeletionTimestamp).NotTo(BeNil(), "the Deployment is being deleted")
		deployment.Finalizers = nil
		g.Expect(env.client.Update(ctx, deployment)).To(Succeed())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, key, &v1alpha1.Service{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue(), "the Service is finalized")
	err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gone-config"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "its ConfigMap is deleted: %v", err)
}
