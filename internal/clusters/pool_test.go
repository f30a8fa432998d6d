package clusters

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"calaf.io/calaf/internal/kubeconfig"
	"calaf.io/calaf/internal/outbound"
)

// target is a kubeconfig of server with a token.
func target(t *testing.T, server, token string) *kubeconfig.Target {
	t.Helper()
	parsed, err := kubeconfig.Parse([]byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"}}]
users: [{name: u, user: {token: ` + token + `}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`))
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

// clock is a settable clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newPool(allow []string, resolve map[string]string, c *clock, maxClusters int) *Pool {
	prefixes, _ := outbound.ParsePrefixes(allow)
	return New(Options{
		Policy:      func() outbound.Policy { return outbound.Policy{Allow: prefixes} },
		MaxClusters: maxClusters,
		Now:         c.Now,
		Resolve: func(_ context.Context, host string) ([]string, error) {
			if address, ok := resolve[host]; ok {
				return []string{address}, nil
			}
			return nil, errors.New("no such host")
		},
	})
}

var owner = types.NamespacedName{Namespace: "tenant", Name: "web"}

// An API server is reached at the address its name resolved to when the connection was
// made (TLS still checks the name), and only where the policy allows: private networks
// and metadata services not unless the admin names them.
func TestConnectionsPinTheAllowedAddress(t *testing.T) {
	c := &clock{now: time.Unix(1000, 0)}
	p := newPool([]string{"10.20.0.0/16"}, map[string]string{"site-a.example": "10.20.0.7", "site-b.example": "10.30.0.7"}, c, 4)
	cluster, err := p.Acquire(context.Background(), owner, "tenant", target(t, "https://site-a.example:6443", "t"))
	if err != nil {
		t.Fatal(err)
	}
	if cluster.Config.Host != "https://10.20.0.7:6443" || cluster.Config.ServerName != "site-a.example" || cluster.Address != netip.MustParseAddrPort("10.20.0.7:6443") {
		t.Errorf("config host %q, server name %q, address %v", cluster.Config.Host, cluster.Config.ServerName, cluster.Address)
	}
	if proxy, err := cluster.Config.Proxy(nil); proxy != nil || err != nil {
		t.Errorf("the connection goes through a proxy: %v %v", proxy, err)
	}
	for server, want := range map[string]string{
		"https://site-b.example:6443":   "private network",
		"https://169.254.169.254":       "cloud metadata service",
		"https://127.0.0.1:6443":        "loopback",
		"https://nowhere.example:6443":  "does not resolve",
		"https://[::ffff:10.30.0.1]:43": "private network",
	} {
		_, err := p.Acquire(context.Background(), types.NamespacedName{Namespace: "tenant", Name: server}, "tenant", target(t, server, "t"))
		if !IsRefused(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a refusal saying %q", server, err, want)
		}
	}
}

// Services whose kubeconfigs grant the same identity share a connection; a connection no
// Service uses is torn down after IdleAfter; while all connections are in use, one more
// is refused rather than an in-use one torn down.
func TestConnectionsAreSharedBoundedAndTornDown(t *testing.T) {
	c := &clock{now: time.Unix(1000, 0)}
	p := newPool([]string{"10.20.0.0/16"}, nil, c, 1)
	ctx := context.Background()
	first, err := p.Acquire(ctx, owner, "tenant", target(t, "https://10.20.0.1", "t"))
	if err != nil {
		t.Fatal(err)
	}
	other := types.NamespacedName{Namespace: "tenant", Name: "db"}
	second, err := p.Acquire(ctx, other, "tenant", target(t, "https://10.20.0.1", "t"))
	if err != nil || second != first {
		t.Fatalf("the same identity got another connection: %v", err)
	}
	third := types.NamespacedName{Namespace: "tenant", Name: "cache"}
	if _, err := p.Acquire(ctx, third, "tenant", target(t, "https://10.20.0.2", "t")); !errors.Is(err, ErrTooMany) {
		t.Fatalf("a second cluster beyond the bound: %v, want ErrTooMany", err)
	}
	p.Release(owner)
	p.Release(other)
	c.now = c.now.Add(p.opts.IdleAfter - time.Second)
	p.sweep()
	if p.Len() != 1 {
		t.Fatalf("torn down before IdleAfter: %d connections", p.Len())
	}
	c.now = c.now.Add(2 * time.Second)
	p.sweep()
	if p.Len() != 0 {
		t.Fatalf("an idle connection was kept: %d", p.Len())
	}
	if _, err := p.Acquire(ctx, third, "tenant", target(t, "https://10.20.0.2", "t")); err != nil {
		t.Fatalf("after the teardown: %v", err)
	}
}

// A request that got no answer marks the cluster unreachable (once: an error already
// said unreachable is kept as it is); an API error does not.
func TestObserveMarksUnreachable(t *testing.T) {
	c := &clock{now: time.Unix(1000, 0)}
	p := newPool([]string{"10.20.0.0/16"}, nil, c, 4)
	cluster, err := p.Acquire(context.Background(), owner, "tenant", target(t, "https://10.20.0.1", "t"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Observe(errors.New("configmaps \"x\" is forbidden")); cluster.Unreachable() != nil || err == nil {
		t.Fatalf("an answer marked the cluster unreachable: %v", cluster.Unreachable())
	}
	observed := cluster.Observe(&url.Error{Op: "Get", URL: "https://10.20.0.1/api/v1/namespaces",
		Err: errors.New("dial tcp 10.20.0.1:443: connect: connection refused")})
	var unreachable *UnreachableError
	if !errors.As(observed, &unreachable) || cluster.Unreachable() == nil {
		t.Fatalf("no answer: %v, unreachable %v", observed, cluster.Unreachable())
	}
	if again := cluster.Observe(observed); again != unreachable {
		t.Errorf("an unreachable error wrapped again: %v", again)
	}
	if !strings.Contains(observed.Error(), "connection refused") || strings.Contains(observed.Error(), "/api/v1") {
		t.Errorf("message %q: the cause, without the request's URL", observed.Error())
	}
}
