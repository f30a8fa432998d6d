package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// countingProxy stands between one measured client (the operator, or a baseline) and the
// API server and counts its requests by verb, resource and outcome. It listens on
// loopback in plain HTTP and forwards with the bench's own credentials, so the measured
// client needs no credentials of its own; impersonation headers pass through.
type countingProxy struct {
	server   *http.Server
	listener net.Listener
	lock     sync.Mutex
	counts   map[string]int64
	// lastApply is when the latest server-side apply was answered.
	lastApply time.Time
	// scheme is "http", or "https" for a proxy serving TLS.
	scheme string
}

// startProxy starts a counting proxy in front of the API server config points at.
func startProxy(config *rest.Config) (*countingProxy, error) {
	return startProxyServing(config, nil)
}

// startProxyServing starts a counting proxy in front of the API server config points at,
// serving TLS (HTTP/2 too) with certificate when it is set, plain HTTP when nil.
func startProxyServing(config *rest.Config, certificate *tls.Certificate) (*countingProxy, error) {
	target, err := url.Parse(config.Host)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(config)
	if err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingProxy{listener: listener, counts: map[string]int64{}, scheme: "http"}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = target.Host },
		Transport:     transport,
		FlushInterval: -1, // watches stream
		ModifyResponse: func(resp *http.Response) error {
			p.count(classify(resp.Request, resp.StatusCode), time.Now())
			return nil
		},
	}
	p.server = &http.Server{Handler: proxy}
	if certificate != nil {
		p.scheme = "https"
		p.server.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*certificate}, MinVersion: tls.VersionTLS12}
		go func() { _ = p.server.ServeTLS(listener, "", "") }()
		return p, nil
	}
	go func() { _ = p.server.Serve(listener) }()
	return p, nil
}

// Close stops the proxy.
func (p *countingProxy) Close() { _ = p.server.Close() }

// Host is the proxy's address, for a client's rest.Config.
func (p *countingProxy) Host() string { return p.scheme + "://" + p.listener.Addr().String() }

// Config returns a client configuration that goes through the proxy, with the transport
// the operator makes for itself in plain HTTP (25 idle connections, no gzip), so that the
// baseline's client and the operator talk to their proxies alike: client-go's default for
// plain HTTP, Go's shared transport, keeps 2 idle connections and closes the others.
func (p *countingProxy) Config(qps float32, burst int) *rest.Config {
	transport := utilnet.SetTransportDefaults(&http.Transport{MaxIdleConnsPerHost: 25, DisableCompression: true})
	return &rest.Config{Host: p.Host(), QPS: qps, Burst: burst, Transport: transport, DisableCompression: true}
}

// WriteKubeconfig writes a kubeconfig that goes through the proxy.
func (p *countingProxy) WriteKubeconfig(path string) error {
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster: {server: %q}
users:
- name: proxy
  user: {}
contexts:
- name: proxy
  context: {cluster: proxy, user: proxy}
current-context: proxy
`, p.Host())
	return os.WriteFile(path, []byte(content), 0o600)
}

func (p *countingProxy) count(key string, at time.Time) {
	p.lock.Lock()
	defer p.lock.Unlock()
	p.counts[key]++
	if strings.HasPrefix(key, "APPLY ") {
		p.lastApply = at
	}
}

// LastApply is when the latest server-side apply was answered (zero: none yet).
func (p *countingProxy) LastApply() time.Time {
	p.lock.Lock()
	defer p.lock.Unlock()
	return p.lastApply
}

// Counts returns a copy of the counts so far, and resets them (and LastApply) when reset
// is true.
func (p *countingProxy) Counts(reset bool) map[string]int64 {
	p.lock.Lock()
	defer p.lock.Unlock()
	out := make(map[string]int64, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	if reset {
		p.counts, p.lastApply = map[string]int64{}, time.Time{}
	}
	return out
}

// classify names a request as "VERB resource" (with " 404" for a read of something
// absent): GET, LIST, WATCH, APPLY (server-side apply patch), PATCH, POST, PUT, DELETE;
// a subresource follows the resource ("services/status").
func classify(r *http.Request, code int) string {
	resource, name, sub := parsePath(r.URL.Path)
	if sub != "" {
		resource += "/" + sub
	}
	verb := r.Method
	switch r.Method {
	case http.MethodGet:
		switch {
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			verb = "WATCH"
		case name == "" && resource != "discovery":
			verb = "LIST"
		}
	case http.MethodPatch:
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			verb = "APPLY"
		}
	}
	key := verb + " " + resource
	if code == http.StatusNotFound {
		key += " 404"
	}
	return key
}

// parsePath splits an API path into resource, name and subresource:
// /api/v1/namespaces/ns/configmaps/x, /apis/apps/v1/namespaces/ns/deployments/x/status.
func parsePath(path string) (resource, name, sub string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "discovery", "", ""
	}
	if len(parts) == 0 {
		return "discovery", "", ""
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	resource = parts[0]
	if len(parts) > 1 {
		name = parts[1]
	}
	if len(parts) > 2 {
		sub = parts[2]
	}
	return resource, name, sub
}

// perService formats counts divided by n, largest first, skipping what is under 0.01.
func perService(counts map[string]int64, n int) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if counts[a] != counts[b] {
			return int(counts[b] - counts[a])
		}
		return strings.Compare(a, b)
	})
	var out []string
	for _, k := range keys {
		if v := float64(counts[k]) / float64(n); v >= 0.01 {
			out = append(out, fmt.Sprintf("%s %.2f", k, v))
		}
	}
	return out
}
