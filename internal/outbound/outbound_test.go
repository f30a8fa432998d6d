package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// server is an HTTP server on a loopback address that counts the connections it accepts
// and the requests it answers.
type server struct {
	*httptest.Server
	conns, requests atomic.Int64
}

func newServer(t *testing.T, ip string, handler http.HandlerFunc) *server {
	t.Helper()
	listener, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		handler(w, r)
	}))
	s.Listener.Close()
	s.Listener = listener
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

func get(t *testing.T, c *Client, url string, auth Auth) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req, auth)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

// The default policy refuses the host's own addresses in every spelling that reaches
// them — names, IPv4-mapped IPv6, decimal and octal forms — and the metadata addresses:
// the connection is refused when the address is known, so the server never sees one.
func TestDefaultPolicyRefusesTheHost(t *testing.T) {
	s := newServer(t, "127.0.0.1", ok)
	port := s.Listener.Addr().(*net.TCPAddr).Port
	c := New(Options{})
	for _, host := range []string{"127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "2130706433", "0177.0.0.1", "0x7f.1", "127.1"} {
		url := fmt.Sprintf("http://%s:%d/", host, port)
		_, err := get(t, c, url, Auth{})
		if err == nil {
			t.Errorf("%s: reached", url)
			continue
		}
		var refused *RefusedError
		var dnsError *net.DNSError
		if !errors.As(err, &refused) && !errors.As(err, &dnsError) {
			t.Errorf("%s: %v, want a refusal (or a name that does not resolve)", url, err)
		}
	}
	for _, url := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://[::ffff:169.254.169.254]/",
		"http://[64:ff9b::a9fe:a9fe]/", "http://100.100.100.200/", "http://[fe80::1%25lo]/"} {
		_, err := get(t, c, url, Auth{})
		var refused *RefusedError
		if !errors.As(err, &refused) {
			t.Errorf("%s: %v, want a refusal", url, err)
		}
	}
	if n := s.conns.Load(); n != 0 {
		t.Errorf("the server accepted %d connections", n)
	}
}

// An allowlist opens what it names and no more: 127.0.0.2 allowed, 127.0.0.1 still
// refused; a redirect from the allowed server to the refused one is not followed.
func TestAllowlistOpensWhatItNames(t *testing.T) {
	refused := newServer(t, "127.0.0.1", ok)
	allowed := newServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, refused.URL+"/", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	c := New(Options{Policy: Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}})
	if resp, err := get(t, c, allowed.URL+"/", Auth{}); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("allowed server: %v %v", resp, err)
	}
	if _, err := get(t, c, refused.URL+"/", Auth{}); err == nil {
		t.Error("127.0.0.1 reached with only 127.0.0.2 allowed")
	}
	if _, err := get(t, c, allowed.URL+"/redirect", Auth{}); !errors.Is(err, ErrRedirect) {
		t.Errorf("redirect: %v, want ErrRedirect", err)
	}
	if n := refused.conns.Load(); n != 0 {
		t.Errorf("the refused server accepted %d connections", n)
	}
}

// The most specific network decides: an allowed network opens the refused ones it is as
// specific as or more, never those more specific than it (the cluster's ranges in it,
// the metadata address).
func TestPolicyMostSpecificNetworkDecides(t *testing.T) {
	p := Policy{
		Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("0.0.0.0/0")},
		Deny:  []Network{{Prefix: netip.MustParsePrefix("10.244.0.0/16"), Name: "the cluster's pod range"}, {Prefix: netip.MustParsePrefix("203.0.113.7/32"), Name: "a node"}},
	}
	for address, want := range map[string]string{
		"10.1.2.3:443":           "",
		"10.244.1.1:80":          "the cluster's pod range",
		"169.254.1.1:80":         "",
		"169.254.169.254:80":     "cloud metadata service",
		"[::ffff:10.244.0.9]:80": "the cluster's pod range",
		"203.0.113.7:10250":      "a node",
		"8.8.8.8:443":            "",
		"127.0.0.1:2379":         "loopback",
		"[2002:7f00:1::]:80":     "loopback",
		"[::1]:8080":             "loopback",
		"[2001:db8::1]:443":      "",
	} {
		err := p.Check(netip.MustParseAddrPort(address))
		var refused *RefusedError
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want allowed", address, err)
		case want != "" && (!errors.As(err, &refused) || refused.Network.Name != want):
			t.Errorf("%s: %v, want refused as %s", address, err, want)
		}
	}
}

// Requests to one endpoint reuse one connection.
func TestConnectionsReused(t *testing.T) {
	s := newServer(t, "127.0.0.2", ok)
	c := New(Options{Policy: Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}})
	for range 5 {
		if _, err := get(t, c, s.URL, Auth{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("5 requests opened %d connections, want 1", n)
	}
}

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// An endpoint that keeps failing gets threshold requests, then none while its circuit is
// open; when it closes one request tries, and a failure opens it for twice as long; a
// success closes it.
func TestCircuitStopsADeadEndpoint(t *testing.T) {
	var healthy atomic.Bool
	s := newServer(t, "127.0.0.2", func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	clk := &clock{now: time.Unix(1_000_000, 0)}
	c := New(Options{Policy: Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}, CircuitThreshold: 3,
		CircuitBackoff: Backoff{Base: 10 * time.Second, Max: time.Minute}, Now: clk.Now})
	attempt := func() error { _, err := get(t, c, s.URL, Auth{}); return err }
	for range 5 {
		_ = attempt()
	}
	if n := s.requests.Load(); n != 3 {
		t.Fatalf("the endpoint got %d requests, want 3 (the threshold)", n)
	}
	var open *CircuitOpenError
	if err := attempt(); !errors.As(err, &open) || !open.Until.Equal(clk.Now().Add(10*time.Second)) {
		t.Fatalf("%v, want the circuit open for 10 s", err)
	}
	clk.add(10 * time.Second)
	_ = attempt() // the trial, failing
	if err := attempt(); s.requests.Load() != 4 || !errors.As(err, &open) || !open.Until.Equal(clk.Now().Add(20*time.Second)) {
		t.Fatalf("%d requests, %v: want 4 and the circuit open for 20 s", s.requests.Load(), err)
	}
	healthy.Store(true)
	clk.add(20 * time.Second)
	for range 3 {
		if err := attempt(); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.requests.Load(); n != 7 {
		t.Errorf("the endpoint got %d requests, want 7", n)
	}
}

// OAuth 2.0 client credentials: one token for many requests, fetched again after a 401;
// the token endpoint is under the policy too.
func TestClientCredentials(t *testing.T) {
	var issued atomic.Int64
	tokenServer := newServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		if r.Method != http.MethodPost || user != "calaf" || pass != "s3cr3t" || r.FormValue("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"token-%d","token_type":"Bearer","expires_in":3600}`, issued.Add(1))
	})
	var seen []string
	var mu sync.Mutex
	api := newServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Header.Get("Authorization"))
		if len(seen) == 3 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	c := New(Options{Policy: Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}})
	auth := Auth{OAuth2: &ClientCredentials{TokenURL: tokenServer.URL + "/token", ClientID: "calaf", ClientSecret: "s3cr3t"}}
	for range 4 {
		if _, err := get(t, c, api.URL, auth); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"Bearer token-1", "Bearer token-1", "Bearer token-1", "Bearer token-2"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("the API saw %v, want %v", seen, want)
	}
	refusedToken := Auth{OAuth2: &ClientCredentials{TokenURL: "http://127.0.0.1:1/token", ClientID: "calaf", ClientSecret: "s3cr3t"}}
	var refused *RefusedError
	if _, err := get(t, c, api.URL, refusedToken); !errors.As(err, &refused) {
		t.Errorf("a token endpoint on loopback: %v, want a refusal", err)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Base: time.Second, Max: 5 * time.Minute}
	for failures, want := range map[int]time.Duration{0: 0, 1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 9: 256 * time.Second, 10: 5 * time.Minute, 60: 5 * time.Minute} {
		if got := b.Delay(failures); got != want {
			t.Errorf("Delay(%d) = %v, want %v", failures, got, want)
		}
	}
	// Attempts at 0, 1, 3, 7, 15, 31 s; the next at 63 s.
	if got := b.AttemptsWithin(time.Minute); got != 6 {
		t.Errorf("AttemptsWithin(1m) = %d, want 6", got)
	}
}
