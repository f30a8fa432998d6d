package sol013

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ContentTypeProblem is the media type of a ProblemDetails body.
const ContentTypeProblem = "application/problem+json"

// Problem is a SOL013 ProblemDetails (RFC 7807): every error the interface answers.
type Problem struct {
	// Type is a URI naming the kind of problem; "about:blank" when only Status says it.
	Type string `json:"type,omitempty"`
	// Title is a short summary of the kind of problem.
	Title string `json:"title,omitempty"`
	// Status repeats the HTTP status code.
	Status int `json:"status"`
	// Detail says what happened to this request, in words a person can act on.
	Detail string `json:"detail"`
	// Instance is the URI of the request.
	Instance string `json:"instance,omitempty"`
}

// Error returns the problem's detail.
func (p *Problem) Error() string { return p.Detail }

// Errorf makes a Problem of an HTTP status with a detail.
func Errorf(status int, format string, args ...any) *Problem {
	return &Problem{Status: status, Title: http.StatusText(status), Detail: fmt.Sprintf(format, args...)}
}

// AsProblem turns any error into a Problem: a Problem as it is; a Kubernetes API error
// with the status it means for the caller (not found, forbidden, conflict, invalid, too
// many requests, a timeout); anything else a 500 whose detail does not repeat the error
// (it may name internals) — the caller logs it.
func AsProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := int(status.Status().Code)
		switch {
		case apierrors.IsNotFound(err):
			code = http.StatusNotFound
		case apierrors.IsForbidden(err):
			code = http.StatusForbidden
		case apierrors.IsUnauthorized(err):
			code = http.StatusUnauthorized
		case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
			code = http.StatusConflict
		case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
			code = http.StatusBadRequest
		case apierrors.IsTooManyRequests(err):
			code = http.StatusTooManyRequests
		case apierrors.IsRequestEntityTooLargeError(err):
			code = http.StatusRequestEntityTooLarge
		case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsServiceUnavailable(err):
			code = http.StatusServiceUnavailable
		}
		if code < 400 || code > 599 {
			code = http.StatusInternalServerError
		}
		return &Problem{Status: code, Title: http.StatusText(code), Detail: status.Status().Message}
	}
	return &Problem{Status: http.StatusInternalServerError, Title: http.StatusText(http.StatusInternalServerError),
		Detail: "the request could not be carried out; the server's log says why"}
}

// WriteProblem answers a request with a ProblemDetails of the error (AsProblem), with the
// request's path as its instance.
func WriteProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := *AsProblem(err)
	if p.Instance == "" && r != nil {
		p.Instance = r.URL.Path
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	body, _ := json.Marshal(p)
	w.Header().Set("Content-Type", ContentTypeProblem)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}
