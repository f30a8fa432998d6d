// Package nfvo is Calaf's client of an external NFVO, for a VNFM in SOL003's direct mode:
// it asks the NFVO for a Grant before an operation occurrence acts (SOL003 Grant interface,
// /grant/v1), and fetches the VNF packages the NFVO onboarded, by VNFD id (SOL003 VNF
// package management, /vnfpkgm/v2). Every request goes through the guarded outbound
// client (internal/outbound): the admin's outbound policy, no redirects, the NFVO's
// credentials.
package nfvo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"calaf.io/calaf/internal/outbound"
)

// Interface versions Calaf speaks to an NFVO (SOL003 v3.3.1).
const (
	grantVersion   = "1.4.0"
	vnfpkgmVersion = "2.1.0"
)

// Client is an NFVO's SOL003 interfaces.
type Client struct {
	// Root is the NFVO's apiRoot.
	Root *url.URL
	HTTP *outbound.Client
	// Auth is how Calaf authenticates to the NFVO (OAuth 2.0 client credentials, a token).
	Auth outbound.Auth
	// Poll is the wait between two reads of a grant the NFVO decides later (default 1 s).
	Poll time.Duration
}

// GrantRequest is SOL003's GrantRequest, the members Calaf fills.
type GrantRequest struct {
	VnfInstanceID         string         `json:"vnfInstanceId"`
	VnfLcmOpOccID         string         `json:"vnfLcmOpOccId"`
	VnfdID                string         `json:"vnfdId"`
	DstVnfdID             string         `json:"dstVnfdId,omitempty"`
	FlavourID             string         `json:"flavourId,omitempty"`
	Operation             string         `json:"operation"`
	IsAutomaticInvocation bool           `json:"isAutomaticInvocation"`
	InstantiationLevelID  string         `json:"instantiationLevelId,omitempty"`
	AdditionalParams      map[string]any `json:"additionalParams,omitempty"`
	Links                 GrantLinks     `json:"_links"`
}

// GrantLinks link a grant request to the VNFM's resources.
type GrantLinks struct {
	VnfLcmOpOcc Link `json:"vnfLcmOpOcc"`
	VnfInstance Link `json:"vnfInstance"`
}

// Link is a SOL013 link.
type Link struct {
	Href string `json:"href"`
}

// Grant is SOL003's Grant, the members Calaf reads.
type Grant struct {
	ID            string `json:"id"`
	VnfInstanceID string `json:"vnfInstanceId"`
	VnfLcmOpOccID string `json:"vnfLcmOpOccId"`
}

// RefusedError is the NFVO's refusal of a grant (403) or of a request it found wrong (4xx).
type RefusedError struct {
	Status int
	Detail string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the NFVO refused the grant (%d): %s", e.Status, e.Detail)
}

// problem is the part of a ProblemDetails an error message needs.
type problem struct {
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Title  string `json:"title"`
}

// Grant asks for a grant. The NFVO answers at once (201) or later (202: the grant is read
// at the Location given until it is there, as long as ctx lasts). A refusal is a
// *RefusedError; anything else (unreachable, 5xx) is an error worth retrying.
func (c *Client) Grant(ctx context.Context, req GrantRequest) (*Grant, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, data, err := c.do(ctx, http.MethodPost, c.url("/grant/v1/grants"), grantVersion, body)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusCreated:
		return decodeGrant(data)
	case resp.StatusCode == http.StatusAccepted:
		return c.awaitGrant(ctx, resp.Header.Get("Location"))
	}
	return nil, answerError(resp, data)
}

// awaitGrant reads a grant the NFVO decides later until it is there.
func (c *Client) awaitGrant(ctx context.Context, location string) (*Grant, error) {
	if location == "" {
		return nil, errors.New("the NFVO accepted the grant request without saying where the grant will be (no Location)")
	}
	target, err := c.Root.Parse(location)
	if err != nil || target.Host != c.Root.Host {
		return nil, fmt.Errorf("the NFVO's grant Location %q is not one of its own URLs", location)
	}
	poll := c.Poll
	if poll <= 0 {
		poll = time.Second
	}
	for {
		resp, data, err := c.do(ctx, http.MethodGet, target.String(), grantVersion, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("the NFVO had not decided the grant when the wait ended: %w", ctx.Err())
			}
			return nil, err
		}
		switch resp.StatusCode {
		case http.StatusOK, http.StatusCreated:
			return decodeGrant(data)
		case http.StatusAccepted:
		default:
			return nil, answerError(resp, data)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the NFVO had not decided the grant when the wait ended: %w", ctx.Err())
		case <-time.After(poll):
		}
	}
}

func decodeGrant(data []byte) (*Grant, error) {
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil || g.ID == "" {
		return nil, fmt.Errorf("the NFVO's grant is not a Grant with an id")
	}
	return &g, nil
}

// PackageContent fetches the content (a zip) of the package the NFVO onboarded for a VNFD
// id; the caller closes it. At most limit bytes are read from it.
func (c *Client) PackageContent(ctx context.Context, vnfdID string, limit int64) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url("/vnfpkgm/v2/onboarded_vnf_packages/"+url.PathEscape(vnfdID)+"/package_content"), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Version", vnfpkgmVersion)
	req.Header.Set("Accept", "application/zip")
	resp, err := c.HTTP.Do(req, c.Auth)
	if err != nil {
		return nil, fmt.Errorf("the NFVO's package of VNFD %s: %w", vnfdID, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("the NFVO's package of VNFD %s: %w", vnfdID, answerError(resp, data))
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, limit), resp.Body}, nil
}

// do sends a JSON request and reads the answer (at most 1 MiB).
func (c *Client) do(ctx context.Context, method, target, version string, body []byte) (*http.Response, []byte, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, reader)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Version", version)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req, c.Auth)
	if err != nil {
		return nil, nil, fmt.Errorf("the NFVO at %s: %w", c.Root.Host, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, data, err
}

// answerError words an answer that is not the one hoped for: a 4xx is a refusal with the
// NFVO's ProblemDetails; a 5xx an error worth retrying.
func answerError(resp *http.Response, data []byte) error {
	var p problem
	_ = json.Unmarshal(data, &p)
	detail := strings.TrimSpace(p.Detail)
	if detail == "" {
		detail = resp.Status
	}
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return &RefusedError{Status: resp.StatusCode, Detail: detail}
	}
	return fmt.Errorf("the NFVO answered %s: %s", resp.Status, detail)
}

func (c *Client) url(path string) string {
	return strings.TrimSuffix(c.Root.String(), "/") + path
}
