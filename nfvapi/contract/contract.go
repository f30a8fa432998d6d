// Package contract checks what the NFV interfaces answer against their OpenAPI document
// (nfvapi.OpenAPI), for tests: every response of a run, and every notification sent.
package contract

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"calaf.io/calaf/nfvapi"
)

// Validator validates responses and notifications against the document.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

// New loads and checks the document.
func New() (*Validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(nfvapi.OpenAPI())
	if err != nil {
		return nil, fmt.Errorf("the OpenAPI document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is not valid: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &Validator{doc: doc, router: router}, nil
}

// Response validates one exchange: the request's method and URL (path and query), the
// response's status, headers and body.
func (v *Validator) Response(method string, u *url.URL, reqHeader http.Header, status int, header http.Header, body []byte) error {
	req, err := http.NewRequest(method, "http://calaf"+u.RequestURI(), nil)
	if err != nil {
		return err
	}
	req.Header = reqHeader.Clone()
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			return v.problem(body)
		}
		return fmt.Errorf("%s %s: no such operation in the document: %w", method, u.Path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, ExcludeRequestBody: true, ExcludeRequestQueryParams: true}}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("%s %s → %d: %w", method, u.Path, status, err)
	}
	return nil
}

// Notification validates a notification's body against the schema of its type.
func (v *Validator) Notification(notificationType string, body []byte) error {
	ref, ok := v.doc.Components.Schemas[notificationType]
	if !ok {
		return fmt.Errorf("no schema for the notification type %q", notificationType)
	}
	var value any
	if err := jsonUnmarshal(body, &value); err != nil {
		return err
	}
	if err := ref.Value.VisitJSON(value); err != nil {
		return fmt.Errorf("%s: %w", notificationType, err)
	}
	return nil
}

// problem validates a ProblemDetails body (the answer to what the document has no
// operation for: 404, 405).
func (v *Validator) problem(body []byte) error {
	var value any
	if err := jsonUnmarshal(body, &value); err != nil {
		return err
	}
	return v.doc.Components.Schemas["ProblemDetails"].Value.VisitJSON(value)
}
