package lifecycle

import (
	"context"
	"slices"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// A Service exists NOT_INSTANTIATED (spec.instantiationState) before its INSTANTIATE and
// after a TERMINATE that keeps it: the Service reconciler tears down what it ran and
// deploys nothing. An INSTANTIATE makes it INSTANTIATED (with the request's instantiate
// request, for an ETSI package) and waits until it is healthy; its rollback makes it
// NOT_INSTANTIATED again. A TERMINATE with keepInstance makes it NOT_INSTANTIATED and
// waits until nothing of it is left. A CHANGE_FLAVOUR moves an ETSI package's Service to
// another deployment flavour.

// wanted is what a Service asks to be: INSTANTIATED or NOT_INSTANTIATED.
func wanted(svc *v1alpha1.Service) v1alpha1.InstantiationState {
	if svc.Spec.InstantiationState == v1alpha1.NotInstantiated {
		return v1alpha1.NotInstantiated
	}
	return v1alpha1.Instantiated
}

// keepsInstance tells whether a TERMINATE leaves the Service, NOT_INSTANTIATED.
func keepsInstance(op *v1alpha1.Operation) bool {
	return op.Spec.Type == v1alpha1.OperationTerminate && op.Spec.Terminate != nil && op.Spec.Terminate.KeepInstance
}

// instantiateStartStep stands for the instantiate_start hooks: a NOT_INSTANTIATED Service
// runs no pod for them to run in, so they do not run (recorded Skipped).
var instantiateStartStep = step{name: "hooks instantiate_start", run: func(context.Context, *run, *v1alpha1.OperationStep) result {
	return skipped("no pod runs before the instantiation: the instantiate_start hooks do not run")
}}

// applyInstantiate makes the Service INSTANTIATED, with the request's instantiate request
// when it has one, at the level it asks for: the aspects' levels and the stop that earlier
// occurrences left are dropped.
func applyInstantiate(rn *run, svc *v1alpha1.Service) error {
	svc.Spec.InstantiationState, svc.Spec.Scale, svc.Spec.Stopped = v1alpha1.Instantiated, nil, false
	if req := rn.op.Spec.Instantiate; req != nil {
		svc.Spec.Instantiate = req.DeepCopy()
	}
	return nil
}

// applyChangeFlavour moves the instantiate request to the new flavour and level (the
// flavour's default level when none is given), merges its additionalParams (null
// removes one), and drops the aspects' own levels, which belonged to the old flavour.
func applyChangeFlavour(rn *run, spec *v1alpha1.ServiceSpec) error {
	req, prev := rn.op.Spec.ChangeFlavour, rn.op.Status.Previous
	instantiate := prev.Instantiate.DeepCopy()
	if instantiate == nil {
		instantiate = &v1alpha1.InstantiateRequest{}
	}
	instantiate.FlavourID, instantiate.InstantiationLevelID = req.NewFlavourID, req.InstantiationLevelID
	if req.AdditionalParams != nil {
		instantiate.AdditionalParams = mergedInputs(instantiate.AdditionalParams, req.AdditionalParams)
	}
	spec.Instantiate, spec.Scale = instantiate, nil
	return nil
}

// validateChangeFlavour refuses a Service that deploys no VNF, and a flavour its package
// does not have.
func validateChangeFlavour(req *v1alpha1.ChangeFlavourRequest, svc *v1alpha1.Service) error {
	vnf := svc.Status.VNF
	if vnf == nil {
		return refusef("Service %s deploys no ETSI SOL001 VNF: only a VNF package has deployment flavours", svc.Name)
	}
	if len(vnf.Flavours) > 0 && !slices.Contains(vnf.Flavours, req.NewFlavourID) {
		return refusef("flavour %s is not a deployment flavour of Service %s (its flavours: %s)", req.NewFlavourID, svc.Name, strings.Join(vnf.Flavours, ", "))
	}
	return nil
}

// tearDownStep makes the Service NOT_INSTANTIATED (FORCEFUL: marked to go without its
// teardown operations) and waits until nothing of it is left; past the graceful timeout
// its teardown operations are skipped. The mark is removed once nothing is left: it
// spoke for this teardown only.
var tearDownStep = step{name: "tear down what the Service runs", run: func(ctx context.Context, rn *run, rec *v1alpha1.OperationStep) result {
	if rn.svc == nil {
		return doneWith("the Service is gone")
	}
	if rec.Generation == 0 {
		generation, err := rn.patchSpec(ctx, stopInstance, rn.reconcileToken(rec))
		if err != nil {
			return waiting("making the Service NOT_INSTANTIATED: %v", err)
		}
		rec.Generation = generation
		return waiting("Service NOT_INSTANTIATED (generation %d): waiting for what it ran to go", generation)
	}
	graceful := gracefulTimeout(rn.op)
	switch {
	case notInstantiatedAt(rn.svc, rec.Generation):
		if err := keepTeardown(ctx, rn); err != nil {
			return waiting("removing the mark that skipped the teardown operations: %v", err)
		}
		return doneWith("nothing of Service %s is left: it is NOT_INSTANTIATED", rn.svc.Name)
	case rn.elapsed(rec) > graceful && !skipsTeardown(rn.svc):
		if err := skipTeardown(ctx, rn); err != nil {
			return waiting("marking the Service to go on without its teardown operations: %v", err)
		}
		return waiting("the graceful termination took longer than %v: going on without the stop and delete operations", graceful)
	case rn.elapsed(rec) > graceful+rn.timeout():
		return failed("what Service %s ran is still being torn down after %v: %s", rn.svc.Name, graceful+rn.timeout(), readyMessage(apimeta.FindStatusCondition(rn.svc.Status.Conditions, v1alpha1.ConditionReady)))
	}
	return waiting("waiting for what the Service ran to go; it says: %s", readyMessage(apimeta.FindStatusCondition(rn.svc.Status.Conditions, v1alpha1.ConditionReady)))
}}

// stopInstance makes the Service NOT_INSTANTIATED; a FORCEFUL termination marks it to go
// without its teardown operations.
func stopInstance(rn *run, svc *v1alpha1.Service) error {
	svc.Spec.InstantiationState = v1alpha1.NotInstantiated
	if forceful(rn.op) {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[v1alpha1.AnnotationTeardown] = v1alpha1.TeardownSkip
	}
	return nil
}

// notInstantiatedAt tells whether a Service says, at a generation or later, that nothing
// of it is left.
func notInstantiatedAt(svc *v1alpha1.Service, generation int64) bool {
	ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
	return svc.Status.InstantiationState == v1alpha1.NotInstantiated && svc.Status.ObservedGeneration >= generation &&
		ready != nil && ready.Status == metav1.ConditionTrue && ready.Reason == v1alpha1.ReasonNotInstantiated && ready.ObservedGeneration >= generation
}

// keepTeardown removes the mark that makes the Service go without its teardown
// operations.
func keepTeardown(ctx context.Context, rn *run) error {
	if !skipsTeardown(rn.svc) {
		return nil
	}
	svc := rn.svc.DeepCopy()
	patch := client.MergeFrom(svc.DeepCopy())
	delete(svc.Annotations, v1alpha1.AnnotationTeardown)
	if err := rn.r.Patch(ctx, svc, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	rn.svc = svc
	return nil
}
