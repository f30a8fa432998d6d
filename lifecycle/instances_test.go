package lifecycle_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// createNotInstantiated creates a Service NOT_INSTANTIATED and waits until it says so.
func createNotInstantiated(t *testing.T, ns, name string, src v1alpha1.Source) client.ObjectKey {
	t.Helper()
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceSpec{Source: src, InstantiationState: v1alpha1.NotInstantiated, Timeout: &metav1.Duration{Duration: time.Minute}}}
	NewWithT(t).Expect(env.client.Create(context.Background(), svc)).To(Succeed())
	key := client.ObjectKeyFromObject(svc)
	waitNotInstantiated(t, key)
	return key
}

// waitNotInstantiated waits until a Service says, for its generation, that nothing of it
// is left.
func waitNotInstantiated(t *testing.T, key client.ObjectKey) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = getService(g, key)
		ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonNotInstantiated), "Ready: %s", ready.Message)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(svc.Status.InstantiationState).To(Equal(v1alpha1.NotInstantiated))
		g.Expect(svc.Status.ObservedGeneration).To(Equal(svc.Generation))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	return svc
}

// stepNames lists the steps of an occurrence (not of its rollback) with their phases.
func stepNames(op *v1alpha1.Operation) []string {
	var names []string
	for _, s := range op.Status.Steps {
		if !s.Rollback {
			names = append(names, s.Name+": "+string(s.Phase))
		}
	}
	return names
}

// affected matches the affected pods of an occurrence: each pod named, of a change type,
// a UID and a node.
func affected(change v1alpha1.ChangeType, node string, pods ...string) []any {
	var out []any
	for _, pod := range pods {
		out = append(out, gstruct.MatchAllFields(gstruct.Fields{
			"Pod": Equal(pod), "UID": Not(BeEmpty()), "Node": Equal(node), "ChangeType": Equal(change),
		}))
	}
	return out
}

func deployment(ns, name string) bool {
	return exists(ns, &appsv1.Deployment{}, name)
}

// A Service created NOT_INSTANTIATED takes only INSTANTIATE and MODIFY (anything else is
// refused, saying so); INSTANTIATE deploys it (instantiate_start recorded Skipped: no pod
// runs yet) and reports the pods it added; an INSTANTIATE of an instantiated Service is
// refused; TERMINATE with keepInstance removes everything (the pods reported REMOVED) and
// leaves the Service NOT_INSTANTIATED, with its name; INSTANTIATE again starts at the
// level the package declares; deleted, it goes.
func TestInstantiateAndTerminateKeepingTheInstance(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	standIn(t, ns)
	key := createNotInstantiated(t, ns, "core", upload(t, ns, "core", scaledTemplate()))

	custom := v1alpha1.OperationSpec{Type: v1alpha1.OperationCustom, Node: "smf", Operation: "Standard.configure"}
	keep := v1alpha1.OperationSpec{Type: v1alpha1.OperationTerminate, Terminate: &v1alpha1.TerminateRequest{KeepInstance: true}}
	for spec, message := range map[*v1alpha1.OperationSpec]string{
		ptr.To(scaleOp("smf", v1alpha1.ScaleOut, 1)): "refused: Service core is NOT_INSTANTIATED: SCALE needs an instantiated Service (INSTANTIATE it first)",
		&custom: "refused: Service core is NOT_INSTANTIATED: CUSTOM needs an instantiated Service (INSTANTIATE it first)",
		&keep:   "refused: Service core is NOT_INSTANTIATED: there is nothing to terminate (delete the Service to remove the instance)",
	} {
		refused := waitState(t, occurrence(t, ns, "core", *spec), v1alpha1.StateFailed, time.Minute)
		g.Expect(refused.Status.Message).To(Equal(message))
		g.Expect(findCondition(refused, v1alpha1.ConditionReady).Reason).To(Equal(v1alpha1.OccurrenceRefused))
	}
	name := "core one"
	modify := occurrence(t, ns, "core", v1alpha1.OperationSpec{Type: v1alpha1.OperationModify, Modify: &v1alpha1.ModifyRequest{VnfInstanceName: &name}})
	waitState(t, modify, v1alpha1.StateCompleted, time.Minute)
	g.Expect(waitNotInstantiated(t, key).Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationVnfInstanceName, "core one"))
	g.Expect(deployment(ns, "core-smf")).To(BeFalse())

	inst := waitState(t, occurrence(t, ns, "core", v1alpha1.OperationSpec{Type: v1alpha1.OperationInstantiate}), v1alpha1.StateCompleted, time.Minute)
	g.Expect(stepNames(inst)).To(Equal([]string{"record the pods: Succeeded", "record what the Service runs: Succeeded",
		"hooks instantiate_start: Skipped", "change the Service: Succeeded"}))
	svc := waitReady(t, key)
	g.Expect(svc.Spec.InstantiationState).To(Equal(v1alpha1.Instantiated))
	g.Expect(svc.Status.InstantiationState).To(Equal(v1alpha1.Instantiated))
	pods := servicePods(g, ns, "core", "smf")
	g.Expect(pods).To(HaveLen(2))
	g.Expect(inst.Status.AffectedPods).To(ConsistOf(affected(v1alpha1.ChangeAdded, "smf", pods...)...))

	again := waitState(t, occurrence(t, ns, "core", v1alpha1.OperationSpec{Type: v1alpha1.OperationInstantiate}), v1alpha1.StateFailed, time.Minute)
	g.Expect(again.Status.Message).To(ContainSubstring("refused: Service core is INSTANTIATED: only a NOT_INSTANTIATED Service can be instantiated"))

	scale := waitState(t, occurrence(t, ns, "core", scaleOp("smf", v1alpha1.ScaleOut, 1)), v1alpha1.StateCompleted, time.Minute)
	scaled := servicePods(g, ns, "core", "smf")
	g.Expect(scaled).To(HaveLen(4))
	g.Expect(scale.Status.AffectedPods).To(ConsistOf(affected(v1alpha1.ChangeAdded, "smf", without(scaled, pods)...)...))

	term := waitState(t, occurrence(t, ns, "core", keep), v1alpha1.StateCompleted, time.Minute)
	g.Expect(term.Status.Message).To(Equal("Service core terminated: it is NOT_INSTANTIATED"))
	g.Expect(term.Status.AffectedPods).To(ConsistOf(affected(v1alpha1.ChangeRemoved, "smf", scaled...)...))
	g.Expect(term.OwnerReferences).To(HaveLen(1), "the Service stays: the occurrence goes with it")
	svc = waitNotInstantiated(t, key)
	g.Expect(deployment(ns, "core-smf")).To(BeFalse())
	g.Expect(servicePods(g, ns, "core", "smf")).To(BeEmpty())
	g.Expect(svc.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationVnfInstanceName, "core one"))
	g.Expect(svc.Status.Nodes).To(BeEmpty())

	// Instantiated again: at the level the package declares, not the one scaled to.
	waitState(t, occurrence(t, ns, "core", v1alpha1.OperationSpec{Type: v1alpha1.OperationInstantiate}), v1alpha1.StateCompleted, time.Minute)
	g.Expect(replicas(g, ns, "core-smf")).To(BeEquivalentTo(2))
	g.Expect(getService(g, key).Spec.Scale).To(BeEmpty())

	// FORCEFUL: the mark that skips the teardown operations is gone once nothing is left.
	forceful := v1alpha1.OperationSpec{Type: v1alpha1.OperationTerminate, Terminate: &v1alpha1.TerminateRequest{KeepInstance: true, TerminationType: v1alpha1.TerminationForceful}}
	waitState(t, occurrence(t, ns, "core", forceful), v1alpha1.StateCompleted, time.Minute)
	svc = waitNotInstantiated(t, key)
	g.Expect(svc.Annotations).NotTo(HaveKey(v1alpha1.AnnotationTeardown))
	g.Expect(deployment(ns, "core-smf")).To(BeFalse())

	g.Expect(env.client.Delete(context.Background(), svc)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.client.Get(context.Background(), key, &v1alpha1.Service{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
}

// without returns the names of all not in some.
func without(all, some []string) []string {
	var out []string
	for _, name := range all {
		found := false
		for _, s := range some {
			found = found || s == name
		}
		if !found {
			out = append(out, name)
		}
	}
	return out
}

// An INSTANTIATE that does not become healthy rolls back (rollback Auto): the Service is
// NOT_INSTANTIATED again and nothing of it is left.
func TestInstantiateRollsBack(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	c := standIn(t, ns)
	c.hold("cfg-broken", true)
	key := createNotInstantiated(t, ns, "cfg", upload(t, ns, "cfg", configTemplate("1", brokenNode)))
	spec := v1alpha1.OperationSpec{Type: v1alpha1.OperationInstantiate, Timeout: &metav1.Duration{Duration: 2 * time.Second}, Rollback: v1alpha1.RollbackAuto}
	op := waitState(t, occurrence(t, ns, "cfg", spec), v1alpha1.StateRolledBack, time.Minute)
	g.Expect(states(op)).To(Equal([]v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateProcessing,
		v1alpha1.StateFailedTemp, v1alpha1.StateRollingBack, v1alpha1.StateRolledBack}))
	svc := waitNotInstantiated(t, key)
	g.Expect(svc.Spec.InstantiationState).To(Equal(v1alpha1.NotInstantiated))
	g.Expect(exists(ns, &corev1.ConfigMap{}, "cfg-config")).To(BeFalse())
	g.Expect(deployment(ns, "cfg-broken")).To(BeFalse())
}

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

func defFiles(files ...string) map[string]apiextensionsv1.JSON {
	return map[string]apiextensionsv1.JSON{"lcm-kubernetes-def-files": jsonOf(files)}
}

// CHANGE_FLAVOUR moves an ETSI package's Service to another deployment flavour and level
// (its additionalParams merged over the Service's); one that does not become healthy rolls
// back to the flavour it left; an unknown flavour is refused with the package's flavours,
// and a Service whose package is not a VNF has none.
func TestChangeFlavour(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	c := standIn(t, ns)
	key := client.ObjectKey{Namespace: ns, Name: "cnf"}
	deploy(t, ns, "cnf", readTestPackage(t, "cnf-manifests"), func(svc *v1alpha1.Service) {
		svc.Spec.Instantiate = &v1alpha1.InstantiateRequest{FlavourID: "simple", InstantiationLevelID: "instantiation_level_1",
			AdditionalParams: defFiles("Files/kubernetes/front.yaml", "Files/kubernetes/store.yaml")}
	})
	g.Expect(getService(g, key).Status.VNF.Flavours).To(Equal([]string{"complex", "simple"}))

	unknown := waitState(t, occurrence(t, ns, "cnf", changeFlavour("huge", "")), v1alpha1.StateFailed, time.Minute)
	g.Expect(unknown.Status.Message).To(Equal("refused: flavour huge is not a deployment flavour of Service cnf (its flavours: complex, simple)"))

	c.hold("worker", true)
	spec := changeFlavour("complex", "large")
	spec.Timeout, spec.Rollback = &metav1.Duration{Duration: 2 * time.Second}, v1alpha1.RollbackAuto
	back := waitState(t, occurrence(t, ns, "cnf", spec), v1alpha1.StateRolledBack, time.Minute)
	g.Expect(back.Status.Previous.Instantiate.FlavourID).To(Equal("simple"))
	svc := waitReady(t, key)
	g.Expect(svc.Spec.Instantiate.FlavourID).To(Equal("simple"))
	g.Expect(svc.Status.VNF.FlavourID).To(Equal("simple"))
	g.Eventually(func() bool { return deployment(ns, "worker") }, 30*time.Second, 100*time.Millisecond).Should(BeFalse(), "the new flavour's worker is pruned")

	c.hold("worker", false)
	op := waitState(t, occurrence(t, ns, "cnf", changeFlavour("complex", "large")), v1alpha1.StateCompleted, time.Minute)
	svc = getService(g, key)
	g.Expect(svc.Status.VNF.FlavourID).To(Equal("complex"))
	g.Expect(svc.Status.VNF.InstantiationLevelID).To(Equal("large"))
	g.Expect(svc.Spec.Instantiate.AdditionalParams).To(HaveKey("namespace"), "additionalParams are merged")
	g.Expect(replicas(g, ns, "worker")).To(BeEquivalentTo(2))
	g.Expect(op.Status.AffectedPods).To(ConsistOf(affected(v1alpha1.ChangeAdded, "worker", servicePods(g, ns, "cnf", "worker")...)...))

	deploy(t, ns, "cfg", configTemplate("1", ""), nil)
	plain := waitState(t, occurrence(t, ns, "cfg", changeFlavour("complex", "")), v1alpha1.StateFailed, time.Minute)
	g.Expect(plain.Status.Message).To(Equal("refused: Service cfg deploys no ETSI SOL001 VNF: only a VNF package has deployment flavours"))
}

// changeFlavour is a CHANGE_FLAVOUR to the complex flavour's files (with a namespace
// parameter the Service did not have).
func changeFlavour(flavour, level string) v1alpha1.OperationSpec {
	params := defFiles("Files/kubernetes/worker.yaml", "Files/kubernetes/front.yaml", "Files/kubernetes/store.yaml")
	params["namespace"] = jsonOf("default")
	return v1alpha1.OperationSpec{Type: v1alpha1.OperationChangeFlavour,
		ChangeFlavour: &v1alpha1.ChangeFlavourRequest{NewFlavourID: flavour, InstantiationLevelID: level, AdditionalParams: params}}
}

// jsonOf encodes a value as JSON.
func jsonOf(v any) apiextensionsv1.JSON {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return apiextensionsv1.JSON{Raw: data}
}
