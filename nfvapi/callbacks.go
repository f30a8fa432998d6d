package nfvapi

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/outbound"
)

// OutboundCallbacks tests callbacks through the guarded outbound client (the admin's
// outbound policy, no redirects), as the operator later sends notifications.
type OutboundCallbacks struct {
	Client *outbound.Client
}

// TestCallback sends the GET SOL013 tests a callback with: the endpoint must answer 204.
func (o OutboundCallbacks) TestCallback(ctx context.Context, uri string, auth *CallbackAuth) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Version", lcmVersion)
	resp, err := o.Client.Do(req, outboundAuth(auth))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("%s answered %s", uri, resp.Status)
	}
	return nil
}

func outboundAuth(auth *CallbackAuth) outbound.Auth {
	switch {
	case auth == nil:
		return outbound.Auth{}
	case auth.Type == v1alpha1.AuthBasic:
		return outbound.Auth{Basic: &outbound.BasicAuth{Username: auth.Username, Password: auth.Password}}
	default:
		return outbound.Auth{OAuth2: &outbound.ClientCredentials{TokenURL: auth.TokenEndpoint, ClientID: auth.ClientID, ClientSecret: auth.ClientSecret}}
	}
}
