package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
	sourcepkg "calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// Scope is what the phases of one reconcile share.
type Scope struct {
	Service  *v1alpha1.Service
	Log      logr.Logger
	Inputs   map[string]any
	Redact   *redactor
	Artifact *sourcepkg.Artifact
	Compiled *tosca.Compiled
	Result   *render.Result
	// Attributes observed this reconcile, by node and name.
	Attributes map[string]map[string]any
	// renderedWith are the attributes the objects were rendered with (those in status at
	// the start of the reconcile).
	renderedWith map[string]map[string]any
	// Live objects read this reconcile, by node, keyed "Kind/name".
	Live map[string]map[string]*unstructured.Unstructured
	// Healthy nodes: their objects are current (and their operations done).
	Healthy map[string]bool
	// RequeueAfter, when set, asks for an earlier reconcile than the interval.
	RequeueAfter time.Duration

	nodes map[string]*v1alpha1.NodeStatus
}

// newScope returns an empty Scope for one reconcile of svc.
func newScope(ctx context.Context, svc *v1alpha1.Service) *Scope {
	return &Scope{
		Service:    svc,
		Log:        ctrl.LoggerFrom(ctx),
		Redact:     &redactor{},
		Attributes: map[string]map[string]any{},
		Live:       map[string]map[string]*unstructured.Unstructured{},
		Healthy:    map[string]bool{},
	}
}

// phase is one stage of a reconcile; it returns a *phaseError on failure.
type phase func(ctx context.Context, s *Scope) error

// reconcile runs the phases in order; the first failure decides the conditions and the
// requeue. Nothing already running is touched before the new revision is known good.
func (r *ServiceReconciler) reconcile(ctx context.Context, svc *v1alpha1.Service) (ctrl.Result, error) {
	s := newScope(ctx, svc)
	if svc.Annotations[v1alpha1.ReconcileRequestAnnotation] != "" {
		svc.Status.LastHandledReconcileAt = svc.Annotations[v1alpha1.ReconcileRequestAnnotation]
	}
	phases := []phase{r.reconcileSource, r.reconcileCompile, r.reconcileRender, r.reconcileDeploy, r.reconcilePrune, r.reconcileOutputs}
	for _, run := range phases {
		if err := run(ctx, s); err != nil {
			return r.handleFailure(s, err)
		}
	}
	return r.handleProgress(s), nil
}

// reconcileSource fetches the package.
func (r *ServiceReconciler) reconcileSource(ctx context.Context, s *Scope) error {
	artifact, err := r.Fetcher.Fetch(ctx, s.Service)
	if err != nil {
		return classifyFetch(err)
	}
	s.Artifact = artifact
	svc := s.Service
	svc.Status.LastAttemptedRevision = artifact.Revision
	pkgStatus := &v1alpha1.PackageStatus{Revision: artifact.Revision, Digest: artifact.Package.Digest, Entry: artifact.Package.Entry}
	if svc.Status.Package != nil && svc.Status.Package.Digest == pkgStatus.Digest {
		pkgStatus.TemplateName, pkgStatus.TemplateVersion = svc.Status.Package.TemplateName, svc.Status.Package.TemplateVersion
	}
	svc.Status.Package = pkgStatus
	setCondition(svc, v1alpha1.ConditionSourceReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "fetched revision "+artifact.Revision)
	return nil
}

// reconcileCompile resolves the inputs and compiles the package (cached by digest and
// inputs).
func (r *ServiceReconciler) reconcileCompile(ctx context.Context, s *Scope) error {
	inputs, err := r.resolveInputs(ctx, s.Service, s.Redact)
	if err != nil {
		return err
	}
	s.Inputs = inputs
	key := tosca.CacheKey(s.Artifact.Package.Digest, inputs)
	compiled, ok := r.Compiler.Cached(key, s.Artifact.Package)
	if !ok {
		if compiled = r.loadState(ctx, s.Service, key, s.Artifact.Package, inputs); compiled != nil {
			r.Compiler.Add(compiled)
		}
	}
	if compiled == nil {
		if compiled, err = r.Compiler.Compile(ctx, s.Artifact.Package, inputs); err != nil {
			return r.invalid(s, v1alpha1.ConditionCompiled, err)
		}
	}
	if err := r.saveState(ctx, s.Service, compiled); err != nil {
		return newPhaseError(v1alpha1.ConditionCompiled, v1alpha1.ReasonInternalError, retry, err)
	}
	s.Compiled = compiled
	if name, version := templateMetadata(compiled); name != "" {
		s.Service.Status.Package.TemplateName, s.Service.Status.Package.TemplateVersion = name, version
	}
	setCondition(s.Service, v1alpha1.ConditionCompiled, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "compiled "+s.Artifact.Package.Entry)
	return nil
}

// invalid turns a package or inputs problem into a stall with a readable, redacted
// message (the first diagnostics).
func (r *ServiceReconciler) invalid(s *Scope, condition string, err error) error {
	if !tosca.IsInvalid(err) {
		return newPhaseError(condition, v1alpha1.ReasonInternalError, retry, err)
	}
	diags := tosca.DiagnosticsOf(err)
	reason := v1alpha1.ReasonInvalidPackage
	lines := make([]string, 0, len(diags))
	for _, d := range diags {
		if strings.Contains(d.Path, "inputs[") || strings.Contains(d.Message, "input") {
			reason = v1alpha1.ReasonInvalidInputs
		}
		lines = append(lines, d.String())
	}
	if condition == v1alpha1.ConditionApplied && reason == v1alpha1.ReasonInvalidPackage {
		reason = v1alpha1.ReasonRenderFailed
	}
	const maxLines = 5
	if len(lines) > maxLines {
		lines = append(lines[:maxLines], fmt.Sprintf("(and %d more problems)", len(lines)-maxLines))
	}
	return stalled(condition, reason, "%s", s.Redact.String(strings.Join(lines, "; ")))
}

func templateMetadata(compiled *tosca.Compiled) (string, string) {
	tosca, _ := compiled.Clout.Properties["tosca"].(map[string]any)
	metadata, _ := tosca["metadata"].(map[string]any)
	name, _ := metadata["template_name"].(string)
	version, _ := metadata["template_version"].(string)
	return name, version
}

// reconcileRender renders the objects with the attributes observed last time (so the
// render is cached while nothing changes).
func (r *ServiceReconciler) reconcileRender(ctx context.Context, s *Scope) error {
	s.renderedWith = statusAttributes(s.Service)
	result, err := r.Renderer.Render(ctx, s.Compiled, r.renderOptions(s, s.renderedWith))
	if err != nil {
		return r.invalid(s, v1alpha1.ConditionApplied, err)
	}
	s.Result = result
	s.nodes = map[string]*v1alpha1.NodeStatus{}
	for _, old := range s.Service.Status.Nodes {
		old := old
		s.nodes[old.Name] = &old
	}
	return nil
}

func (r *ServiceReconciler) renderOptions(s *Scope, attributes map[string]map[string]any) render.Options {
	return render.Options{Service: s.Service.Name, Namespace: s.Service.Namespace, Attributes: attributes, Timeout: r.ScriptTimeout}
}

// statusAttributes returns the attributes recorded in status, by node.
func statusAttributes(svc *v1alpha1.Service) map[string]map[string]any {
	attributes := map[string]map[string]any{}
	for _, node := range svc.Status.Nodes {
		if len(node.Attributes) == 0 {
			continue
		}
		values := map[string]any{}
		for name, raw := range node.Attributes {
			values[name] = fromJSON(raw)
		}
		attributes[node.Name] = values
	}
	return attributes
}

// reconcileDeploy applies the nodes in dependency order: a node whose dependencies are not
// healthy yet waits (what it runs from an earlier revision stays untouched), the others
// are applied and checked.
func (r *ServiceReconciler) reconcileDeploy(ctx context.Context, s *Scope) error {
	svc := s.Service
	writer, manager, err := r.managerFor(svc)
	if err != nil {
		return newPhaseError(v1alpha1.ConditionApplied, v1alpha1.ReasonApplyFailed, retry, err)
	}
	var changes []string
	var statuses []v1alpha1.NodeStatus
	var applyErr *phaseError
	applied := map[string]bool{}
	for _, node := range s.Result.Nodes {
		st := s.nodeStatus(node)
		if applyErr != nil {
			statuses = append(statuses, *st)
			continue
		}
		if dep := firstUnhealthy(node.DependsOn, s.Healthy); dep != "" {
			st.Phase, st.WaitingFor, st.Message = v1alpha1.NodePending, "node "+dep, "waiting for node "+dep+" to be ready"
			r.observe(ctx, s, node, st, nil, true)
			statuses = append(statuses, *st)
			continue
		}
		if err := r.checkOwnership(ctx, svc, node.Objects); err != nil {
			st.Phase, st.Message, st.WaitingFor = v1alpha1.NodeFailed, err.Error(), ""
			if !errors.As(err, &applyErr) {
				applyErr = newPhaseError(v1alpha1.ConditionApplied, v1alpha1.ReasonApplyFailed, retry, err)
			}
			statuses = append(statuses, *st)
			continue
		}
		result, err := r.applyObjects(ctx, writer, manager, string(svc.UID), node.Objects, svc.Spec.Force)
		if result != nil {
			changes = append(changes, result.changes...)
			r.Metrics.countApplied(result.created, result.configured)
		}
		if err != nil {
			st.Phase, st.Message, st.WaitingFor = v1alpha1.NodeFailed, s.Redact.String(err.Error()), ""
			applyErr = classifyAPI(v1alpha1.ConditionApplied, v1alpha1.ReasonApplyFailed, err)
			statuses = append(statuses, *st)
			continue
		}
		applied[node.Name] = true
		for _, obj := range node.Objects {
			r.ensureWatched(obj.GroupVersionKind())
		}
		r.observe(ctx, s, node, st, result.applied, false)
		// Every ready node goes to the orchestrator: it runs the lifecycle operations due
		// and the Day-2 Operations requested (and refuses those naming no operation).
		if st.Phase == v1alpha1.NodeReady && r.Orchestrator != nil {
			configured, err := r.Orchestrator.Run(ctx, s, node, st)
			if err != nil {
				st.Phase, st.Message = v1alpha1.NodeFailed, s.Redact.String(err.Error())
			} else if !configured {
				st.Phase = v1alpha1.NodeConfiguring
			}
		}
		if st.Phase == v1alpha1.NodeReady {
			s.Healthy[node.Name] = true
		}
		statuses = append(statuses, *st)
	}
	svc.Status.Nodes = statuses
	svc.Status.Inventory = mergeInventory(svc.Status.Inventory, s.Result, applied)
	if len(changes) > 0 && r.Recorder != nil {
		r.Recorder.Eventf(svc, nil, "Normal", "Applied", "Apply", "%s", truncate(strings.Join(changes, "\n"), 1024))
	}
	if applyErr != nil {
		return applyErr
	}
	setCondition(svc, v1alpha1.ConditionApplied, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, fmt.Sprintf("applied revision %s", s.Artifact.Revision))
	return nil
}

// nodeStatus returns the status entry of a node, keeping what the last reconcile knew.
func (s *Scope) nodeStatus(node *render.Node) *v1alpha1.NodeStatus {
	st := &v1alpha1.NodeStatus{Name: node.Name, Type: node.Type, Phase: v1alpha1.NodePending}
	if old, ok := s.nodes[node.Name]; ok {
		st.Attributes = old.Attributes
		st.Operations = old.Operations
		st.Phase = old.Phase
	}
	st.DependsOn = node.DependsOn
	st.Objects = nil
	for _, obj := range node.Objects {
		st.Objects = append(st.Objects, obj.GetKind()+"/"+obj.GetName())
	}
	return st
}

func firstUnhealthy(names []string, healthy map[string]bool) string {
	for _, name := range names {
		if !healthy[name] {
			return name
		}
	}
	return ""
}

// observe reads the node's live objects, computes their health with kstatus, and reads
// the node's attributes from them.
func (r *ServiceReconciler) observe(ctx context.Context, s *Scope, node *render.Node, st *v1alpha1.NodeStatus, applied map[string]*unstructured.Unstructured, pending bool) {
	live := map[string]*unstructured.Unstructured{}
	var waiting []string
	failed := ""
	for _, obj := range node.Objects {
		ref := obj.GetKind() + "/" + obj.GetName()
		current, err := r.getLive(ctx, obj)
		if fresh, ok := applied[ref]; ok && (current == nil || newer(fresh, current)) {
			current, err = fresh, nil
		}
		if err != nil || current == nil {
			waiting = append(waiting, ref+" does not exist yet")
			continue
		}
		live[ref] = current
		result, err := status.Compute(current)
		if err != nil {
			waiting = append(waiting, ref+": "+err.Error())
			continue
		}
		switch result.Status {
		case status.CurrentStatus:
		case status.FailedStatus:
			failed = ref + ": " + result.Message
		default:
			msg := result.Message
			if msg == "" {
				msg = string(result.Status)
			}
			waiting = append(waiting, ref+": "+msg)
		}
	}
	s.Live[node.Name] = live
	values := node.Observe(secretless(live))
	for name, value := range operationAttributes(st) {
		values[name] = value
	}
	if len(values) > 0 {
		s.Attributes[node.Name] = values
		st.Attributes = toJSONMap(s.Redact, values)
	}
	if pending {
		return // waits for its dependencies: what runs now is an earlier revision, or nothing
	}
	switch {
	case failed != "":
		st.Phase, st.Message, st.WaitingFor = v1alpha1.NodeFailed, s.Redact.String(failed), ""
	case len(waiting) > 0:
		st.Phase, st.WaitingFor = v1alpha1.NodeProgressing, strings.SplitN(waiting[0], ":", 2)[0]
		st.Message = s.Redact.String(truncate(strings.Join(waiting, "; "), 512))
	default:
		st.Phase, st.Message, st.WaitingFor = v1alpha1.NodeReady, fmt.Sprintf("%d objects ready", len(node.Objects)), ""
	}
}

// newer tells whether a's resource version is newer than b's (etcd revisions increase).
func newer(a, b *unstructured.Unstructured) bool {
	ra, errA := strconv.ParseUint(a.GetResourceVersion(), 10, 64)
	rb, errB := strconv.ParseUint(b.GetResourceVersion(), 10, 64)
	return errA == nil && errB == nil && ra > rb
}

// secretless drops Secrets: attributes are never read from them, so no secret reaches status.
func secretless(live map[string]*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(live))
	for ref, obj := range live {
		if obj.GetKind() == "Secret" && obj.GroupVersionKind().Group == "" {
			continue
		}
		out[ref] = obj
	}
	return out
}

// reconcileOutputs re-evaluates the outputs with the attributes observed this time.
func (r *ServiceReconciler) reconcileOutputs(ctx context.Context, s *Scope) error {
	result := s.Result
	if len(s.Attributes) > 0 && !sameAttributes(s.Attributes, s.renderedWith) {
		rendered, err := r.Renderer.Render(ctx, s.Compiled, r.renderOptions(s, s.Attributes))
		if err == nil {
			result = rendered
		}
	}
	outputs := map[string]apiextensionsv1.JSON{}
	for name, value := range result.Outputs {
		if value == nil {
			continue
		}
		outputs[name] = toJSON(s.Redact.Value(value))
	}
	pending := map[string]string{}
	for name, message := range result.OutputErrors {
		pending[name] = s.Redact.String(truncate(message, 256))
	}
	for name, value := range result.Outputs {
		if value == nil {
			pending[name] = "no value yet"
		}
	}
	s.Service.Status.Outputs = emptyToNil(outputs)
	if len(pending) == 0 {
		pending = nil
	}
	s.Service.Status.PendingOutputs = pending
	return nil
}

func sameAttributes(a, b map[string]map[string]any) bool {
	return fmt.Sprint(normalize(a)) == fmt.Sprint(normalize(b))
}

func normalize(m map[string]map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for node, values := range m {
		out[node] = map[string]any{}
		for name, value := range values {
			out[node][name] = fromJSON(toJSON(value))
		}
	}
	return out
}

func emptyToNil(m map[string]apiextensionsv1.JSON) map[string]apiextensionsv1.JSON {
	if len(m) == 0 {
		return nil
	}
	return m
}

// handleProgress sets the conditions after all phases passed and decides the requeue.
func (r *ServiceReconciler) handleProgress(s *Scope) ctrl.Result {
	svc := s.Service
	var unready []string
	for _, node := range svc.Status.Nodes {
		if node.Phase != v1alpha1.NodeReady {
			unready = append(unready, node.Name)
		}
	}
	if len(unready) == 0 {
		svc.Status.ObservedGeneration = svc.Generation
		svc.Status.LastAppliedRevision = s.Artifact.Revision
		msg := fmt.Sprintf("revision %s: %d nodes ready", s.Artifact.Revision, len(svc.Status.Nodes))
		setCondition(svc, v1alpha1.ConditionHealthy, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "all objects are healthy")
		setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, msg)
		removeCondition(svc, v1alpha1.ConditionReconciling)
		removeCondition(svc, v1alpha1.ConditionStalled)
		return ctrl.Result{RequeueAfter: requeueAfter(durationOr(svc.Spec.Interval, v1alpha1.DefaultInterval))}
	}
	first := nodeByName(svc, unready[0])
	msg := fmt.Sprintf("%d of %d nodes not ready; %s: %s", len(unready), len(svc.Status.Nodes), first.Name, first.Message)
	reason := v1alpha1.ReasonProgressing
	if first.Phase == v1alpha1.NodeFailed {
		reason = v1alpha1.ReasonHealthCheckFailed
		if len(first.Operations) > 0 && failedOperation(first) {
			reason = v1alpha1.ReasonOperationFailed
		}
	}
	if reason == v1alpha1.ReasonProgressing && timedOut(svc) {
		reason = v1alpha1.ReasonHealthCheckFailed
		msg = "timeout waiting for health: " + msg
	}
	msg = truncate(msg, 1024)
	setCondition(svc, v1alpha1.ConditionHealthy, metav1.ConditionFalse, reason, msg)
	setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	setCondition(svc, v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonProgressing, msg)
	if reason == v1alpha1.ReasonOperationFailed {
		// An operation that failed for good (its retries used up) runs again only when the
		// package or the inputs change: the Service is stalled until then.
		setCondition(svc, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	} else {
		removeCondition(svc, v1alpha1.ConditionStalled)
	}
	after := r.ProgressInterval
	if s.RequeueAfter > 0 && s.RequeueAfter < after {
		after = s.RequeueAfter
	}
	return ctrl.Result{RequeueAfter: after}
}

func failedOperation(node *v1alpha1.NodeStatus) bool {
	for _, op := range node.Operations {
		if op.Phase == "Failed" {
			return true
		}
	}
	return false
}

// timedOut tells whether the Service has been progressing for longer than its timeout.
func timedOut(svc *v1alpha1.Service) bool {
	reconciling := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReconciling)
	timeout := durationOr(svc.Spec.Timeout, v1alpha1.DefaultTimeout)
	if reconciling == nil || reconciling.Status != metav1.ConditionTrue || timeout <= 0 {
		return false
	}
	return time.Since(reconciling.LastTransitionTime.Time) > timeout
}

func nodeByName(svc *v1alpha1.Service, name string) *v1alpha1.NodeStatus {
	for i := range svc.Status.Nodes {
		if svc.Status.Nodes[i].Name == name {
			return &svc.Status.Nodes[i]
		}
	}
	return &v1alpha1.NodeStatus{Name: name}
}

// handleFailure sets the conditions of a failed phase and decides the requeue: a stall
// waits for a change (checking again after the retry interval, never in a hot loop), a
// retry goes through the controller's exponential backoff.
func (r *ServiceReconciler) handleFailure(s *Scope, err error) (ctrl.Result, error) {
	svc := s.Service
	var pe *phaseError
	if !errors.As(err, &pe) {
		pe = newPhaseError(v1alpha1.ConditionReady, v1alpha1.ReasonInternalError, retry, err)
	}
	msg := truncate(s.Redact.String(pe.err.Error()), 2048)
	if pe.condition != v1alpha1.ConditionReady {
		setCondition(svc, pe.condition, metav1.ConditionFalse, pe.reason, msg)
	}
	setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionFalse, pe.reason, msg)
	retryAfter := durationOr(svc.Spec.Interval, v1alpha1.DefaultInterval)
	if svc.Spec.RetryInterval != nil {
		retryAfter = svc.Spec.RetryInterval.Duration
	}
	switch pe.policy {
	case stall:
		setCondition(svc, v1alpha1.ConditionStalled, metav1.ConditionTrue, pe.reason, msg)
		removeCondition(svc, v1alpha1.ConditionReconciling)
		s.Log.Info("stalled", "reason", pe.reason, "message", msg)
		return ctrl.Result{RequeueAfter: requeueAfter(retryAfter)}, nil
	case wait:
		setCondition(svc, v1alpha1.ConditionReconciling, metav1.ConditionTrue, pe.reason, msg)
		removeCondition(svc, v1alpha1.ConditionStalled)
		return ctrl.Result{RequeueAfter: pe.after}, nil
	default:
		setCondition(svc, v1alpha1.ConditionReconciling, metav1.ConditionTrue, pe.reason, msg)
		removeCondition(svc, v1alpha1.ConditionStalled)
		s.Log.Info("retrying", "reason", pe.reason, "message", msg)
		return ctrl.Result{}, &retryError{msg: pe.reason + ": " + msg}
	}
}

// retryError makes controller-runtime back off; its message is already redacted.
type retryError struct{ msg string }

func (e *retryError) Error() string { return e.msg }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
