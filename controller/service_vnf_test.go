package controller_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// readTestPackage reads the files of one of the SOL001 test packages.
func readTestPackage(t *testing.T, name string) map[string]string {
	t.Helper()
	root := filepath.Join("..", "test", "etsi", name)
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A Service with spec.instantiate deploys the chosen flavour of a SOL001 package with the
// level's replicas and reports them in status.vnf, with the VNF's identity; another level changes the replicas in
// place; a wrong flavourId stalls with the package's flavours, leaving what runs alone.
// (Pods do not run on the API-server test ground: readiness is the node-mode tests'.)
func TestInstantiateRequestDrivesTheVNF(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	files := []apiextensionsv1.JSON{{Raw: []byte(`"Files/kubernetes/front.yaml"`)}, {Raw: []byte(`"Files/kubernetes/store.yaml"`)}}
	list := jsonList(files)
	svc := &v1alpha1.Service{}
	svc.Namespace, svc.Name = ns, "cnf"
	svc.Spec.Source = upload(t, ns, "cnf", readTestPackage(t, "cnf-manifests"))
	svc.Spec.Instantiate = &v1alpha1.InstantiateRequest{FlavourID: "simple", InstantiationLevelID: "instantiation_level_1",
		AdditionalParams: map[string]apiextensionsv1.JSON{"lcm-kubernetes-def-files": list}}
	g.Expect(env.client.Create(ctx, svc)).To(Succeed())
	key := client.ObjectKeyFromObject(svc)

	expectReplicas := func(front, store int32, level string, aspect int32) {
		g.Eventually(func(g Gomega) {
			svc := getService(g, key)
			g.Expect(svc.Status.VNF).NotTo(BeNil(), "conditions: %+v", svc.Status.Conditions)
			g.Expect(svc.Status.VNF.FlavourID).To(Equal("simple"))
			g.Expect(svc.Status.VNF.VnfdID).To(Equal("6f1d3c2a-5b7e-4c10-9a44-0e2b8d7c1f30"))
			g.Expect([]string{svc.Status.VNF.VnfProvider, svc.Status.VNF.VnfProductName, svc.Status.VNF.VnfSoftwareVersion, svc.Status.VNF.VnfdVersion}).
				To(Equal([]string{"Calaf Test Vendor", "Hello CNF", "1.0", "1.0"}))
			g.Expect(svc.Status.VNF.InstantiationLevelID).To(Equal(level))
			g.Expect(svc.Status.VNF.VDUs).To(ConsistOf(
				v1alpha1.VDUStatus{VduID: "front", Workload: "ReplicaSet/front", DesiredReplicas: front},
				v1alpha1.VDUStatus{VduID: "store", Workload: "StatefulSet/store", DesiredReplicas: store}))
			g.Expect(svc.Status.VNF.ScaleStatus).To(Equal([]v1alpha1.ScaleInfo{{AspectID: "front_aspect", ScaleLevel: aspect}}))
			g.Expect(svc.Status.VNF.MaxScaleLevels).To(Equal([]v1alpha1.ScaleInfo{{AspectID: "front_aspect", ScaleLevel: 2}}))
			var rs appsv1.ReplicaSet
			g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &rs)).To(Succeed())
			g.Expect(*rs.Spec.Replicas).To(Equal(front))
			var set appsv1.StatefulSet
			g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "store"}, &set)).To(Succeed())
			g.Expect(*set.Spec.Replicas).To(Equal(store))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	}
	expectReplicas(1, 1, "instantiation_level_1", 0)
	var before appsv1.ReplicaSet
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &before)).To(Succeed())

	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Instantiate.InstantiationLevelID = "instantiation_level_2" })
	expectReplicas(2, 2, "instantiation_level_2", 1)
	var after appsv1.ReplicaSet
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &after)).To(Succeed())
	g.Expect(after.UID).To(Equal(before.UID), "scaled in place")

	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Instantiate.FlavourID = "huge" })
	stalled := waitStalled(t, key, v1alpha1.ReasonInvalidPackage)
	g.Expect(condition(stalled, v1alpha1.ConditionStalled).Message).To(ContainSubstring(
		`flavourId "huge" is not a deployment flavour of this package; its flavours: complex (Definitions/hello_df_complex.yaml), simple (Definitions/hello_df_simple.yaml)`))
	g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &after)).To(Succeed())
	g.Expect(*after.Spec.Replicas).To(BeEquivalentTo(2), "what runs is left alone")
}

// jsonList encodes a list of JSON values as one JSON list.
func jsonList(items []apiextensionsv1.JSON) apiextensionsv1.JSON {
	raw := []byte("[")
	for i, item := range items {
		if i > 0 {
			raw = append(raw, ',')
		}
		raw = append(raw, item.Raw...)
	}
	return apiextensionsv1.JSON{Raw: append(raw, ']')}
}
