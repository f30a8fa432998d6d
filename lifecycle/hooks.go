package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// Hooks are the Vnflcm (SOL001) and Lifecycle (Calaf profile) operations of the nodes.
// An occurrence runs each of its hooks once, as an Operation that the orchestrator runs
// in the node's ready pods like an on-demand operation: its outputs are recorded on the
// occurrence's step, and a hook that fails fails the step.

// readiness says what a hook does when its node is not ready.
type readiness int

const (
	// skipUnready skips the hook of a node that is not ready (the _start hooks).
	skipUnready readiness = iota
	// waitReady waits for the node (the _end hooks, after the change made it ready).
	waitReady
)

// hooks is the stage of the hooks named name of every node that declares one, in the
// Service's deployment order.
func hooks(name string, mode readiness) stage {
	return func(rn *run) []step {
		if rn.svc == nil || rn.svc.Status.Lifecycle == nil {
			return nil
		}
		var steps []step
		for _, node := range rn.svc.Status.Lifecycle.Hooks {
			for _, operation := range node.Operations {
				if _, op, _ := strings.Cut(operation, "."); op == name {
					steps = append(steps, hookStep(node.Node, operation, mode))
				}
			}
		}
		return steps
	}
}

// terminateHooks are the terminate_start hooks of a GRACEFUL termination.
func terminateHooks(rn *run) []step {
	if req := rn.op.Spec.Terminate; req != nil && req.TerminationType == v1alpha1.TerminationForceful {
		return nil
	}
	return hooks("terminate_start", skipUnready)(rn)
}

// hookStep runs a hook of a node: it starts an Operation of its own (named after the
// occurrence, the step and the attempt, so that a restart finds it instead of starting
// another), then follows it.
func hookStep(node, operation string, mode readiness) step {
	return step{name: fmt.Sprintf("hook %s on %s", operation, node), run: func(ctx context.Context, rn *run, rec *v1alpha1.OperationStep) result {
		if rec.Operation == "" {
			ready := nodeReady(rn.svc, node)
			switch {
			case !ready && mode == skipUnready:
				return skipped("node %s is not ready: the hook does not run", node)
			case !ready && rn.pastDeadline(rec):
				return failed("node %s did not become ready within %v to run the hook", node, rn.timeout())
			case !ready:
				return waiting("waiting for node %s to be ready", node)
			}
			name, err := rn.startHook(ctx, rec, node, operation)
			if err != nil {
				return failed("starting the hook: %v", err)
			}
			rec.Operation = name
			return waiting("running in the pods of node %s (Operation %s)", node, name)
		}
		return rn.followHook(ctx, rec)
	}}
}

// followHook reads the hook's Operation: its outputs and message once it succeeded, its
// failure, or where it stands.
func (rn *run) followHook(ctx context.Context, rec *v1alpha1.OperationStep) result {
	hook := &v1alpha1.Operation{}
	if err := rn.r.Get(ctx, client.ObjectKey{Namespace: rn.op.Namespace, Name: rec.Operation}, hook); err != nil {
		if apierrors.IsNotFound(err) && rn.pastDeadline(rec) {
			return failed("the hook's Operation %s is gone", rec.Operation)
		}
		return waiting("waiting for Operation %s", rec.Operation)
	}
	switch hook.Status.Phase {
	case v1alpha1.OperationSucceeded:
		rec.Outputs = outputsOf(hook.Status.Results)
		return doneWith("%s", hook.Status.Message)
	case v1alpha1.OperationFailed:
		return failed("%s", hook.Status.Message)
	}
	if rn.pastDeadline(rec) {
		return failed("the hook did not end within %v: %s", rn.timeout(), hook.Status.Message)
	}
	return waiting("%s", orDefault(hook.Status.Message, "waiting for the hook to run"))
}

// startHook creates (or finds, after a restart) the Operation that runs a hook, accepts
// it, and asks for a reconcile of the Service, which runs it.
func (rn *run) startHook(ctx context.Context, rec *v1alpha1.OperationStep, node, operation string) (string, error) {
	name := hookName(rn.op, rn.indexOf(rec), rec.Attempt)
	hook := &v1alpha1.Operation{}
	err := rn.r.Get(ctx, client.ObjectKey{Namespace: rn.op.Namespace, Name: name}, hook)
	if apierrors.IsNotFound(err) {
		hook, err = rn.createHook(ctx, name, node, operation)
	}
	if err != nil {
		return "", err
	}
	if hook.Status.Phase == "" {
		patch := client.MergeFromWithOptions(hook.DeepCopy(), client.MergeFromWithOptimisticLock{})
		hook.Status.Phase = v1alpha1.OperationPending
		hook.Status.Message = fmt.Sprintf("hook of %s %s: waiting for node %s to be ready", rn.op.Spec.Type, rn.op.Name, node)
		if err := rn.r.Status().Patch(ctx, hook, patch); err != nil {
			return "", err
		}
	}
	if rn.r.Notify != nil {
		rn.r.Notify(rn.op.Namespace, rn.op.Spec.ServiceName)
	}
	return name, nil
}

// createHook creates the Operation of a hook: owned by the occurrence and the Service,
// with the request of the occurrence as inputs.
func (rn *run) createHook(ctx context.Context, name, node, operation string) (*v1alpha1.Operation, error) {
	hook := &v1alpha1.Operation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rn.op.Namespace, Labels: map[string]string{
			v1alpha1.LabelService: rn.svc.Name, v1alpha1.LabelNode: render.LabelValue(node), v1alpha1.LabelOccurrence: occurrenceLabel(rn.op),
		}},
		Spec: v1alpha1.OperationSpec{ServiceName: rn.svc.Name, Type: v1alpha1.OperationCustom, Node: node, Operation: operation, Inputs: hookInputs(rn.op)},
	}
	if err := controllerutil.SetOwnerReference(rn.svc, hook, rn.r.Scheme()); err != nil {
		return nil, err
	}
	if err := controllerutil.SetControllerReference(rn.op, hook, rn.r.Scheme()); err != nil {
		return nil, err
	}
	return hook, rn.r.Create(ctx, hook)
}

// hookInputs hands a hook the occurrence: its name, type and request.
func hookInputs(op *v1alpha1.Operation) map[string]apiextensionsv1.JSON {
	var request any
	switch op.Spec.Type {
	case v1alpha1.OperationInstantiate:
		request = op.Spec.Instantiate
	case v1alpha1.OperationChangeFlavour:
		request = op.Spec.ChangeFlavour
	case v1alpha1.OperationScale:
		request = op.Spec.Scale
	case v1alpha1.OperationScaleToLevel:
		request = op.Spec.ScaleToLevel
	case v1alpha1.OperationHeal:
		request = op.Spec.Heal
	case v1alpha1.OperationChangePackage:
		request = op.Spec.ChangePackage
	case v1alpha1.OperationModify:
		request = op.Spec.Modify
	case v1alpha1.OperationOperate:
		request = op.Spec.Operate
	case v1alpha1.OperationTerminate:
		request = op.Spec.Terminate
	}
	inputs := map[string]apiextensionsv1.JSON{}
	for name, value := range map[string]any{"occurrence": op.Name, "operationType": op.Spec.Type, "request": request} {
		data, _ := json.Marshal(value)
		inputs[name] = apiextensionsv1.JSON{Raw: data}
	}
	return inputs
}

// indexOf is the position of a step's record.
func (rn *run) indexOf(rec *v1alpha1.OperationStep) int {
	for i := range rn.op.Status.Steps {
		if &rn.op.Status.Steps[i] == rec {
			return i
		}
	}
	return len(rn.op.Status.Steps)
}

var trailing = regexp.MustCompile(`[^a-z0-9]+$`)

// hookName names the Operation of a hook: "<occurrence>-<step>-<attempt>".
func hookName(op *v1alpha1.Operation, index int, attempt int32) string {
	base := op.Name
	if len(base) > 200 {
		base = trailing.ReplaceAllString(base[:200], "")
	}
	return fmt.Sprintf("%s-%d-%d", base, index, attempt)
}

var labelValue = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)

// occurrenceLabel is the value of the label that ties a hook to its occurrence: its name,
// or its UID when the name is no valid label value.
func occurrenceLabel(op *v1alpha1.Operation) string {
	if len(op.Name) <= 63 && labelValue.MatchString(op.Name) {
		return op.Name
	}
	return string(op.UID)
}

// nodeReady tells whether a node of the Service is Ready.
func nodeReady(svc *v1alpha1.Service, node string) bool {
	if svc == nil {
		return false
	}
	for _, st := range svc.Status.Nodes {
		if st.Name == node {
			return st.Phase == v1alpha1.NodeReady
		}
	}
	return false
}

// outputsOf merges the outputs of a run's pods (in pod order, the last one winning).
func outputsOf(results []v1alpha1.PodResult) map[string]apiextensionsv1.JSON {
	sorted := append([]v1alpha1.PodResult(nil), results...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Pod < sorted[j].Pod })
	var outputs map[string]apiextensionsv1.JSON
	for _, r := range sorted {
		for name, value := range r.Outputs {
			if outputs == nil {
				outputs = map[string]apiextensionsv1.JSON{}
			}
			outputs[name] = value
		}
	}
	return outputs
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
