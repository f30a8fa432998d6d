package lifecycle

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// defaultGracefulTimeout bounds a GRACEFUL termination that sets no timeout.
const defaultGracefulTimeout = 5 * time.Minute

// A TERMINATE deletes the Service: the Service reconciler runs the nodes' Standard stop
// and delete operations (GRACEFUL; FORCEFUL skips them, and so does a graceful
// termination past its timeout) and deletes every object, dependents first. The
// occurrence is not owned by the Service, so it outlives it and records the end.

// deleteServiceStep deletes the Service (marked to skip its teardown operations when
// FORCEFUL).
var deleteServiceStep = step{name: "delete the Service", run: func(ctx context.Context, rn *run, _ *v1alpha1.OperationStep) result {
	svc := rn.svc
	if svc == nil {
		return doneWith("the Service is gone")
	}
	if forceful(rn.op) {
		if err := skipTeardown(ctx, rn); err != nil {
			return waiting("marking the Service to go without its teardown operations: %v", err)
		}
	}
	if svc.DeletionTimestamp.IsZero() {
		if err := rn.r.Delete(ctx, svc, client.Preconditions{UID: &svc.UID}); err != nil && !apierrors.IsNotFound(err) {
			return failed("deleting Service %s: %v", svc.Name, err)
		}
	}
	return doneWith("Service %s deleting", svc.Name)
}}

// goneStep waits until the Service is gone; past the graceful timeout, its teardown
// operations are skipped.
var goneStep = step{name: "wait for everything to go", run: func(ctx context.Context, rn *run, rec *v1alpha1.OperationStep) result {
	if rn.svc == nil {
		return doneWith("the Service and everything it ran are gone")
	}
	graceful := gracefulTimeout(rn.op)
	if rn.elapsed(rec) > graceful && !skipsTeardown(rn.svc) {
		if err := skipTeardown(ctx, rn); err != nil {
			return waiting("marking the Service to go without its teardown operations: %v", err)
		}
		return waiting("the graceful termination took longer than %v: going on without the stop and delete operations", graceful)
	}
	if rn.elapsed(rec) > graceful+rn.timeout() {
		return failed("the Service is still being deleted after %v", graceful+rn.timeout())
	}
	return waiting("the Service is being deleted")
}}

func forceful(op *v1alpha1.Operation) bool {
	return op.Spec.Terminate != nil && op.Spec.Terminate.TerminationType == v1alpha1.TerminationForceful
}

func gracefulTimeout(op *v1alpha1.Operation) time.Duration {
	if op.Spec.Terminate != nil && op.Spec.Terminate.GracefulTerminationTimeout > 0 {
		return time.Duration(op.Spec.Terminate.GracefulTerminationTimeout) * time.Second
	}
	return defaultGracefulTimeout
}

func skipsTeardown(svc *v1alpha1.Service) bool {
	return svc.Annotations[v1alpha1.AnnotationTeardown] == v1alpha1.TeardownSkip
}

// skipTeardown marks the Service to go without its nodes' teardown operations.
func skipTeardown(ctx context.Context, rn *run) error {
	if skipsTeardown(rn.svc) {
		return nil
	}
	svc := rn.svc.DeepCopy()
	patch := client.MergeFrom(svc.DeepCopy())
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[v1alpha1.AnnotationTeardown] = v1alpha1.TeardownSkip
	if err := rn.r.Patch(ctx, svc, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	rn.svc = svc
	return nil
}
