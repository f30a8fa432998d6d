package controller_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/policy"
	"calaf.io/calaf/tosca/sol004"
	"calaf.io/calaf/tosca/sol004/sol004test"
)

// clusterRolePackage renders a ClusterRole named name beside a ConfigMap, its manifest
// signed by creds (SOL004 option 1).
func clusterRolePackage(t *testing.T, name string, creds *sol004.Credentials) map[string]string {
	t.Helper()
	template := strings.ReplaceAll(`tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:vendor.render.thing: |-
    exports.render = function (node, ctx) {
      return [
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'NAME' }, data: { a: 'b' } },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'NAME' },
          rules: [ { apiGroups: [ '' ], resources: [ 'nodes' ], verbs: [ 'get' ] } ] },
      ];
    };
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
node_types:
  vendor.nodes.Thing:
    derived_from: calaf.nodes.Root
    metadata:
      calaf.render: vendor.render.thing
topology_template:
  node_templates:
    thing:
      type: vendor.nodes.Thing
`, "NAME", name)
	sum := sha256.Sum256([]byte(template))
	manifest, err := sol004.SignManifest([]byte("Source: service.yaml\nAlgorithm: SHA-256\nHash: "+hex.EncodeToString(sum[:])+"\n"), creds)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"service.yaml": template, "service.mf": string(manifest)}
}

// startWithOptions replaces the suite's operator, for the test, by one with changed
// options.
func startWithOptions(t *testing.T, change func(*operator.Options)) {
	t.Helper()
	env.stop()
	t.Cleanup(func() {
		if err := startOperator(false); err != nil {
			t.Error(err)
		}
	})
	opts := env.opts
	opts.Registry = prometheus.NewRegistry()
	change(&opts)
	process, err := operator.NewProcess(env.config, opts, zap.New(zap.Level(zapLevel())))
	if err != nil {
		t.Fatal(err)
	}
	mgr, _, err := process.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(env.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("operator: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// The cluster admin trusts the packages of one vendor's signing certificate with cluster
// RBAC (render policy signers[].clusterRBAC): a package it signed, verified against the
// operator's trust anchors, applies its ClusterRole. A package signed by a certificate of
// the same subject and issuer but another CA, which a tenant vouches for with its
// Service's own anchors (spec.verify.anchors), verifies — and is refused by the policy,
// its ClusterRole never created: a namespace cannot vouch for a signer the admin trusts.
func TestPolicyTrustsClusterRBACOfASigner(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vendor, err := sol004test.New("policy-vendor")
	g.Expect(err).NotTo(HaveOccurred())
	impostor, err := sol004test.New("policy-vendor") // the same names, another key
	g.Expect(err).NotTo(HaveOccurred())
	subject := vendor.Signer.Certificate.Subject.String()
	g.Expect(impostor.Signer.Certificate.Subject.String()).To(Equal(subject))
	startWithOptions(t, func(opts *operator.Options) {
		opts.Verify.Mode, opts.Verify.Anchors, opts.Verify.AnchorsFrom = sol004.Enforce, []*x509.Certificate{vendor.Root}, "the test's anchors"
		opts.RenderPolicy = &policy.Policy{Signers: []policy.SignerExceptions{{Subject: subject, ClusterRBAC: true}}}
	})

	ns := newNamespace(t)
	trusted := createService(t, ns, "trusted", upload(t, ns, "trusted", clusterRolePackage(t, ns+"-trusted", vendor.Signer)), nil)
	svc := waitReady(t, trusted)
	g.Expect(svc.Status.Package.Signer).NotTo(BeNil())
	g.Expect(svc.Status.Package.Signer.Subject).To(Equal(subject))
	role := &rbacv1.ClusterRole{}
	g.Expect(env.client.Get(ctx, types.NamespacedName{Name: ns + "-trusted"}, role)).To(Succeed())
	g.Expect(role.Rules).To(HaveLen(1))

	g.Expect(env.client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-anchors"},
		Data: map[string]string{"ca.crt": string(impostor.RootPEM())}})).To(Succeed())
	other := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "impostor"}, Spec: v1alpha1.ServiceSpec{
		Source: upload(t, ns, "impostor", clusterRolePackage(t, ns+"-impostor", impostor.Signer)),
		Verify: &v1alpha1.VerifySpec{Mode: v1alpha1.VerifyEnforce, Anchors: &v1alpha1.AnchorsReference{Kind: "ConfigMap", Name: "own-anchors"}},
	}}
	g.Expect(env.client.Create(ctx, other)).To(Succeed())
	refused := waitStalled(t, client.ObjectKeyFromObject(other), v1alpha1.ReasonPolicyViolation)
	g.Expect(refused.Status.Package.Signer.Subject).To(Equal(subject), "the impostor's signature verified with its namespace's anchors")
	g.Expect(condition(refused, v1alpha1.ConditionReady).Message).To(ContainSubstring(`ClusterRole "` + ns + `-impostor": refused by the render policy: ClusterRole.rbac.authorization.k8s.io is on the denylist`))
	g.Expect(env.client.Get(ctx, types.NamespacedName{Name: ns + "-impostor"}, &rbacv1.ClusterRole{})).NotTo(Succeed())

	g.Expect(env.client.Delete(ctx, svc)).To(Succeed())
	g.Eventually(func() bool {
		return env.client.Get(ctx, types.NamespacedName{Name: ns + "-trusted"}, &rbacv1.ClusterRole{}) != nil
	}, "30s", "100ms").Should(BeTrue(), "the trusted Service's ClusterRole outlives it")
}
