package lifecycle

import (
	"context"
	"fmt"

	"calaf.io/calaf/api/v1alpha1"
)

// customStep runs a CUSTOM occurrence: once its turn comes it is marked Pending, which
// hands it to the orchestrator (it runs it in the node's pods once the node is ready,
// through the Service's reconcile, and records the result per pod); a retry hands it
// over again.
var customStep = step{name: "run the operation", run: func(_ context.Context, rn *run, rec *v1alpha1.OperationStep) result {
	op := rn.op
	if rec.Operation == "" {
		op.Status.Phase, op.Status.Results, op.Status.CompletionTime = v1alpha1.OperationPending, nil, nil
		rec.Operation = op.Name
		if rn.r.Notify != nil {
			rn.r.Notify(op.Namespace, op.Spec.ServiceName)
		}
		return waiting("waiting for node %s to be ready", op.Spec.Node)
	}
	switch op.Status.Phase {
	case v1alpha1.OperationSucceeded:
		rec.Outputs = outputsOf(op.Status.Results)
		return doneWith("%s ran in %d pods", op.Spec.Operation, len(op.Status.Results))
	case v1alpha1.OperationFailed:
		return failed("%s", op.Status.Message)
	case v1alpha1.OperationRunning:
		return waiting("%s runs in the pods of node %s", op.Spec.Operation, op.Spec.Node)
	}
	if rn.pastDeadline(rec) {
		return failed("node %s was not ready to run %s within %v", op.Spec.Node, op.Spec.Operation, rn.timeout())
	}
	return waiting("%s", fmt.Sprintf("waiting for node %s to be ready", op.Spec.Node))
}}
