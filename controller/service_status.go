package controller

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/redact"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/orchestration"
)

// Every condition of a Service and every node phase is computed here, from what the
// phases found: the phases record facts (passed, nodeOutcome), these functions word them.

// passed is what the phases of a reconcile achieved.
type passed struct {
	revision string // the revision fetched
	// verification is how the package's signature was checked ("" when not at all).
	verification string
	entry        string // the template compiled
	applied      bool   // every node applied (or waiting for its dependencies)
	// notInstantiated: the Service is NOT_INSTANTIATED and nothing of it is left (or,
	// with a failure, its teardown failed).
	notInstantiated bool
}

// nodeOutcome is what one reconcile learned of a node.
type nodeOutcome struct {
	objects int
	// blockedBy names the first dependency that is not ready: the node waits for it.
	blockedBy string
	// failure is why the node's objects could not be applied (take-over refused, or the
	// API server's answer).
	failure error
	// health is what kstatus says of the applied objects.
	health *health
	// operations is what the orchestrator decided, when the objects were healthy.
	operations *orchestration.Result
}

// awaitsObservation tells whether a node that was applied waits only for the
// controllers of its objects to look at them (no failure, no operation under way).
func (o nodeOutcome) awaitsObservation() bool {
	return o.blockedBy == "" && o.failure == nil && o.health != nil && o.health.awaitsObservation() && o.operations == nil
}

// setNodePhase sets a node's phase, message, reason and what it waits for from its
// outcome, with secrets hidden before anything is cut short.
func setNodePhase(st *v1alpha1.NodeStatus, o nodeOutcome, secrets *redact.Secrets) {
	if o.health != nil && len(o.health.waiting) > 0 {
		h := *o.health
		h.waiting = make([]string, len(o.health.waiting))
		for i, waiting := range o.health.waiting {
			h.waiting[i] = secrets.String(waiting)
		}
		o.health = &h
	}
	st.Phase, st.Message, st.WaitingFor = nodePhase(o)
	st.Message = secrets.String(st.Message)
	st.Reason = ""
	switch {
	case st.Phase != v1alpha1.NodeFailed:
	case o.health != nil && o.health.failed != "":
		st.Reason = o.health.reason
	case o.operations != nil && o.operations.Failure != nil:
		st.Reason = v1alpha1.ReasonOperationFailed
	}
}

// nodePhase words a node's outcome: Pending while a dependency is not ready, Failed when
// it could not be applied, an object failed or an operation failed for good, Progressing
// while objects are not current, Configuring while operations run, else Ready.
func nodePhase(o nodeOutcome) (phase v1alpha1.NodePhase, message, waitingFor string) {
	switch {
	case o.blockedBy != "":
		return v1alpha1.NodePending, "waiting for node " + o.blockedBy + " to be ready", "node " + o.blockedBy
	case o.failure != nil:
		return v1alpha1.NodeFailed, o.failure.Error(), ""
	case o.health == nil:
		return v1alpha1.NodePending, "", ""
	case o.health.failed != "":
		return v1alpha1.NodeFailed, o.health.failed, ""
	case len(o.health.waiting) > 0:
		first := strings.SplitN(o.health.waiting[0], ":", 2)[0]
		return v1alpha1.NodeProgressing, text.Truncate(strings.Join(o.health.waiting, "; "), 512), first
	case o.operations == nil || o.operations.Done:
		return v1alpha1.NodeReady, objectsReady(o.objects), ""
	case o.operations.Failure != nil:
		return v1alpha1.NodeFailed, o.operations.Failure.Error(), ""
	case o.operations.Message != "":
		return v1alpha1.NodeConfiguring, o.operations.Message, ""
	}
	return v1alpha1.NodeConfiguring, objectsReady(o.objects), ""
}

// finish sets the conditions from what the reconcile achieved and how it ended, and
// decides the requeue: a stall waits for a change (checking again after the retry
// interval, never in a hot loop), a retry goes through the controller's exponential
// backoff, progress is checked again soon, a Ready Service at its interval.
func (r *ServiceReconciler) finish(s *scope, err error) (ctrl.Result, error) {
	failure := asPhaseError(err)
	message := ""
	if failure != nil {
		message = text.Truncate(s.Redact.String(failure.err.Error()), 2048)
		switch failure.policy {
		case stall:
			s.Log.Info("stalled", "reason", failure.reason, "message", message)
		case retry:
			s.Log.Info("retrying", "reason", failure.reason, "message", message)
		}
	}
	setConditions(s.Service, s.passed, failure, message, time.Now())
	return requeueFor(s.Service, failure, message, r.ProgressInterval, s.RequeueAfter)
}

func asPhaseError(err error) *phaseError {
	if err == nil {
		return nil
	}
	var pe *phaseError
	if !errors.As(err, &pe) {
		pe = newPhaseError(v1alpha1.ConditionReady, v1alpha1.ReasonInternalError, retry, err)
	}
	return pe
}

// setConditions sets every condition of a reconcile's end: those of the phases that
// passed, then the failed phase's (with Ready, Reconciling, Stalled), or, when all passed,
// Healthy and Ready from the node phases.
func setConditions(svc *v1alpha1.Service, p passed, failure *phaseError, message string, now time.Time) {
	if p.revision != "" {
		message := "fetched revision " + p.revision
		if p.verification != "" {
			message += "; " + p.verification
		}
		setCondition(svc, v1alpha1.ConditionSourceReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, message)
	}
	if p.entry != "" {
		setCondition(svc, v1alpha1.ConditionCompiled, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "compiled "+p.entry)
	}
	if p.applied {
		setCondition(svc, v1alpha1.ConditionApplied, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "applied revision "+p.revision)
		svc.Status.InstantiationState = v1alpha1.Instantiated
	}
	if p.notInstantiated {
		if failure != nil {
			setFailed(svc, failure, text.Truncate(tearingDown+message, 1024))
			return
		}
		setNotInstantiated(svc)
		return
	}
	if failure != nil {
		setFailed(svc, failure, message)
		return
	}
	setProgress(svc, p.revision, now)
}

// stages are the conditions of the pipeline's stages, in order.
var stages = []string{v1alpha1.ConditionSourceReady, v1alpha1.ConditionCompiled, v1alpha1.ConditionApplied, v1alpha1.ConditionHealthy}

// setFailed sets the conditions of a failed phase; the stages after it are not known for
// this generation (Unknown, NotReached), whatever an earlier generation left there.
func setFailed(svc *v1alpha1.Service, failure *phaseError, message string) {
	if failure.condition != v1alpha1.ConditionReady {
		setCondition(svc, failure.condition, metav1.ConditionFalse, failure.reason, message)
		if i := slices.Index(stages, failure.condition); i >= 0 {
			for _, later := range stages[i+1:] {
				setCondition(svc, later, metav1.ConditionUnknown, v1alpha1.ReasonNotReached,
					fmt.Sprintf("not reached in generation %d: %s is False (%s)", svc.Generation, failure.condition, failure.reason))
			}
		}
	}
	setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionFalse, failure.reason, message)
	if failure.policy == stall {
		setCondition(svc, v1alpha1.ConditionStalled, metav1.ConditionTrue, failure.reason, message)
		removeCondition(svc, v1alpha1.ConditionReconciling)
		return
	}
	setCondition(svc, v1alpha1.ConditionReconciling, metav1.ConditionTrue, failure.reason, message)
	removeCondition(svc, v1alpha1.ConditionStalled)
}

// setProgress sets Healthy and Ready from the node phases once every phase passed: Ready
// when every node is; else the first node that is not says why, and the Service is
// Stalled when that cause does not go away by waiting.
func setProgress(svc *v1alpha1.Service, revision string, now time.Time) {
	first, unready := firstUnready(svc)
	if first == nil {
		svc.Status.ObservedGeneration = svc.Generation
		svc.Status.LastAppliedRevision = revision
		svc.Status.ShortRevision = shortRevision(revision)
		msg := fmt.Sprintf("revision %s: %d nodes ready", revision, len(svc.Status.Nodes))
		setCondition(svc, v1alpha1.ConditionHealthy, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "all objects are healthy")
		setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, msg)
		removeCondition(svc, v1alpha1.ConditionReconciling)
		removeCondition(svc, v1alpha1.ConditionStalled)
		return
	}
	msg := fmt.Sprintf("%d of %d nodes not ready; %s: %s", unready, len(svc.Status.Nodes), first.Name, first.Message)
	reason := v1alpha1.ReasonProgressing
	stalled := false
	if first.Phase == v1alpha1.NodeFailed {
		reason = v1alpha1.ReasonHealthCheckFailed
		stalled = isStalling(first.Reason)
		if failedOperation(first) {
			reason, stalled = v1alpha1.ReasonOperationFailed, true
		}
	}
	if reason == v1alpha1.ReasonProgressing && timedOut(svc, now) {
		reason = v1alpha1.ReasonHealthCheckFailed
		msg = "timeout waiting for health: " + msg
	}
	msg = text.Truncate(msg, 1024)
	setCondition(svc, v1alpha1.ConditionHealthy, metav1.ConditionFalse, reason, msg)
	setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	setCondition(svc, v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonProgressing, msg)
	if stalled {
		// It does not go away by waiting: an operation that failed for good runs again only
		// when the package or the inputs change, refused pods need a change too.
		setCondition(svc, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	} else {
		removeCondition(svc, v1alpha1.ConditionStalled)
	}
}

// requeueFor decides when to look at a Service again after a reconcile.
func requeueFor(svc *v1alpha1.Service, failure *phaseError, message string, progressInterval, asked time.Duration) (ctrl.Result, error) {
	if failure == nil {
		if first, _ := firstUnready(svc); first == nil {
			return ctrl.Result{RequeueAfter: requeueAfter(durationOr(svc.Spec.Interval, v1alpha1.DefaultInterval))}, nil
		}
		after := progressInterval
		if asked > 0 && asked < after {
			after = asked
		}
		return ctrl.Result{RequeueAfter: after}, nil
	}
	switch failure.policy {
	case stall:
		retryAfter := durationOr(svc.Spec.Interval, v1alpha1.DefaultInterval)
		if svc.Spec.RetryInterval != nil {
			retryAfter = svc.Spec.RetryInterval.Duration
		}
		return ctrl.Result{RequeueAfter: requeueAfter(retryAfter)}, nil
	case wait:
		return ctrl.Result{RequeueAfter: failure.after}, nil
	}
	return ctrl.Result{}, &retryError{msg: failure.reason + ": " + message}
}

// setSuspended says that a suspended Service is not reconciled.
func setSuspended(svc *v1alpha1.Service) {
	setCondition(svc, v1alpha1.ConditionReconciling, metav1.ConditionFalse, v1alpha1.ReasonSuspended, "reconciliation is suspended")
}

// setDeleting says where the deletion of a Service stands — or, for a NOT_INSTANTIATED
// Service not being deleted, where the teardown of what it ran stands.
func setDeleting(svc *v1alpha1.Service, message string) {
	if svc.DeletionTimestamp.IsZero() && svc.Spec.InstantiationState == v1alpha1.NotInstantiated {
		message = text.Truncate(tearingDown+message, 1024)
		setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNotInstantiated, message)
		setCondition(svc, v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonNotInstantiated, message)
		return
	}
	setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDeleting, text.Truncate(message, 1024))
}

// tearingDown begins what a NOT_INSTANTIATED Service says while what it ran goes.
const tearingDown = "not instantiated: tearing down what ran: "

// setNotInstantiated says that nothing of a NOT_INSTANTIATED Service is left: Ready (its
// wish is met) for this generation, status.instantiationState NOT_INSTANTIATED, and
// nothing deployed in its status — no nodes, objects, outputs, VNF or lifecycle, and no
// condition of the stages that deploy.
func setNotInstantiated(svc *v1alpha1.Service) {
	st := &svc.Status
	st.InstantiationState, st.ObservedGeneration = v1alpha1.NotInstantiated, svc.Generation
	st.Nodes, st.Inventory, st.Outputs, st.PendingOutputs, st.VNF, st.Warnings, st.Lifecycle = nil, nil, nil, nil, nil, nil, nil
	for _, stage := range append([]string{v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled}, stages...) {
		removeCondition(svc, stage)
	}
	setCondition(svc, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonNotInstantiated,
		"not instantiated: nothing is deployed (spec.instantiationState NOT_INSTANTIATED)")
}

// shortRevision cuts the digests of a revision to 12 hex digits: "main@sha1:2f6c…" (40)
// becomes "main@sha1:2f6c0a1b3c4d".
func shortRevision(revision string) string {
	return longDigest.ReplaceAllString(revision, "$1")
}

// longDigest is a hex digest of more than 12 digits after its algorithm.
var longDigest = regexp.MustCompile(`((?:sha1|sha256|sha512):[0-9a-f]{12})[0-9a-f]+`)

// firstUnready returns the first node that is not Ready and how many are not.
func firstUnready(svc *v1alpha1.Service) (*v1alpha1.NodeStatus, int) {
	var first *v1alpha1.NodeStatus
	unready := 0
	for i := range svc.Status.Nodes {
		if svc.Status.Nodes[i].Phase != v1alpha1.NodeReady {
			if first == nil {
				first = &svc.Status.Nodes[i]
			}
			unready++
		}
	}
	return first, unready
}

func failedOperation(node *v1alpha1.NodeStatus) bool {
	for _, op := range node.Operations {
		if op.Phase == v1alpha1.OperationFailed {
			return true
		}
	}
	return false
}

// timedOut tells whether the Service has been progressing for longer than its timeout.
func timedOut(svc *v1alpha1.Service, now time.Time) bool {
	reconciling := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReconciling)
	timeout := durationOr(svc.Spec.Timeout, v1alpha1.DefaultTimeout)
	if reconciling == nil || reconciling.Status != metav1.ConditionTrue || timeout <= 0 {
		return false
	}
	return now.Sub(reconciling.LastTransitionTime.Time) > timeout
}

// setCondition sets a condition stamped with the Service's generation; its transition
// time moves only when its status changes.
func setCondition(svc *v1alpha1.Service, conditionType string, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&svc.Status.Conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: svc.Generation,
	})
}

func removeCondition(svc *v1alpha1.Service, conditionType string) {
	apimeta.RemoveStatusCondition(&svc.Status.Conditions, conditionType)
}

// retryError makes controller-runtime back off; its message is already redacted.
type retryError struct{ msg string }

func (e *retryError) Error() string { return e.msg }
