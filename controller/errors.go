package controller

import (
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// policy says how the reconciler reacts to a failed phase.
type policy int

const (
	// retry with the controller's exponential backoff: the failure may pass by itself.
	retry policy = iota
	// stall until the spec or the package changes; check again after the retry interval.
	stall
	// wait, not a failure: check again soon (e.g. objects not healthy yet).
	wait
)

// phaseError is the failure of a reconcile phase: the condition it sets false, why, and
// the requeue policy.
type phaseError struct {
	condition string
	reason    string
	policy    policy
	after     time.Duration
	err       error
}

func (e *phaseError) Error() string { return e.err.Error() }
func (e *phaseError) Unwrap() error { return e.err }

func newPhaseError(condition, reason string, p policy, err error) *phaseError {
	return &phaseError{condition: condition, reason: reason, policy: p, err: err}
}

func stalled(condition, reason string, format string, args ...any) *phaseError {
	return newPhaseError(condition, reason, stall, fmt.Errorf(format, args...))
}

func waiting(condition, reason string, after time.Duration, format string, args ...any) *phaseError {
	e := newPhaseError(condition, reason, wait, fmt.Errorf(format, args...))
	e.after = after
	return e
}

// classifyFetch maps a source failure to its policy.
func classifyFetch(err error) *phaseError {
	var fetchErr *source.Error
	if errors.As(err, &fetchErr) {
		p := stall
		if fetchErr.Transient {
			p = retry
		}
		return newPhaseError(v1alpha1.ConditionSourceReady, fetchErr.Reason, p, fetchErr.Err)
	}
	if tosca.IsInvalid(err) {
		return newPhaseError(v1alpha1.ConditionSourceReady, v1alpha1.ReasonInvalidPackage, stall, err)
	}
	return newPhaseError(v1alpha1.ConditionSourceReady, v1alpha1.ReasonFetchFailed, retry, err)
}

// classifyAPI maps an API server error of applying or pruning: invalid objects and
// forbidden requests need a change; the rest may pass.
func classifyAPI(condition, reason string, err error) *phaseError {
	p := retry
	switch {
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err), apierrors.IsNotFound(err) && isNoKind(err):
		p = stall
	}
	return newPhaseError(condition, reason, p, err)
}

func isNoKind(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Kind == ""
}
