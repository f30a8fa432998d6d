package lifecycle_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// controllers is a stand-in for the workload controllers, the garbage collector and a
// kubelet, for the tests that need pods on the API-server test ground: it makes the
// Deployments, ReplicaSets and StatefulSets of a namespace ready (their status says so),
// keeps as many pods of each as its replicas (created with its pod template's labels,
// named "<workload>-<n>"; their phase is not played), and lets a workload deleted in the
// foreground go with its pods. A workload it holds back is neither ready nor given pods.
type controllers struct {
	ns      string
	mu      sync.Mutex
	holding map[string]bool
	serial  int
}

// standIn starts the stand-in in a namespace until the test ends.
func standIn(t *testing.T, ns string) *controllers {
	c := &controllers{ns: ns, holding: map[string]bool{}}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}
	if err := env.client.Create(context.Background(), account); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			c.sync(ctx)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return c
}

// hold keeps a workload from becoming ready (release: false).
func (c *controllers) hold(name string, hold bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding[name] = hold
}

func (c *controllers) held(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holding[name]
}

// workload is what the stand-in plays of a workload.
type workload struct {
	obj      client.Object
	replicas int32
	template corev1.PodTemplateSpec
	ready    func() // sets its status ready
	isReady  func() bool
}

func (c *controllers) sync(ctx context.Context) {
	var workloads []workload
	deployments := &appsv1.DeploymentList{}
	replicaSets := &appsv1.ReplicaSetList{}
	statefulSets := &appsv1.StatefulSetList{}
	if env.client.List(ctx, deployments, client.InNamespace(c.ns)) != nil ||
		env.client.List(ctx, replicaSets, client.InNamespace(c.ns)) != nil ||
		env.client.List(ctx, statefulSets, client.InNamespace(c.ns)) != nil {
		return
	}
	for i := range deployments.Items {
		workloads = append(workloads, deploymentOf(&deployments.Items[i]))
	}
	for i := range replicaSets.Items {
		workloads = append(workloads, replicaSetOf(&replicaSets.Items[i]))
	}
	for i := range statefulSets.Items {
		workloads = append(workloads, statefulSetOf(&statefulSets.Items[i]))
	}
	for _, w := range workloads {
		if w.obj.GetDeletionTimestamp() != nil {
			c.collect(ctx, w)
			continue
		}
		if c.held(w.obj.GetName()) {
			continue
		}
		c.keepPods(ctx, w)
		if !w.isReady() {
			w.ready()
			_ = env.client.Status().Update(ctx, w.obj)
		}
	}
}

// pods lists the pods the stand-in made for a workload, by name.
func (c *controllers) pods(ctx context.Context, owner string) []corev1.Pod {
	list := &corev1.PodList{}
	if err := env.client.List(ctx, list, client.InNamespace(c.ns), client.MatchingLabels{"stand-in/owner": owner}); err != nil {
		return nil
	}
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return list.Items
}

// keepPods creates or deletes pods until a workload has its replicas (the newest go).
func (c *controllers) keepPods(ctx context.Context, w workload) {
	pods := c.pods(ctx, w.obj.GetName())
	for i := len(pods) - 1; i >= int(w.replicas); i-- {
		_ = env.client.Delete(ctx, &pods[i])
	}
	for n := len(pods); n < int(w.replicas); n++ {
		c.mu.Lock()
		c.serial++
		name := fmt.Sprintf("%s-%d", w.obj.GetName(), c.serial)
		c.mu.Unlock()
		labels := map[string]string{"stand-in/owner": w.obj.GetName()}
		for k, v := range w.template.Labels {
			labels[k] = v
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		_ = env.client.Create(ctx, pod)
	}
}

// collect plays the garbage collector for a workload deleted in the foreground: its pods
// go, then its foregroundDeletion finalizer.
func (c *controllers) collect(ctx context.Context, w workload) {
	for _, pod := range c.pods(ctx, w.obj.GetName()) {
		_ = env.client.Delete(ctx, &pod)
	}
	if i := slices.Index(w.obj.GetFinalizers(), metav1.FinalizerDeleteDependents); i >= 0 {
		w.obj.SetFinalizers(slices.Delete(w.obj.GetFinalizers(), i, i+1))
		_ = env.client.Update(ctx, w.obj)
	}
}

func replicasOf(replicas *int32) int32 {
	if replicas == nil {
		return 1
	}
	return *replicas
}

func deploymentOf(d *appsv1.Deployment) workload {
	n := replicasOf(d.Spec.Replicas)
	return workload{obj: d, replicas: n, template: d.Spec.Template,
		isReady: func() bool {
			return d.Status.ObservedGeneration == d.Generation && d.Status.ReadyReplicas == n && d.Status.Replicas == n
		},
		ready: func() {
			d.Status = appsv1.DeploymentStatus{
				ObservedGeneration: d.Generation, Replicas: n, ReadyReplicas: n, UpdatedReplicas: n, AvailableReplicas: n,
				Conditions: []appsv1.DeploymentCondition{
					{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
					{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
				},
			}
		}}
}

func replicaSetOf(rs *appsv1.ReplicaSet) workload {
	n := replicasOf(rs.Spec.Replicas)
	return workload{obj: rs, replicas: n, template: rs.Spec.Template,
		isReady: func() bool { return rs.Status.ObservedGeneration == rs.Generation && rs.Status.ReadyReplicas == n },
		ready: func() {
			rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: rs.Generation, Replicas: n, ReadyReplicas: n, AvailableReplicas: n, FullyLabeledReplicas: n}
		}}
}

func statefulSetOf(set *appsv1.StatefulSet) workload {
	n := replicasOf(set.Spec.Replicas)
	return workload{obj: set, replicas: n, template: set.Spec.Template,
		isReady: func() bool { return set.Status.ObservedGeneration == set.Generation && set.Status.ReadyReplicas == n },
		ready: func() {
			set.Status = appsv1.StatefulSetStatus{ObservedGeneration: set.Generation, Replicas: n, ReadyReplicas: n, AvailableReplicas: n,
				CurrentReplicas: n, UpdatedReplicas: n, CurrentRevision: "r1", UpdateRevision: "r1"}
		}}
}

// servicePods returns the names of the pods of a Service's node.
func servicePods(g Gomega, ns, service, node string) []string {
	list := &corev1.PodList{}
	g.Expect(env.client.List(context.Background(), list, client.InNamespace(ns),
		client.MatchingLabels{v1alpha1.LabelService: service, v1alpha1.LabelNode: node})).To(Succeed())
	var names []string
	for _, pod := range list.Items {
		if pod.DeletionTimestamp == nil {
			names = append(names, pod.Name)
		}
	}
	slices.Sort(names)
	return names
}
