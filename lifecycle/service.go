package lifecycle

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
)

// previousSuffix names the copy of a Service's state Secret an occurrence keeps for its
// rollback ("<occurrence><suffix>").
const previousSuffix = ".calaf-previous"

// snapshotStep records what the Service runs before the occurrence changes it: its
// source, inputs, instantiate request, scale levels and stop, the revision, and — for a
// change of package, flavour or inputs — a copy of its compiled package, which a rollback
// puts back so that nothing is compiled again; for a MODIFY, what SOL003 says of the
// instance (its annotations).
var snapshotStep = step{name: "record what the Service runs", run: func(ctx context.Context, rn *run, _ *v1alpha1.OperationStep) result {
	if prev := rn.op.Status.Previous; prev != nil {
		return doneWith("revision %s recorded", prev.Revision)
	}
	svc := rn.svc
	spec := svc.Spec.DeepCopy()
	snap := &v1alpha1.ServiceSnapshot{
		Source: spec.Source, Inputs: spec.Inputs, InputsFrom: spec.InputsFrom, Instantiate: spec.Instantiate, Scale: spec.Scale,
		Stopped: spec.Stopped, Revision: svc.Status.LastAppliedRevision, Generation: svc.Generation, Levels: currentLevels(svc),
	}
	switch rn.op.Spec.Type {
	case v1alpha1.OperationChangePackage, v1alpha1.OperationModify, v1alpha1.OperationChangeFlavour:
		name, err := rn.copyState(ctx)
		if err != nil {
			return failed("keeping the compiled package of revision %s: %v", snap.Revision, err)
		}
		snap.StateSecret = name
	}
	if rn.op.Spec.Type == v1alpha1.OperationModify {
		snap.Annotations = instanceAnnotations(svc)
	}
	rn.op.Status.Previous = snap
	return doneWith("revision %s recorded", snap.Revision)
}}

// currentLevels returns the scale level of every aspect of a Service: its spec.scale,
// else what the package sets (status.lifecycle).
func currentLevels(svc *v1alpha1.Service) []v1alpha1.ScaleInfo {
	if svc.Status.Lifecycle == nil {
		return nil
	}
	var levels []v1alpha1.ScaleInfo
	for _, a := range svc.Status.Lifecycle.Aspects {
		levels = append(levels, v1alpha1.ScaleInfo{AspectID: a.AspectID, ScaleLevel: levelOf(svc.Spec.Scale, a.AspectID, a.ScaleLevel)})
	}
	return levels
}

// levelOf returns the level of an aspect in a list, or def.
func levelOf(levels []v1alpha1.ScaleInfo, aspect string, def int32) int32 {
	for _, info := range levels {
		if info.AspectID == aspect {
			return info.ScaleLevel
		}
	}
	return def
}

// withLevel returns levels with an aspect at a level.
func withLevel(levels []v1alpha1.ScaleInfo, aspect string, level int32) []v1alpha1.ScaleInfo {
	out := slices.Clone(levels)
	for i := range out {
		if out[i].AspectID == aspect {
			out[i].ScaleLevel = level
			return out
		}
	}
	out = append(out, v1alpha1.ScaleInfo{AspectID: aspect, ScaleLevel: level})
	slices.SortFunc(out, func(a, b v1alpha1.ScaleInfo) int {
		switch {
		case a.AspectID < b.AspectID:
			return -1
		case a.AspectID > b.AspectID:
			return 1
		}
		return 0
	})
	return out
}

// copyState copies the Service's state Secret (its compiled package) into a Secret the
// occurrence owns; "" when the Service has none.
func (rn *run) copyState(ctx context.Context) (string, error) {
	state := &corev1.Secret{}
	key := client.ObjectKey{Namespace: rn.svc.Namespace, Name: rn.svc.Name + v1alpha1.StateSecretSuffix}
	if err := rn.r.APIReader.Get(ctx, key, state); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	name := rn.op.Name + previousSuffix
	kept := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rn.op.Namespace,
			Annotations: map[string]string{v1alpha1.StateKeyAnnotation: state.Annotations[v1alpha1.StateKeyAnnotation]}},
		Type: state.Type, Data: state.Data,
	}
	if err := controllerutil.SetControllerReference(rn.op, kept, rn.r.Scheme()); err != nil {
		return "", err
	}
	if err := rn.r.Create(ctx, kept); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	return name, nil
}

// restoreState puts the kept compiled package back into the Service's state Secret.
func (rn *run) restoreState(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	kept := &corev1.Secret{}
	if err := rn.r.APIReader.Get(ctx, client.ObjectKey{Namespace: rn.op.Namespace, Name: name}, kept); err != nil {
		return client.IgnoreNotFound(err)
	}
	state := &corev1.Secret{}
	key := client.ObjectKey{Namespace: rn.svc.Namespace, Name: rn.svc.Name + v1alpha1.StateSecretSuffix}
	err := rn.r.APIReader.Get(ctx, key, state)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if state.Annotations[v1alpha1.StateKeyAnnotation] == kept.Annotations[v1alpha1.StateKeyAnnotation] {
		return nil
	}
	if apierrors.IsNotFound(err) {
		state = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
		if err := controllerutil.SetControllerReference(rn.svc, state, rn.r.Scheme()); err != nil {
			return err
		}
	}
	if state.Annotations == nil {
		state.Annotations = map[string]string{}
	}
	state.Annotations[v1alpha1.StateKeyAnnotation] = kept.Annotations[v1alpha1.StateKeyAnnotation]
	state.Type, state.Data = kept.Type, kept.Data
	if state.ResourceVersion == "" {
		return rn.r.Create(ctx, state)
	}
	return rn.r.Update(ctx, state)
}

// changeStep changes the Service with apply, once, then waits until the Service is
// healthy at the generation the change made.
func changeStep(apply func(*run, *v1alpha1.Service) error) step {
	return step{name: "change the Service", run: func(ctx context.Context, rn *run, rec *v1alpha1.OperationStep) result {
		if rn.svc == nil {
			return failed("Service %s is gone", rn.op.Spec.ServiceName)
		}
		if rec.Generation == 0 {
			if restarted, err := rn.restartStuckPods(ctx, rec); err != nil || restarted {
				if err != nil {
					return waiting("restarting the pods that were stuck: %v", err)
				}
				return waiting("restarted the pods that were stuck (%s): their replacements start with what was fixed", podNames(rec.Pods))
			}
			generation, err := rn.patchSpec(ctx, apply, rn.reconcileToken(rec))
			if apierrors.IsConflict(err) {
				return waiting("the Service changed meanwhile: changing it again")
			}
			if err != nil {
				return failed("changing the Service: %v", err)
			}
			rec.Generation = generation
			return waiting("Service changed (generation %d): waiting for it to be healthy", generation)
		}
		return rn.waitHealthy(rec)
	}}
}

// restartStuckPods, on a retry of a step, deletes the Service's pods whose containers wait
// for a reason that needed a fix (v1alpha1.StuckPodReasons: a missing ConfigMap, an image,
// a crash loop): what was fixed before the retry takes effect in their replacements now,
// not at the kubelet's next attempt, which the retry would otherwise judge too early. It
// does so once per attempt (the step records the pods) and tells whether it deleted any:
// the change waits for the next run of the step, when the cache knows them gone.
func (rn *run) restartStuckPods(ctx context.Context, rec *v1alpha1.OperationStep) (bool, error) {
	if rec.Attempt == 0 || len(rec.Pods) > 0 {
		return false, nil
	}
	c, err := rn.pods(ctx)
	if err != nil {
		return false, err
	}
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(rn.svc.Namespace), client.MatchingLabels{v1alpha1.LabelService: rn.svc.Name}); err != nil {
		return false, err
	}
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.DeletionTimestamp != nil || !ownsPod(rn.svc, pod) || !stuck(pod) {
			continue
		}
		precondition := metav1.Preconditions{UID: &pod.UID}
		if err := c.Delete(ctx, pod, client.Preconditions(precondition)); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("deleting pod %s: %w", pod.Name, err)
		}
		rec.Pods = append(rec.Pods, pod.Name+"/"+string(pod.UID))
	}
	return len(rec.Pods) > 0, nil
}

// stuck tells whether a container of a pod waits for one of v1alpha1.StuckPodReasons.
func stuck(pod *corev1.Pod) bool {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range statuses {
			if st.State.Waiting != nil && slices.Contains(v1alpha1.StuckPodReasons, st.State.Waiting.Reason) {
				return true
			}
		}
	}
	return false
}

// restoreStep puts back what the Service ran before the occurrence (its compiled package
// too), then waits until it is healthy again.
var restoreStep = step{name: "restore what the Service ran", run: func(ctx context.Context, rn *run, rec *v1alpha1.OperationStep) result {
	prev := rn.op.Status.Previous
	switch {
	case prev == nil:
		return skipped("the occurrence changed nothing")
	case rn.svc == nil:
		return failed("Service %s is gone", rn.op.Spec.ServiceName)
	}
	if rec.Generation == 0 {
		if err := rn.restoreState(ctx, prev.StateSecret); err != nil {
			return failed("putting back the compiled package of revision %s: %v", prev.Revision, err)
		}
		generation, err := rn.patchSpec(ctx, restore, rn.reconcileToken(rec))
		if apierrors.IsConflict(err) {
			return waiting("the Service changed meanwhile: restoring it again")
		}
		if err != nil {
			return failed("restoring the Service: %v", err)
		}
		rec.Generation = generation
		return waiting("Service restored to revision %s (generation %d): waiting for it to be healthy", prev.Revision, generation)
	}
	return rn.waitHealthy(rec)
}}

// patchSpec changes the Service's spec (and annotations) with apply and asks for a
// reconcile with token (one write, with optimistic locking: a Service changed meanwhile is
// a conflict), and returns the generation it has then. The token tells the reconcile that
// judged the Service after the change — a retry changes nothing, and the conditions from
// before it must not count.
func (rn *run) patchSpec(ctx context.Context, apply func(*run, *v1alpha1.Service) error, token string) (int64, error) {
	svc := rn.svc.DeepCopy()
	if err := apply(rn, svc); err != nil {
		return 0, err
	}
	if apiequality.Semantic.DeepEqual(svc.Spec, rn.svc.Spec) && apiequality.Semantic.DeepEqual(svc.Annotations, rn.svc.Annotations) &&
		svc.Annotations[v1alpha1.ReconcileRequestAnnotation] == token {
		return svc.Generation, nil
	}
	patch := client.MergeFromWithOptions(rn.svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[v1alpha1.ReconcileRequestAnnotation] = token
	if err := rn.r.Patch(ctx, svc, patch); err != nil {
		return 0, err
	}
	rn.svc = svc
	return svc.Generation, nil
}

// reconcileToken is the reconcile request of a step's change.
func (rn *run) reconcileToken(rec *v1alpha1.OperationStep) string {
	return fmt.Sprintf("lcm-%s-%d-%d", rn.op.UID, rn.indexOf(rec), rec.Attempt)
}

// judged tells whether the Service's status comes from a reconcile after a step's change:
// the one it asked for, or a later one someone else asked for.
func (rn *run) judged(rec *v1alpha1.OperationStep) bool {
	token := rn.reconcileToken(rec)
	return rn.svc.Status.LastHandledReconcileAt == token || rn.svc.Annotations[v1alpha1.ReconcileRequestAnnotation] != token
}

// waitHealthy waits until the Service is Ready at the generation of a step's change; it
// fails when the Service stalls or reports a failed health check or operation at that
// generation, or after the occurrence's timeout.
func (rn *run) waitHealthy(rec *v1alpha1.OperationStep) result {
	svc, generation := rn.svc, rec.Generation
	if svc == nil {
		return failed("Service %s is gone", rn.op.Spec.ServiceName)
	}
	ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
	current := ready != nil && ready.ObservedGeneration >= generation
	switch {
	case current && ready.Status == metav1.ConditionTrue && svc.Status.ObservedGeneration >= generation:
		return doneWith("Service healthy at generation %d (revision %s)", generation, svc.Status.LastAppliedRevision)
	case current && rn.judged(rec) && failing(svc, generation):
		return failed("Service %s is not healthy at generation %d: %s: %s", svc.Name, generation, ready.Reason, ready.Message)
	case rn.pastDeadline(rec):
		return failed("Service %s did not become healthy within %v: %s", svc.Name, rn.timeout(), readyMessage(ready))
	}
	return waiting("waiting for the Service to be healthy at generation %d: %s", generation, readyMessage(ready))
}

// failing tells whether a Service reports, at a generation, a failure that waiting will
// not mend: Stalled, a failed health check (a failed object, pods that cannot start, the
// Service's timeout) or a failed operation.
func failing(svc *v1alpha1.Service, generation int64) bool {
	if stalled := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionStalled); stalled != nil &&
		stalled.Status == metav1.ConditionTrue && stalled.ObservedGeneration >= generation {
		return true
	}
	ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
	return ready != nil && (ready.Reason == v1alpha1.ReasonHealthCheckFailed || ready.Reason == v1alpha1.ReasonOperationFailed)
}

func readyMessage(ready *metav1.Condition) string {
	if ready == nil {
		return "not reconciled yet"
	}
	return fmt.Sprintf("%s (%s)", ready.Message, ready.Reason)
}

// applyScale moves the aspect by the steps, from the level it had when the occurrence
// started.
func applyScale(rn *run, spec *v1alpha1.ServiceSpec) error {
	req, prev := rn.op.Spec.Scale, rn.op.Status.Previous
	from := levelOf(prev.Levels, req.AspectID, 0)
	spec.Scale = withLevel(prev.Scale, req.AspectID, from+signedSteps(req))
	return nil
}

// signedSteps is a scale request's steps, negative for SCALE_IN.
func signedSteps(req *v1alpha1.ScaleRequest) int32 {
	steps := max(req.NumberOfSteps, 1)
	if req.Type == v1alpha1.ScaleIn {
		return -steps
	}
	return steps
}

// applyScaleToLevel sets the instantiation level (and drops the aspects' own levels), or
// the levels of the aspects named.
func applyScaleToLevel(rn *run, spec *v1alpha1.ServiceSpec) error {
	req, prev := rn.op.Spec.ScaleToLevel, rn.op.Status.Previous
	if req.InstantiationLevelID != "" {
		instantiate := prev.Instantiate.DeepCopy()
		if instantiate == nil {
			instantiate = &v1alpha1.InstantiateRequest{}
		}
		instantiate.InstantiationLevelID = req.InstantiationLevelID
		spec.Instantiate, spec.Scale = instantiate, nil
		return nil
	}
	levels := slices.Clone(prev.Scale)
	for _, info := range req.ScaleInfo {
		levels = withLevel(levels, info.AspectID, info.ScaleLevel)
	}
	spec.Scale = levels
	return nil
}

// applyChangePackage points the Service at the new package (and its inputs and
// instantiate request, when given).
func applyChangePackage(rn *run, spec *v1alpha1.ServiceSpec) error {
	req := rn.op.Spec.ChangePackage
	spec.Source = *req.Source.DeepCopy()
	if req.Inputs != nil {
		spec.Inputs = cloneInputs(req.Inputs)
	}
	if req.Instantiate != nil {
		spec.Instantiate = req.Instantiate.DeepCopy()
	}
	return nil
}

// applyOperate stops or starts the Service's workloads.
func applyOperate(rn *run, spec *v1alpha1.ServiceSpec) error {
	spec.Stopped = rn.op.Spec.Operate.ChangeStateTo == v1alpha1.ChangeStateStopped
	return nil
}

// restore puts back what the occurrence's type changed.
func restore(rn *run, svc *v1alpha1.Service) error {
	prev, spec := rn.op.Status.Previous.DeepCopy(), &svc.Spec
	switch rn.op.Spec.Type {
	case v1alpha1.OperationInstantiate:
		spec.InstantiationState, spec.Instantiate, spec.Scale, spec.Stopped = v1alpha1.NotInstantiated, prev.Instantiate, prev.Scale, prev.Stopped
	case v1alpha1.OperationChangeFlavour:
		spec.Instantiate, spec.Scale = prev.Instantiate, prev.Scale
	case v1alpha1.OperationScale:
		spec.Scale = prev.Scale
	case v1alpha1.OperationScaleToLevel:
		spec.Scale, spec.Instantiate = prev.Scale, prev.Instantiate
	case v1alpha1.OperationChangePackage:
		spec.Source, spec.Inputs, spec.Instantiate = prev.Source, prev.Inputs, prev.Instantiate
	case v1alpha1.OperationModify:
		spec.Inputs, spec.Source = prev.Inputs, prev.Source
		restoreInstanceAnnotations(svc, prev.Annotations)
	case v1alpha1.OperationOperate:
		spec.Stopped = prev.Stopped
	}
	return nil
}

func cloneInputs(in map[string]apiextensionsv1.JSON) map[string]apiextensionsv1.JSON {
	if in == nil {
		return nil
	}
	out := make(map[string]apiextensionsv1.JSON, len(in))
	for k, v := range in {
		out[k] = *v.DeepCopy()
	}
	return out
}
