package clusters

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"calaf.io/calaf/internal/kubeconfig"
	"calaf.io/calaf/internal/outbound"
)

// RefusedError says that a kubeconfig's API server is at an address the admin's policy
// refuses, or its name does not resolve: the kubeconfig cannot be used as it is.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// connect makes the connection of a kubeconfig: its API server's address resolved,
// checked against the policy and pinned (requests, watches and exec streams all go there,
// the TLS server name staying the one the kubeconfig names), its credentials, no proxy,
// every dial checked against the policy again, and a client and REST mapper on it.
func (p *Pool) connect(ctx context.Context, target *kubeconfig.Target) (*Cluster, error) {
	pinned, err := p.pin(ctx, target.Config.Host)
	if err != nil {
		return nil, err
	}
	config := rest.CopyConfig(target.Config)
	config.Host = pinned.host
	if config.ServerName == "" && pinned.serverName != "" {
		config.ServerName = pinned.serverName
	}
	config.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	config.Dial = p.dialer()
	config.Timeout = p.opts.Timeout
	config.QPS, config.Burst = p.opts.QPS, p.opts.Burst
	config.UserAgent = "calaf"
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, &RefusedError{Reason: fmt.Sprintf("the kubeconfig's TLS settings cannot be used: %v", err)}
	}
	mapper, err := apiutil.NewDynamicRESTMapper(config, httpClient)
	if err != nil {
		return nil, err
	}
	c, err := client.New(config, client.Options{HTTPClient: httpClient, Scheme: p.opts.Scheme, Mapper: mapper})
	if err != nil {
		return nil, err
	}
	return newCluster(p, target, pinned.address, config, httpClient, mapper, c), nil
}

// pinned is an API server's URL with its host replaced by the address it resolved to.
type pinned struct {
	host string
	// serverName is the host name the URL named ("" for an address).
	serverName string
	address    netip.AddrPort
}

// pin resolves a server URL's host and checks the first address against the policy.
func (p *Pool) pin(ctx context.Context, server string) (pinned, error) {
	u, err := url.Parse(server)
	if err != nil {
		return pinned{}, &RefusedError{Reason: fmt.Sprintf("server %q is not a URL", server)}
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "443"
	}
	portNumber, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return pinned{}, &RefusedError{Reason: fmt.Sprintf("server %q has no valid port", u.Redacted())}
	}
	result := pinned{}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		resolveCtx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
		defer cancel()
		addresses, err := p.opts.Resolve(resolveCtx, host)
		if err != nil || len(addresses) == 0 {
			return pinned{}, &RefusedError{Reason: fmt.Sprintf("the API server's name %q does not resolve: %v", host, err)}
		}
		if addr, err = netip.ParseAddr(addresses[0]); err != nil {
			return pinned{}, &RefusedError{Reason: fmt.Sprintf("the API server's name %q resolves to %q, not an address", host, addresses[0])}
		}
		result.serverName = host
	}
	result.address = netip.AddrPortFrom(addr.Unmap(), uint16(portNumber))
	policy := p.opts.Policy()
	if err := policy.Check(result.address); err != nil {
		return pinned{}, &RefusedError{Reason: fmt.Sprintf("the API server %s is at %v (--target-cluster-allow names the networks clusters may be on)", u.Redacted(), err)}
	}
	pinnedURL := *u
	pinnedURL.Host = result.address.String()
	result.host = pinnedURL.String()
	return result, nil
}

// dialer connects only to addresses the policy allows (checked once resolved, when the
// connection is made).
func (p *Pool) dialer() func(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{Timeout: p.opts.DialTimeout, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			addrPort, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("connection to %q refused: not an address", address)
			}
			policy := p.opts.Policy()
			return policy.Check(addrPort)
		}}
	return d.DialContext
}

// defaultResolve resolves a host name to its addresses.
func defaultResolve(ctx context.Context, host string) ([]string, error) {
	return net.DefaultResolver.LookupHost(ctx, host)
}

// IsRefused tells whether err says the admin's policy or the name refuses a kubeconfig
// (outbound.RefusedError included: a dial the policy refused).
func IsRefused(err error) bool {
	var r *RefusedError
	var o *outbound.RefusedError
	return errors.As(err, &r) || errors.As(err, &o)
}
