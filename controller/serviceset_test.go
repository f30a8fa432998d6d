package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
)

// third is a third API server (no proxy in front), for the ServiceSet's sites.
var third struct {
	once       sync.Once
	err        error
	env        *envtest.Environment
	client     client.Client
	kubeconfig []byte
}

func thirdCluster(t *testing.T) {
	t.Helper()
	third.once.Do(func() {
		third.env = &envtest.Environment{}
		config, err := third.env.Start()
		if err != nil {
			third.err = err
			return
		}
		if third.client, err = client.New(config, client.Options{Scheme: operator.NewScheme()}); err != nil {
			third.err = err
			return
		}
		user, err := third.env.AddUser(envtest.User{Name: "site-admin", Groups: []string{"system:masters"}}, nil)
		if err != nil {
			third.err = err
			return
		}
		third.kubeconfig, third.err = user.KubeConfig()
	})
	if third.err != nil {
		t.Fatalf("the third API server: %v", third.err)
	}
}

// operatorKubeconfig is an admin's kubeconfig of the operator's own cluster (standing
// for a site reached through a kubeconfig like any other).
func operatorKubeconfig(t *testing.T) []byte {
	t.Helper()
	user, err := env.testEnv.AddUser(envtest.User{Name: "site-c-admin", Groups: []string{"system:masters"}}, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	data, err := user.KubeConfig()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return data
}

// sitePackage is one ConfigMap holding the inputs region and replicas (1 to 3).
const sitePackage = `tosca_definitions_version: tosca_simple_yaml_1_3
` + profileImport + `topology_template:
  inputs:
    region: { type: string, default: none }
    replicas:
      type: integer
      constraints:
      - in_range: [ 1, 3 ]
  node_templates:
    settings:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          region: { get_input: region }
          replicas: { concat: [ { get_input: replicas } ] }
`

// siteSecret stores a site's kubeconfig, labelled as an edge site of region.
func siteSecret(t *testing.T, ns, site, region string, kubeconfig []byte) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: site + "-kubeconfig",
		Labels: map[string]string{"calaf.io/site-class": "edge", v1alpha1.LabelSite: site, "topology.example/region": region}},
		Data: map[string][]byte{"value": kubeconfig}}
	NewWithT(t).Expect(env.client.Create(context.Background(), secret)).To(Succeed())
}

// siteCM reads a site's ConfigMap in its cluster.
func siteCM(g Gomega, c client.Client, ns, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm
}

// A ServiceSet over three clusters (the remote API server, a third one, and the
// operator's own through a kubeconfig), selected as labelled kubeconfig Secrets: a
// Service per site, each with its inputs (its region from its Secret's label, a site's
// own values); rolled out one site at a time in the order of their names; the status
// aggregated (3/3). A change that fails at site b stops the rollout there: a takes it, b
// fails, c keeps what it ran and waits (RolloutStopped). A site no longer selected loses
// its Service.
func TestServiceSetRollsOutAcrossSites(t *testing.T) {
	remoteCluster(t)
	thirdCluster(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	remoteNamespace(t, ns)
	g.Expect(third.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	siteSecret(t, ns, "a", "eu", remote.kubeconfig)
	siteSecret(t, ns, "b", "us", third.kubeconfig)
	siteSecret(t, ns, "c", "ap", operatorKubeconfig(t))
	clusters := map[string]client.Client{"a": remote.client, "b": third.client, "c": env.client}

	set := &v1alpha1.ServiceSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "upf"}, Spec: v1alpha1.ServiceSetSpec{
		Template: v1alpha1.ServiceTemplate{Spec: v1alpha1.ServiceSpec{Source: upload(t, ns, "upf", map[string]string{"service.yaml": sitePackage}),
			Inputs: jsonInputs(map[string]string{"replicas": "1"})}},
		Clusters:         v1alpha1.ClusterSelector{SecretSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"calaf.io/site-class": "edge"}}},
		InputsFromLabels: map[string]string{"region": "topology.example/region"},
		Sites:            []v1alpha1.SiteValues{{Name: "c", Inputs: map[string]apiextensionsv1.JSON{"region": {Raw: []byte(`"ap-south"`)}}}},
	}}
	g.Expect(env.client.Create(ctx, set)).To(Succeed())
	key := client.ObjectKeyFromObject(set)
	g.Eventually(func(g Gomega) {
		g.Expect(env.client.Get(ctx, key, set)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(set.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "%+v", set.Status)
		g.Expect(set.Status.Summary).To(Equal("3/3"))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(set.Status.Sites).To(HaveLen(3))
	for i, want := range map[string]string{"a": "eu", "b": "us", "c": "ap-south"} {
		g.Expect(siteCM(g, clusters[i], ns, "upf-"+i+"-settings").Data).To(HaveKeyWithValue("region", want), "site %s", i)
	}
	// One at a time, in order: each site's Service was made once the one before was Ready.
	var previous *v1alpha1.Service
	for _, name := range []string{"a", "b", "c"} {
		svc := getService(g, client.ObjectKey{Namespace: ns, Name: "upf-" + name})
		g.Expect(svc.Spec.KubeConfig.SecretRef.Name).To(Equal(name + "-kubeconfig"))
		if previous != nil {
			ready := condition(previous, v1alpha1.ConditionReady)
			g.Expect(svc.CreationTimestamp.Time).NotTo(BeTemporally("<", ready.LastTransitionTime.Time), "site %s began before the site before it was Ready", name)
		}
		previous = svc
	}

	// A change that fails at b: a takes it, b fails, c waits with what it ran.
	g.Expect(env.client.Get(ctx, key, set)).To(Succeed())
	set.Spec.Template.Spec.Inputs = jsonInputs(map[string]string{"replicas": "2"})
	set.Spec.Sites = append(set.Spec.Sites, v1alpha1.SiteValues{Name: "b", Inputs: map[string]apiextensionsv1.JSON{"replicas": {Raw: []byte("7")}}})
	g.Expect(env.client.Update(ctx, set)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.client.Get(ctx, key, set)).To(Succeed())
		ready := apimeta.FindStatusCondition(set.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonRolloutStopped), ready.Message)
		g.Expect(set.Status.Sites).To(ConsistOf(
			And(HaveField("Name", "a"), HaveField("Phase", v1alpha1.SiteReady)),
			And(HaveField("Name", "b"), HaveField("Phase", v1alpha1.SiteFailed), HaveField("Reason", v1alpha1.ReasonInvalidInputs)),
			And(HaveField("Name", "c"), HaveField("Phase", v1alpha1.SitePending), HaveField("Reason", v1alpha1.ReasonRolloutStopped))))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(set.Status.Summary).To(Equal("1/3"))
	g.Expect(siteCM(g, remote.client, ns, "upf-a-settings").Data).To(HaveKeyWithValue("replicas", "2"))
	g.Expect(siteCM(g, env.client, ns, "upf-c-settings").Data).To(HaveKeyWithValue("replicas", "1"), "c keeps what it ran")
	c := getService(g, client.ObjectKey{Namespace: ns, Name: "upf-c"})
	g.Expect(string(c.Spec.Inputs["replicas"].Raw)).To(Equal("1"), "c was not given the change")

	// c no longer selected: its Service goes.
	secret := &corev1.Secret{}
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-kubeconfig"}, secret)).To(Succeed())
	delete(secret.Labels, "calaf.io/site-class")
	g.Expect(env.client.Update(ctx, secret)).To(Succeed())
	g.Expect(env.client.Get(ctx, key, set)).To(Succeed())
	set.Spec.Interval = &metav1.Duration{Duration: time.Second} // selected again soon
	g.Expect(env.client.Update(ctx, set)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "upf-c"}, &v1alpha1.Service{}))
	}, 30*time.Second, 200*time.Millisecond).Should(BeTrue())
}

// clusterAPICRD is Cluster API's Cluster, as little of it as a ServiceSet reads (its
// labels), for the API server to serve.
func clusterAPICRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "clusters.cluster.x-k8s.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "cluster.x-k8s.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "clusters", Singular: "cluster", Kind: "Cluster", ListKind: "ClusterList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}

// A ServiceSet selecting Cluster API Clusters says so when Cluster API is not installed
// (SelectionFailed); once it is, each selected Cluster is a site whose Service reads the
// Cluster's <name>-kubeconfig Secret, and whose inputs come from the Cluster's labels.
func TestServiceSetSelectsClusterAPIClusters(t *testing.T) {
	remoteCluster(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	remoteNamespace(t, ns)
	set := &v1alpha1.ServiceSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "capi"}, Spec: v1alpha1.ServiceSetSpec{
		Template: v1alpha1.ServiceTemplate{Spec: v1alpha1.ServiceSpec{Source: upload(t, ns, "capi", map[string]string{"service.yaml": sitePackage}),
			Inputs: jsonInputs(map[string]string{"replicas": "1"})}},
		Clusters:         v1alpha1.ClusterSelector{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"calaf.io/site-class": "edge"}}},
		InputsFromLabels: map[string]string{"region": "topology.example/region"},
		Interval:         &metav1.Duration{Duration: time.Second},
	}}
	scheme := operator.NewScheme()
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	admin, err := client.New(env.testEnv.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	crd := clusterAPICRD()
	if err := admin.Get(ctx, client.ObjectKeyFromObject(crd), crd); apierrors.IsNotFound(err) {
		g.Expect(env.client.Create(ctx, set)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(env.client.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
			ready := apimeta.FindStatusCondition(set.Status.Conditions, v1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonSelectionFailed))
			g.Expect(ready.Message).To(ContainSubstring("Cluster API is not installed"))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
		g.Expect(admin.Create(ctx, clusterAPICRD())).To(Succeed())
	} else {
		g.Expect(env.client.Create(ctx, set)).To(Succeed())
	}
	g.Eventually(func() error {
		fresh, err := client.New(env.testEnv.Config, client.Options{Scheme: operator.NewScheme()}) // one that knows the new kind
		if err != nil {
			return err
		}
		if err := fresh.Create(ctx, clusterObject(ns, "edge-1", map[string]string{"calaf.io/site-class": "edge", "topology.example/region": "eu"})); err != nil {
			return err
		}
		return nil
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	kubeconfigSecret(t, ns, "edge-1-kubeconfig", "value", remote.kubeconfig)
	g.Eventually(func(g Gomega) {
		g.Expect(env.client.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(set.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "%+v", set.Status)
		g.Expect(set.Status.Summary).To(Equal("1/1"))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	svc := getService(g, client.ObjectKey{Namespace: ns, Name: "capi-edge-1"})
	g.Expect(svc.Spec.KubeConfig.SecretRef.Name).To(Equal("edge-1-kubeconfig"))
	g.Expect(siteCM(g, remote.client, ns, "capi-edge-1-settings").Data).To(HaveKeyWithValue("region", "eu"))
}

// clusterAPIKind is Cluster API's Cluster.
var clusterAPIKind = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Cluster"}

// clusterObject is a Cluster API Cluster with labels.
func clusterObject(ns, name string, labels map[string]string) client.Object {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(clusterAPIKind)
	obj.SetNamespace(ns)
	obj.SetName(name)
	obj.SetLabels(labels)
	return obj
}

// A ServiceSet that keeps the Services of deselected sites (deselectedSites: Keep): a
// site whose Secret loses its label keeps its Service and its objects, listed as
// Deselected (not counted); selected again, it is a site again.
func TestServiceSetKeepsDeselectedSites(t *testing.T) {
	remoteCluster(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	remoteNamespace(t, ns)
	siteSecret(t, ns, "a", "eu", remote.kubeconfig)
	set := &v1alpha1.ServiceSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "amf"}, Spec: v1alpha1.ServiceSetSpec{
		Template: v1alpha1.ServiceTemplate{Spec: v1alpha1.ServiceSpec{Source: upload(t, ns, "amf", map[string]string{"service.yaml": sitePackage}),
			Inputs: jsonInputs(map[string]string{"replicas": "1"})}},
		Clusters:        v1alpha1.ClusterSelector{SecretSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"calaf.io/site-class": "edge"}}},
		DeselectedSites: v1alpha1.DeselectedSitesKeep,
		Interval:        &metav1.Duration{Duration: time.Second},
	}}
	g.Expect(env.client.Create(ctx, set)).To(Succeed())
	key := client.ObjectKeyFromObject(set)
	g.Eventually(func(g Gomega) {
		g.Expect(env.client.Get(ctx, key, set)).To(Succeed())
		g.Expect(set.Status.Summary).To(Equal("1/1"))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	service := getService(g, client.ObjectKey{Namespace: ns, Name: "amf-a"})

	relabel := func(selected bool) {
		secret := &corev1.Secret{}
		g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a-kubeconfig"}, secret)).To(Succeed())
		if selected {
			secret.Labels["calaf.io/site-class"] = "edge"
		} else {
			delete(secret.Labels, "calaf.io/site-class")
		}
		g.Expect(env.client.Update(ctx, secret)).To(Succeed())
	}
	relabel(false)
	g.Eventually(func(g Gomega) {
		g.Expect(env.client.Get(ctx, key, set)).To(Succeed())
		g.Expect(set.Status.Summary).To(Equal("0/0"))
		g.Expect(set.Status.Sites).To(ConsistOf(And(HaveField("Name", "a"), HaveField("Service", "amf-a"),
			HaveField("Phase", v1alpha1.SiteDeselected), HaveField("Reason", v1alpha1.ReasonDeselected))))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	kept := getService(g, client.ObjectKey{Namespace: ns, Name: "amf-a"})
	g.Expect(kept.UID).To(Equal(service.UID), "the deselected site's Service is the same")
	g.Expect(kept.DeletionTimestamp).To(BeNil())
	g.Expect(siteCM(g, remote.client, ns, "amf-a-settings").Data).To(HaveKeyWithValue("replicas", "1"), "its objects are kept")

	relabel(true)
	g.Eventually(func(g Gomega) {
		g.Expect(env.client.Get(ctx, key, set)).To(Succeed())
		g.Expect(set.Status.Summary).To(Equal("1/1"))
		g.Expect(set.Status.Sites).To(ConsistOf(And(HaveField("Name", "a"), HaveField("Phase", v1alpha1.SiteReady))))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}
