package outbound

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"calaf.io/calaf/internal/lru"
)

// Auth is how a request authenticates and which server certificates it trusts. At most
// one of Basic, Bearer and OAuth2 is set.
type Auth struct {
	Basic *BasicAuth
	// Bearer is a token sent as "Authorization: Bearer <token>".
	Bearer string
	// OAuth2 gets a token from a token endpoint (client credentials grant), kept until it
	// expires or the endpoint answers 401, and sends it as a bearer token.
	OAuth2 *ClientCredentials
	// CA is a PEM bundle the server's certificate must chain to, instead of the system's
	// roots (the token endpoint's too).
	CA []byte
	// Certificate is presented to servers that ask for one (mutual TLS).
	Certificate *tls.Certificate
}

// BasicAuth is HTTP basic authentication.
type BasicAuth struct {
	Username, Password string
}

// ClientCredentials are those of OAuth 2.0's client credentials grant (RFC 6749 4.4):
// the client authenticates to the token endpoint with HTTP basic authentication.
type ClientCredentials struct {
	TokenURL     string
	ClientID     string
	ClientSecret string
	Scopes       []string
}

// authorize sets req's Authorization header from auth, getting an OAuth 2.0 token
// through httpClient (under the same policy) when it has none valid.
func (c *Client) authorize(req *http.Request, auth Auth, httpClient *http.Client) error {
	switch {
	case auth.Basic != nil:
		req.SetBasicAuth(auth.Basic.Username, auth.Basic.Password)
	case auth.Bearer != "":
		req.Header.Set("Authorization", "Bearer "+auth.Bearer)
	case auth.OAuth2 != nil:
		token, err := c.tokens.get(req.Context(), *auth.OAuth2, auth, httpClient)
		if err != nil {
			return err
		}
		token.SetAuthHeader(req)
	}
	return nil
}

// tokens keeps the OAuth 2.0 tokens by client credentials and trusted CA.
type tokens struct {
	mu      sync.Mutex
	entries *lru.Cache[*tokenEntry]
}

type tokenEntry struct {
	mu    sync.Mutex
	token *oauth2.Token
}

func tokenKey(cc ClientCredentials, auth Auth) string {
	sum := sha256.New()
	for _, part := range []string{cc.TokenURL, cc.ClientID, cc.ClientSecret, strings.Join(cc.Scopes, " "), string(auth.CA)} {
		fmt.Fprintf(sum, "%d:%s", len(part), part)
	}
	return string(sum.Sum(nil))
}

func (t *tokens) entry(key string) *tokenEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.entries.Get(key); ok {
		return e
	}
	e := &tokenEntry{}
	t.entries.Put(key, e)
	return e
}

// get returns a valid token of the credentials, asking the token endpoint for one when
// the one kept expired (one request at a time per credentials).
func (t *tokens) get(ctx context.Context, cc ClientCredentials, auth Auth, httpClient *http.Client) (*oauth2.Token, error) {
	e := t.entry(tokenKey(cc, auth))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.token.Valid() {
		return e.token, nil
	}
	config := clientcredentials.Config{ClientID: cc.ClientID, ClientSecret: cc.ClientSecret, TokenURL: cc.TokenURL,
		Scopes: cc.Scopes, AuthStyle: oauth2.AuthStyleInHeader}
	token, err := config.Token(context.WithValue(ctx, oauth2.HTTPClient, httpClient))
	if err != nil {
		return nil, fmt.Errorf("token endpoint %s: %w", cc.TokenURL, err)
	}
	e.token = token
	return token, nil
}

// forget drops the token kept for the credentials (the server did not take it).
func (t *tokens) forget(cc ClientCredentials, auth Auth) {
	e := t.entry(tokenKey(cc, auth))
	e.mu.Lock()
	defer e.mu.Unlock()
	e.token = nil
}
