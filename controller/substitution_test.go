package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// nestedPackage is a "core" whose node db is of a type the package's database.yaml
// substitutes: app depends on db, and the core's output reads db's url (an output of
// database.yaml). placement, when set, is a policy of the core's.
func nestedPackage(placement string) map[string]string {
	return map[string]string{
		"TOSCA-Metadata/TOSCA.meta": "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: Calaf tests\nEntry-Definitions: service.yaml\n",
		"types.yaml": `tosca_definitions_version: tosca_simple_yaml_1_3
node_types:
  example.nodes.Database:
    derived_from: tosca.nodes.Root
    properties:
      name: { type: string }
      size: { type: integer, default: 1 }
    attributes:
      url: { type: string }
`,
		"service.yaml": `tosca_definitions_version: tosca_simple_yaml_1_3
` + profileImport + `- types.yaml
topology_template:
  node_templates:
    db:
      type: example.nodes.Database
      properties: { name: orders, size: 3 }
    app:
      type: calaf.nodes.ConfigMap
      properties: { data: { role: app } }
      requirements:
      - dependency: db
` + placement + `  outputs:
    database_url:
      value: { get_attribute: [ db, url ] }
`,
		"database.yaml": `tosca_definitions_version: tosca_simple_yaml_1_3
` + profileImport + `- types.yaml
topology_template:
  inputs:
    name: { type: string }
    replicas: { type: integer, default: 1 }
  substitution_mappings:
    node_type: example.nodes.Database
    properties:
      size: [ replicas ]
  node_templates:
    schema:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          database: { get_input: name }
          replicas: { concat: [ { get_input: replicas } ] }
  outputs:
    url:
      value: { concat: [ 'postgres://', { get_input: name }, '.db:5432' ] }
`,
	}
}

// A node template whose type a service template of the package substitutes is deployed
// as a Service of its own: the child exists (named after its parent and node, labelled,
// owned), compiled from that template with the node's properties as inputs (by name and
// by the property mappings), its output reaching the parent's outputs through the node's
// attribute; the parent's node that requires it waits until it is Ready (here held back
// by an object of its name that is not its own); the parent's status names it; deleting
// the parent removes both.
func TestSubstitutedNodeIsAChildService(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	blocker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "core-db-schema"}, Data: map[string]string{"owner": "someone"}}
	g.Expect(env.client.Create(ctx, blocker)).To(Succeed())
	key := createService(t, ns, "core", upload(t, ns, "core", nestedPackage("")), nil)

	child := client.ObjectKey{Namespace: ns, Name: "core-db"}
	g.Eventually(func(g Gomega) {
		svc := getService(g, key)
		g.Expect(svc.Status.Nodes).To(ContainElement(And(HaveField("Name", "app"), HaveField("Phase", v1alpha1.NodePending), HaveField("WaitingFor", "node db"))))
		g.Expect(condition(getService(g, child), v1alpha1.ConditionStalled)).NotTo(BeNil())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	handledReconcile(t, key)
	err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "core-app"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "app is applied before the child it requires is Ready: %v", err)

	g.Expect(env.client.Delete(ctx, blocker)).To(Succeed())
	handledReconcile(t, child) // stalled: it looks again when asked (or after its retry interval)
	svc := waitReady(t, key)
	g.Expect(string(svc.Status.Outputs["database_url"].Raw)).To(Equal(`"postgres://orders.db:5432"`))
	g.Expect(svc.Status.Nodes).To(ContainElement(And(HaveField("Name", "db"), HaveField("Service", "core-db"))))
	sub := getService(g, child)
	g.Expect(sub.Spec.Template).To(Equal("database.yaml"))
	g.Expect(sub.Spec.Source).To(Equal(svc.Spec.Source))
	g.Expect(string(sub.Spec.Inputs["name"].Raw)).To(Equal(`"orders"`))
	g.Expect(string(sub.Spec.Inputs["replicas"].Raw)).To(Equal(`3`))
	g.Expect(sub.Labels).To(HaveKeyWithValue(v1alpha1.LabelParent, "core"))
	g.Expect(sub.OwnerReferences).To(ContainElement(HaveField("UID", svc.UID)))
	g.Expect(getConfigMap(g, ns, "core-db-schema").Data).To(Equal(map[string]string{"database": "orders", "replicas": "3"}))
	g.Expect(getConfigMap(g, ns, "core-app").Labels).To(HaveKeyWithValue(v1alpha1.LabelService, "core"))

	g.Expect(env.client.Delete(ctx, &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "core"}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, key, &v1alpha1.Service{})) && apierrors.IsNotFound(env.client.Get(ctx, child, &v1alpha1.Service{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	for _, name := range []string{"core-app", "core-db-schema"} {
		err := env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s left: %v", name, err)
	}
}

// A substituted node placed in another cluster (calaf.policies.Placement): its child
// Service deploys there (its objects there, the child itself beside its parent), its
// output reaches the parent, and deleting the parent removes both, there too.
func TestSubstitutedNodePlacedOnAnotherCluster(t *testing.T) {
	remoteCluster(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	remoteNamespace(t, ns)
	kubeconfigSecret(t, ns, "site-a", "value", remote.kubeconfig)
	placement := placedAtSiteA(`{ kubeconfig_secret: site-a }`)
	key := createService(t, ns, "edge", upload(t, ns, "edge", nestedPackage(placement)), nil)
	svc := waitReady(t, key)
	g.Expect(string(svc.Status.Outputs["database_url"].Raw)).To(Equal(`"postgres://orders.db:5432"`))
	child := getService(g, client.ObjectKey{Namespace: ns, Name: "edge-db"})
	g.Expect(child.Spec.KubeConfig).To(Equal(&v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: "site-a"}}))
	g.Expect(child.Status.Cluster).To(Equal(remote.server))
	g.Expect(remoteConfigMap(g, ns, "edge-db-schema").Data).To(HaveKeyWithValue("database", "orders"))
	absentLocally(g, ns, "edge-db-schema")
	g.Expect(getConfigMap(g, ns, "edge-app").Data).To(HaveKeyWithValue("role", "app"))

	g.Expect(env.client.Delete(ctx, &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, key, &v1alpha1.Service{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	err := remote.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edge-db-schema"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "left in the remote cluster: %v", err)
}

// A substituted node placed with delegate: true is handed to the Calaf operator serving
// that cluster: the child Service's copy there (with the uploaded package) is deployed by
// the site's operator, the child follows it and its output reaches the parent; deleting
// the parent removes the site's Service and its objects.
func TestSubstitutedNodeDelegatedToASite(t *testing.T) {
	siteOperator(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	remoteNamespace(t, ns)
	kubeconfigSecret(t, ns, "site-a", "value", remote.kubeconfig)
	placement := placedAtSiteA(`{ kubeconfig_secret: site-a, delegate: true }`)
	key := createService(t, ns, "hub", upload(t, ns, "hub", nestedPackage(placement)), nil)
	svc := waitReady(t, key)
	g.Expect(string(svc.Status.Outputs["database_url"].Raw)).To(Equal(`"postgres://orders.db:5432"`))
	child := client.ObjectKey{Namespace: ns, Name: "hub-db"}
	g.Expect(getService(g, child).Spec.KubeConfig).To(Equal(&v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: "site-a"}, Delegate: true}))
	atSite := &v1alpha1.Service{}
	g.Expect(remote.client.Get(ctx, child, atSite)).To(Succeed())
	g.Expect(atSite.Spec.KubeConfig).To(BeNil())
	g.Expect(atSite.Spec.Template).To(Equal("database.yaml"))
	g.Expect(remoteConfigMap(g, ns, "hub-db-schema").Data).To(HaveKeyWithValue("database", "orders"))
	absentLocally(g, ns, "hub-db-schema")

	g.Expect(env.client.Delete(ctx, &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hub"}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(ctx, key, &v1alpha1.Service{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	g.Expect(apierrors.IsNotFound(remote.client.Get(ctx, child, &v1alpha1.Service{}))).To(BeTrue(), "the site's Service is left")
	err := remote.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hub-db-schema"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "left at the site: %v", err)
}

// placedAtSiteA is the policies of a template that place node db with properties.
func placedAtSiteA(properties string) string {
	return `  policies:
  - db_at_site_a:
      type: calaf.policies.Placement
      targets: [ db ]
      properties: ` + properties + `
`
}
