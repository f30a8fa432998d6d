package lifecycle_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/vnfpackages"
)

// configData returns the data of the Service's ConfigMap.
func configData(g Gomega, ns, svc string) map[string]string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: svc + "-config"}, cm)).To(Succeed())
	return cm.Data
}

func exists(ns string, obj client.Object, name string) bool {
	err := env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	return !apierrors.IsNotFound(err)
}

// A MODIFY changes the Service's inputs and waits until the Service is healthy with them:
// STARTING → PROCESSING → COMPLETED, an Event and a condition for each, the steps
// recorded, and what the Service ran before kept for a rollback (its compiled package
// too).
func TestModifyCompletes(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	deploy(t, ns, "cfg", configTemplate("1", ""), nil)
	op := occurrence(t, ns, "cfg", v1alpha1.OperationSpec{Type: v1alpha1.OperationModify,
		Modify: &v1alpha1.ModifyRequest{Inputs: map[string]apiextensionsv1.JSON{"greeting": {Raw: []byte(`"bonjour"`)}}}})
	op = waitState(t, op, v1alpha1.StateCompleted, time.Minute)

	g.Expect(states(op)).To(Equal([]v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateCompleted}))
	g.Expect(configData(g, ns, "cfg")).To(HaveKeyWithValue("greeting", "bonjour"))
	svc := getService(g, client.ObjectKey{Namespace: ns, Name: "cfg"})
	g.Expect(string(svc.Spec.Inputs["greeting"].Raw)).To(Equal(`"bonjour"`))
	g.Expect(op.OwnerReferences).To(HaveLen(1))
	g.Expect(op.OwnerReferences[0].UID).To(Equal(svc.UID))

	var names []string
	for _, s := range op.Status.Steps {
		g.Expect(s.Phase).To(Equal(v1alpha1.StepSucceeded), "step %s: %s", s.Name, s.Message)
		names = append(names, s.Name)
	}
	g.Expect(names).To(Equal([]string{"record what the Service runs", "change the Service"}))
	g.Expect(op.Status.Previous).NotTo(BeNil())
	g.Expect(op.Status.Previous.Inputs).To(BeEmpty())
	g.Expect(op.Status.Previous.StateSecret).To(Equal(op.Name + ".calaf-previous"))
	g.Expect(exists(ns, &corev1.Secret{}, op.Status.Previous.StateSecret)).To(BeTrue(), "the compiled package of the previous revision is kept")

	ready := findCondition(op, v1alpha1.ConditionReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(ready.Reason).To(Equal(v1alpha1.OccurrenceCompleted))
	g.Expect(findCondition(op, v1alpha1.ConditionReconciling)).To(BeNil())
	g.Eventually(func() []string { return events(t, ns, op.Name) }, 10*time.Second).
		Should(ContainElements(v1alpha1.OccurrenceQueued, v1alpha1.OccurrenceProcessing, v1alpha1.OccurrenceCompleted))
}

// A CHANGE_PACKAGE to a revision that does not become healthy ends FAILED_TEMP with the
// reason; a rollback restores the previous revision (what the new one added is pruned, the
// old objects and outputs are back) and ends ROLLED_BACK.
func TestChangePackageRollsBack(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	w := readyWorkloads(t, ns)
	w.hold("cfg-broken", true)
	deploy(t, ns, "cfg", configTemplate("1", ""), nil)
	broken := upload(t, ns, "cfg-v2", configTemplate("2", addedConfig+brokenNode))
	op := occurrence(t, ns, "cfg", v1alpha1.OperationSpec{Type: v1alpha1.OperationChangePackage,
		ChangePackage: &v1alpha1.ChangePackageRequest{Source: broken}, Timeout: &metav1.Duration{Duration: 3 * time.Second}})
	op = waitState(t, op, v1alpha1.StateFailedTemp, time.Minute)
	g.Expect(op.Status.Message).To(ContainSubstring(`step "change the Service" failed: Service cfg did not become healthy within 3s`))
	g.Expect(findCondition(op, v1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(configData(g, ns, "cfg")).To(HaveKeyWithValue("version", "2"))
	g.Expect(exists(ns, &corev1.ConfigMap{}, "cfg-added")).To(BeTrue())

	g.Expect(update(op, func(op *v1alpha1.Operation) { op.Spec.Resolution = v1alpha1.ResolutionRollback })).To(Succeed())
	op = waitState(t, op, v1alpha1.StateRolledBack, time.Minute)
	g.Expect(states(op)).To(Equal([]v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateProcessing,
		v1alpha1.StateFailedTemp, v1alpha1.StateRollingBack, v1alpha1.StateRolledBack}))
	svc := waitReady(t, client.ObjectKey{Namespace: ns, Name: "cfg"})
	g.Expect(svc.Status.LastAppliedRevision).To(Equal(op.Status.Previous.Revision))
	g.Expect(string(svc.Status.Outputs["version"].Raw)).To(Equal(`"1"`))
	g.Expect(configData(g, ns, "cfg")).To(HaveKeyWithValue("version", "1"))
	g.Eventually(func() bool { return exists(ns, &corev1.ConfigMap{}, "cfg-added") }, 10*time.Second).Should(BeFalse(), "what the new revision added is pruned")
	g.Eventually(func() bool { return exists(ns, &appsv1.Deployment{}, "cfg-broken") }, 10*time.Second).Should(BeFalse())
	g.Expect(findCondition(op, v1alpha1.ConditionReady).Reason).To(Equal(v1alpha1.OccurrenceRolledBack))
}

// With rollback: Auto on the Service, a change that fails rolls back by itself (through
// FAILED_TEMP, so that subscribers see it).
func TestChangePackageRollsBackByItself(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	w := readyWorkloads(t, ns)
	w.hold("cfg-broken", true)
	deploy(t, ns, "cfg", configTemplate("1", ""), func(svc *v1alpha1.Service) { svc.Spec.Rollback = v1alpha1.RollbackAuto })
	broken := upload(t, ns, "cfg-v2", configTemplate("2", brokenNode))
	op := occurrence(t, ns, "cfg", v1alpha1.OperationSpec{Type: v1alpha1.OperationChangePackage,
		ChangePackage: &v1alpha1.ChangePackageRequest{Source: broken}, Timeout: &metav1.Duration{Duration: 2 * time.Second}})
	op = waitState(t, op, v1alpha1.StateRolledBack, time.Minute)
	g.Expect(states(op)).To(Equal([]v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateProcessing,
		v1alpha1.StateFailedTemp, v1alpha1.StateRollingBack, v1alpha1.StateRolledBack}))
	g.Expect(op.Status.Transitions[3].Message).To(ContainSubstring("rolling back by itself (rollback: Auto)"))
	waitReady(t, client.ObjectKey{Namespace: ns, Name: "cfg"})
	g.Expect(configData(g, ns, "cfg")).To(HaveKeyWithValue("version", "1"))
}

// A retry after the cause of the failure was fixed completes the change, without running
// again the steps that succeeded; a fail gives up for good.
func TestChangePackageRetryAfterTheFix(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	w := readyWorkloads(t, ns)
	w.hold("cfg-broken", true)
	deploy(t, ns, "cfg", configTemplate("1", ""), nil)
	v2 := upload(t, ns, "cfg-v2", configTemplate("2", brokenNode))
	op := occurrence(t, ns, "cfg", v1alpha1.OperationSpec{Type: v1alpha1.OperationChangePackage,
		ChangePackage: &v1alpha1.ChangePackageRequest{Source: v2}, Timeout: &metav1.Duration{Duration: 2 * time.Second}})
	op = waitState(t, op, v1alpha1.StateFailedTemp, time.Minute)
	snapshot := stepNamed(g, op, "record what the Service runs")

	w.hold("cfg-broken", false) // the fix
	g.Expect(update(op, func(op *v1alpha1.Operation) { op.Spec.Retries = 1 })).To(Succeed())
	op = waitState(t, op, v1alpha1.StateCompleted, time.Minute)
	g.Expect(states(op)).To(Equal([]v1alpha1.OperationState{v1alpha1.StateStarting, v1alpha1.StateProcessing,
		v1alpha1.StateFailedTemp, v1alpha1.StateProcessing, v1alpha1.StateCompleted}))
	g.Expect(stepNamed(g, op, "record what the Service runs")).To(Equal(snapshot), "a step that succeeded does not run again")
	g.Expect(stepNamed(g, op, "change the Service").Attempt).To(BeEquivalentTo(1))
	g.Expect(op.Status.Retries).To(BeEquivalentTo(1))
	g.Expect(configData(g, ns, "cfg")).To(HaveKeyWithValue("version", "2"))

	// A second change fails, and is failed for good: FAILED, the Service left as it is.
	w.hold("cfg-broken2", true)
	v3 := upload(t, ns, "cfg-v3", configTemplate("3", "    broken2:\n      type: calaf.nodes.Deployment\n      properties:\n        image: busybox\n"))
	op = occurrence(t, ns, "cfg", v1alpha1.OperationSpec{Type: v1alpha1.OperationChangePackage,
		ChangePackage: &v1alpha1.ChangePackageRequest{Source: v3}, Timeout: &metav1.Duration{Duration: 2 * time.Second}})
	waitState(t, op, v1alpha1.StateFailedTemp, time.Minute)
	g.Expect(update(op, func(op *v1alpha1.Operation) { op.Spec.Resolution = v1alpha1.ResolutionFail })).To(Succeed())
	op = waitState(t, op, v1alpha1.StateFailed, time.Minute)
	g.Expect(op.Status.Message).To(ContainSubstring("failed, as asked"))
	g.Expect(configData(g, ns, "cfg")).To(HaveKeyWithValue("version", "3"))
	g.Expect(update(op, func(op *v1alpha1.Operation) { op.Spec.Retries = 1 })).To(MatchError(ContainSubstring("only while the occurrence is FAILED_TEMP")))
}

func findCondition(op *v1alpha1.Operation, conditionType string) *metav1.Condition {
	for i := range op.Status.Conditions {
		if op.Status.Conditions[i].Type == conditionType {
			return &op.Status.Conditions[i]
		}
	}
	return nil
}

// stepNamed returns the record of a step of an occurrence (not of its rollback).
func stepNamed(g Gomega, op *v1alpha1.Operation, name string) v1alpha1.OperationStep {
	for _, step := range op.Status.Steps {
		if step.Name == name && !step.Rollback {
			return step
		}
	}
	g.Expect(name).To(BeEmpty(), "no step %q in %+v", name, op.Status.Steps)
	return v1alpha1.OperationStep{}
}

// A CHANGE_PACKAGE names the new package by VNFD id as a Service does: to a DISABLED
// package it fails (the Service is refused it: VnfPackageDisabled) and leaves FAILED_TEMP;
// a rollback puts the Service back on what it ran.
func TestChangePackageToADisabledVnfPackage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deploy(t, ns, "cfg", configTemplate("1", ""), nil)
	archive, err := vnfpackages.CSAR("cnf-manifests", vnfpackages.Options{Manifest: "hello.mf"})
	g.Expect(err).NotTo(HaveOccurred())
	src, err := vnfpackages.Upload(ctx, env.client, ns, "hello", archive)
	g.Expect(err).NotTo(HaveOccurred())
	pkg, err := vnfpackages.Create(ctx, env.client, ns, "hello", src, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(env.client.Get(ctx, client.ObjectKeyFromObject(pkg), pkg)).To(Succeed())
		g.Expect(pkg.Status.OnboardingState).To(Equal(v1alpha1.OnboardingOnboarded), "%+v", pkg.Status)
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	patch := client.MergeFrom(pkg.DeepCopy())
	pkg.Spec.OperationalState = v1alpha1.PackageDisabled
	g.Expect(env.client.Patch(ctx, pkg, patch)).To(Succeed())

	byVnfd := v1alpha1.Source{VnfPackage: &v1alpha1.VnfPackageSource{VnfdID: vnfpackages.HelloVnfdID}}
	op := occurrence(t, ns, "cfg", v1alpha1.OperationSpec{Type: v1alpha1.OperationChangePackage,
		ChangePackage: &v1alpha1.ChangePackageRequest{Source: byVnfd}, Timeout: &metav1.Duration{Duration: 3 * time.Second}})
	op = waitState(t, op, v1alpha1.StateFailedTemp, time.Minute)
	g.Expect(op.Status.Message).To(ContainSubstring("VnfPackage hello is DISABLED"))
	svc := getService(g, client.ObjectKey{Namespace: ns, Name: "cfg"})
	g.Expect(svc.Spec.Source.VnfPackage).NotTo(BeNil())
	stalled := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionStalled)
	g.Expect(stalled).NotTo(BeNil())
	g.Expect(stalled.Reason).To(Equal(v1alpha1.ReasonVnfPackageDisabled))
	g.Expect(configData(g, ns, "cfg")).To(HaveKeyWithValue("version", "1"), "what ran runs on")

	g.Expect(update(op, func(op *v1alpha1.Operation) { op.Spec.Resolution = v1alpha1.ResolutionRollback })).To(Succeed())
	waitState(t, op, v1alpha1.StateRolledBack, time.Minute)
	svc = waitReady(t, client.ObjectKey{Namespace: ns, Name: "cfg"})
	g.Expect(svc.Spec.Source.VnfPackage).To(BeNil())
}
