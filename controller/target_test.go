package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// createTargeted creates a Service deploying into the cluster of the kubeconfig Secret.
func createTargeted(t *testing.T, ns, name string, src v1alpha1.Source, secret v1alpha1.SecretKeyReference, change func(*v1alpha1.Service)) client.ObjectKey {
	t.Helper()
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceSpec{Source: src, KubeConfig: &v1alpha1.KubeConfigReference{SecretRef: secret}}}
	if change != nil {
		change(svc)
	}
	NewWithT(t).Expect(env.client.Create(context.Background(), svc)).To(Succeed())
	return client.ObjectKeyFromObject(svc)
}

// remoteConfigMap reads a ConfigMap of the remote cluster.
func remoteConfigMap(g Gomega, ns, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(remote.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm
}

// absentLocally asserts that the operator's own cluster holds none of the objects.
func absentLocally(g Gomega, ns string, names ...string) {
	for _, name := range names {
		err := env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap %s/%s exists in the operator's cluster: %v", ns, name, err)
	}
}

// A Service whose spec.kubeConfig names a cluster deploys there — and only there (the
// kubeconfig in Flux's "value" key); its status names the cluster; a drifted object is
// repaired from the remote cluster's watch; a node removed from the package is pruned
// there; the Service deleted, nothing of it is left there.
func TestTargetClusterLifecycle(t *testing.T) {
	remoteCluster(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	remoteNamespace(t, ns)
	kubeconfigSecret(t, ns, "site-a", "value", remote.kubeconfig)
	key := createTargeted(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), v1alpha1.SecretKeyReference{Name: "site-a"}, nil)
	svc := waitReady(t, key)
	g.Expect(svc.Status.Cluster).To(Equal(remote.server))
	g.Expect(remoteConfigMap(g, ns, "demo-base").Data).To(HaveKeyWithValue("greeting", "hello"))
	g.Expect(remoteConfigMap(g, ns, "demo-top").Labels).To(HaveKeyWithValue(v1alpha1.LabelService, "demo"))
	g.Expect(remote.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &corev1.Service{})).To(Succeed())
	absentLocally(g, ns, "demo-base", "demo-top")

	// Drift in the remote cluster is repaired through its watch (well before the interval).
	base := remoteConfigMap(g, ns, "demo-base")
	base.Data["greeting"] = "tampered"
	g.Expect(remote.client.Update(ctx, base, client.FieldOwner("someone-else"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(remoteConfigMap(g, ns, "demo-base").Data).To(HaveKeyWithValue("greeting", "hello"))
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
	top := remoteConfigMap(g, ns, "demo-top")
	g.Expect(remote.client.Delete(ctx, top)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(remoteConfigMap(g, ns, "demo-top").UID).NotTo(Equal(top.UID))
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())

	// Pruned there.
	pruned := strings.Replace(layeredTemplate, "    front:\n      type: calaf.nodes.Manifests\n      artifacts:\n        service:\n          type: calaf.artifacts.Manifest\n          file: manifests/front.yaml\n      requirements:\n      - dependency: top\n", "", 1)
	g.Expect(pruned).NotTo(Equal(layeredTemplate))
	updateService(t, key, func(svc *v1alpha1.Service) {
		svc.Spec.Source = upload(t, ns, "demo", map[string]string{"service.yaml": pruned})
	})
	waitReady(t, key)
	g.Eventually(func() bool {
		return apierrors.IsNotFound(remote.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &corev1.Service{}))
	}, 15*time.Second, 100*time.Millisecond).Should(BeTrue())

	// Deleted: nothing of it is left there.
	g.Expect(env.client.Delete(ctx, &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, key, &v1alpha1.Service{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	left := &corev1.ConfigMapList{}
	g.Expect(remote.client.List(ctx, left, client.InNamespace(ns), client.HasLabels{v1alpha1.LabelService})).To(Succeed())
	g.Expect(left.Items).To(BeEmpty())
}

// An object of the same name that is not the Service's, in the target cluster, is not
// taken over; a Service deleted with deletionPolicy Orphan leaves its objects running
// there without Calaf's labels.
func TestTargetClusterTakeOverAndOrphan(t *testing.T) {
	remoteCluster(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	remoteNamespace(t, ns)
	kubeconfigSecret(t, ns, "site-a-kubeconfig", "value", remote.kubeconfig)
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken-base"}, Data: map[string]string{"owner": "someone"}}
	g.Expect(remote.client.Create(ctx, foreign)).To(Succeed())
	key := createTargeted(t, ns, "taken", upload(t, ns, "taken", layeredPackage()), v1alpha1.SecretKeyReference{Name: "site-a-kubeconfig"}, nil)
	g.Eventually(func(g Gomega) {
		stalled := condition(getService(g, key), v1alpha1.ConditionStalled)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Message).To(ContainSubstring(`ConfigMap "taken-base" already exists and belongs to no Calaf Service`))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(remoteConfigMap(g, ns, "taken-base").Data).To(Equal(map[string]string{"owner": "someone"}))

	key = createTargeted(t, ns, "kept", upload(t, ns, "kept", layeredPackage()), v1alpha1.SecretKeyReference{Name: "site-a-kubeconfig"},
		func(svc *v1alpha1.Service) { svc.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan })
	waitReady(t, key)
	g.Expect(env.client.Delete(ctx, &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, key, &v1alpha1.Service{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	orphan := remoteConfigMap(g, ns, "kept-base")
	g.Expect(orphan.Labels).NotTo(HaveKey(v1alpha1.LabelService))
}

// A target cluster whose API server stops answering: its Service says so (Applied False,
// ClusterUnreachable, naming the server) without anyone touching it, while a Service of
// the operator's own cluster goes on being reconciled; once it answers again the Service
// is Ready again, with the change made to it meanwhile applied.
func TestTargetClusterUnreachable(t *testing.T) {
	remoteCluster(t)
	g := NewWithT(t)
	ns := newNamespace(t)
	remoteNamespace(t, ns)
	kubeconfigSecret(t, ns, "site-a", "value.yaml", remote.kubeconfig)
	key := createTargeted(t, ns, "far", upload(t, ns, "far", layeredPackage()), v1alpha1.SecretKeyReference{Name: "site-a"}, nil)
	waitReady(t, key)
	localNs := newNamespace(t)
	local := createService(t, localNs, "near", upload(t, localNs, "near", layeredPackage()), nil)
	waitReady(t, local)

	remote.proxy.cut()
	restored := false
	defer func() {
		if !restored {
			remote.proxy.restore(t)
		}
	}()
	// Nobody touches the Service: its cluster's broken watches say it.
	g.Eventually(func(g Gomega) {
		applied := condition(getService(g, key), v1alpha1.ConditionApplied)
		g.Expect(applied).NotTo(BeNil())
		g.Expect(applied.Reason).To(Equal(v1alpha1.ReasonClusterUnreachable))
		g.Expect(applied.Message).To(ContainSubstring(remote.server))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Inputs = jsonInputs(map[string]string{"greeting": `"far away"`}) })

	// The operator's own Service goes on.
	updateService(t, local, func(svc *v1alpha1.Service) { svc.Spec.Inputs = jsonInputs(map[string]string{"greeting": `"near"`}) })
	waitReady(t, local)
	g.Expect(getConfigMap(g, localNs, "near-base").Data).To(HaveKeyWithValue("greeting", "near"))

	remote.proxy.restore(t)
	restored = true
	waitReady(t, key)
	g.Expect(remoteConfigMap(g, ns, "far-base").Data).To(HaveKeyWithValue("greeting", "far away"))
}

// A kubeconfig that would run a command, one whose API server is somewhere the admin does
// not allow, a Secret that does not exist or lacks the key: each stalls the Service with
// KubeConfigInvalid, saying why, and nothing is applied anywhere.
func TestKubeconfigRefused(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	execConfig := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, "touch /tmp/pwned"]}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	metadata := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://169.254.169.254"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	kubeconfigSecret(t, ns, "exec", "value", execConfig)
	kubeconfigSecret(t, ns, "metadata", "value", metadata)
	kubeconfigSecret(t, ns, "other-key", "config", metadata)
	for name, c := range map[string]struct {
		ref  v1alpha1.SecretKeyReference
		want string
	}{
		"exec":      {v1alpha1.SecretKeyReference{Name: "exec"}, "runs a command (exec)"},
		"metadata":  {v1alpha1.SecretKeyReference{Name: "metadata"}, "cloud metadata service"},
		"missing":   {v1alpha1.SecretKeyReference{Name: "nowhere"}, "Secret nowhere: the kubeconfig Secret does not exist"},
		"other-key": {v1alpha1.SecretKeyReference{Name: "other-key"}, `neither "value" nor "value.yaml"`},
		"bad-key":   {v1alpha1.SecretKeyReference{Name: "other-key", Key: "kubeconfig"}, `it has no key "kubeconfig"`},
	} {
		key := createTargeted(t, ns, name, upload(t, ns, name, layeredPackage()), c.ref, nil)
		g.Eventually(func(g Gomega) {
			svc := getService(g, key)
			applied := condition(svc, v1alpha1.ConditionApplied)
			g.Expect(applied).NotTo(BeNil(), name)
			g.Expect(applied.Reason).To(Equal(v1alpha1.ReasonKubeConfigInvalid), name)
			g.Expect(applied.Message).To(ContainSubstring(c.want), name)
			g.Expect(condition(svc, v1alpha1.ConditionStalled)).NotTo(BeNil(), name)
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		absentLocally(g, ns, name+"-base")
	}
}

// The kubeconfig Secret is read as the Service acts: a Service acting as a service
// account that may not read it is refused (KubeConfigInvalid), though the operator could.
func TestKubeconfigReadAsTheService(t *testing.T) {
	remoteCluster(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	remoteNamespace(t, ns)
	kubeconfigSecret(t, ns, "site-a", "value", remote.kubeconfig)
	tenantAccount(t, ns) // it may read the Secret "allowed" alone
	key := createTargeted(t, ns, "tenant", upload(t, ns, "tenant", layeredPackage()), v1alpha1.SecretKeyReference{Name: "site-a"},
		func(svc *v1alpha1.Service) { svc.Spec.ServiceAccountName = "tenant" })
	g.Eventually(func(g Gomega) {
		applied := condition(getService(g, key), v1alpha1.ConditionApplied)
		g.Expect(applied).NotTo(BeNil())
		g.Expect(applied.Reason).To(Equal(v1alpha1.ReasonKubeConfigInvalid))
		g.Expect(applied.Message).To(ContainSubstring("Secret site-a may not be read as the Service acts (service account tenant)"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	err := remote.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-base"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}
