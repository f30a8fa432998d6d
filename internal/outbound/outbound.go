// Package outbound is the one HTTP client of every request Calaf makes on a user's
// behalf — notifications to subscribers, requests to an NFVO, token endpoints: it
// connects only to addresses its Policy allows (checked after name resolution, when the
// connection is made), follows no redirect, sets the request's credentials, reuses
// connections (one transport per set of TLS settings) and stops sending to an endpoint
// that keeps failing (a circuit per endpoint).
package outbound

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"calaf.io/calaf/internal/lru"
)

// Options configure a Client; zero values take the defaults said.
type Options struct {
	// Policy says which addresses may be reached; it can be changed later (SetPolicy).
	Policy Policy
	// Timeout bounds one request, from connecting to reading the answer (default 10 s).
	Timeout time.Duration
	// DialTimeout bounds connecting (default 5 s).
	DialTimeout time.Duration
	// IdleTimeout closes a connection unused this long (default 90 s).
	IdleTimeout time.Duration
	// CircuitThreshold is the failures in a row (errors, 5xx and 429 answers) that open an
	// endpoint's circuit (default 5).
	CircuitThreshold int
	// CircuitBackoff is how long an open circuit stays open, by the times it opened in a
	// row (default 1 s doubling to 5 min).
	CircuitBackoff Backoff
	// UserAgent of the requests (default "calaf").
	UserAgent string
	// Now is the clock of the circuits (default time.Now).
	Now func() time.Time
}

// maxKept bounds the transports (TLS settings), circuits (endpoints) and tokens kept.
const maxKept = 1024

// Client sends requests under a Policy. It is safe for concurrent use; make one per
// process and share it.
type Client struct {
	opts       Options
	policy     atomic.Pointer[Policy]
	dialer     *net.Dialer
	mu         sync.Mutex
	transports *lru.Cache[*http.Transport]
	circuits   *circuits
	tokens     *tokens
}

// New returns a client with the options.
func New(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 90 * time.Second
	}
	if opts.CircuitThreshold <= 0 {
		opts.CircuitThreshold = 5
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "calaf"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Client{opts: opts, transports: lru.New[*http.Transport](64),
		circuits: &circuits{threshold: opts.CircuitThreshold, backoff: opts.CircuitBackoff, now: opts.Now, states: lru.New[*circuit](maxKept)},
		tokens:   &tokens{entries: lru.New[*tokenEntry](maxKept)}}
	c.dialer = &net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second, Control: c.control}
	c.SetPolicy(opts.Policy)
	return c
}

// SetPolicy replaces the policy for the connections made from now on.
func (c *Client) SetPolicy(p Policy) {
	c.policy.Store(&p)
}

// Policy is the policy in force.
func (c *Client) Policy() Policy {
	return *c.policy.Load()
}

// control checks every connection's address, once resolved, against the policy.
func (c *Client) control(_, address string, _ syscall.RawConn) error {
	addrPort, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("connection to %q refused: not an address", address)
	}
	return c.policy.Load().Check(addrPort)
}

// ErrRedirect is returned for an answer that redirects: redirects are not followed.
var ErrRedirect = errors.New("redirects are not followed")

// httpClient is an http.Client on the transport of the TLS settings of auth.
func (c *Client) httpClient(auth Auth) (*http.Client, error) {
	transport, err := c.transport(auth)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Transport: transport,
		Timeout:   c.opts.Timeout,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("%w (to %s)", ErrRedirect, req.URL.Redacted())
		},
	}, nil
}

// transport returns the transport of auth's TLS settings (trusted CA, client
// certificate), made once and reused with its idle connections.
func (c *Client) transport(auth Auth) (*http.Transport, error) {
	key := sha256.New()
	key.Write(auth.CA)
	if auth.Certificate != nil && len(auth.Certificate.Certificate) > 0 {
		key.Write([]byte{0})
		key.Write(auth.Certificate.Certificate[0])
	}
	id := string(key.Sum(nil))
	c.mu.Lock()
	defer c.mu.Unlock()
	if transport, ok := c.transports.Get(id); ok {
		return transport, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(auth.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(auth.CA) {
			return nil, errors.New("the CA bundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	if auth.Certificate != nil {
		tlsConfig.Certificates = []tls.Certificate{*auth.Certificate}
	}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would connect where the policy cannot see
		DialContext:           c.dialer.DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   c.opts.DialTimeout,
		ResponseHeaderTimeout: c.opts.Timeout,
		IdleConnTimeout:       c.opts.IdleTimeout,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   2,
		ForceAttemptHTTP2:     true,
	}
	c.transports.Put(id, transport)
	return transport, nil
}

// Do sends req with auth's credentials and TLS settings. The caller closes the answer's
// body. Errors: a *RefusedError when the policy refuses the address (wrapped), a
// *CircuitOpenError when the endpoint failed too often in a row (nothing is sent),
// ErrRedirect (wrapped) for a 3xx answer. An answer of 5xx or 429 is returned as it is,
// and counts as a failure of the endpoint.
func (c *Client) Do(req *http.Request, auth Auth) (*http.Response, error) {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", req.URL.Redacted())
	}
	httpClient, err := c.httpClient(auth)
	if err != nil {
		return nil, err
	}
	if err := c.authorize(req, auth, httpClient); err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", c.opts.UserAgent)
	endpoint := req.URL.Scheme + "://" + req.URL.Host
	if err := c.circuits.acquire(endpoint); err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		var refused *RefusedError
		c.circuits.release(endpoint, !errors.As(err, &refused) && !errors.Is(err, ErrRedirect))
		return nil, err
	}
	c.circuits.release(endpoint, resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests)
	if resp.StatusCode == http.StatusUnauthorized && auth.OAuth2 != nil {
		c.tokens.forget(*auth.OAuth2, auth)
	}
	return resp, nil
}
