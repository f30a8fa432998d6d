//go:build !calaf_offline

package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/internal/outbound"
	"calaf.io/calaf/nfvapi"
	"calaf.io/calaf/nfvapi/content"
	"calaf.io/calaf/source"
)

// restConfig is the server's connection to the API server. Each caller's client has a rate
// limiter of its own at its settings (--kube-api-qps, --kube-api-burst): client-go's
// default of 5 requests per second would make a caller's list of 1,000 instances wait.
func (f *nfvAPIFlags) restConfig() (*rest.Config, error) {
	config, err := f.kube.config()
	if err != nil {
		return nil, err
	}
	if err := f.apiClient.configure(config); err != nil {
		return nil, err
	}
	config.UserAgent = "calaf-nfv-api"
	return config, nil
}

// nfvAPIFlags are the settings of calaf nfv-api.
type nfvAPIFlags struct {
	kube                        kubeFlags
	apiClient                   apiClientFlags
	listen                      string
	certFile, keyFile           string
	certSecret                  string
	clientCAFile                string
	plainHTTP                   bool
	baseURL                     string
	tenantsFile                 string
	audiences                   []string
	insecureNoAuth              bool
	maxBodyBytes                int64
	pageSize                    int
	ratePerCaller               float64
	shutdownGracePeriod         time.Duration
	outboundAllow, outboundDeny []string
	content                     contentFlags
}

// contentFlags say where the content of uploaded VNF packages goes (nfvapi/content).
type contentFlags struct {
	registry, authFile, caFile, pullSecret string
	insecure                               bool
	maxBytes, inlineBytes                  int64
}

func (c *contentFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&c.registry, "content-registry", "", "oci://HOST[/PATH]: where uploaded VNF packages larger than --inline-package-bytes go (each namespace's in PATH/NAMESPACE); without it only small ones are taken")
	fl.BoolVar(&c.insecure, "content-registry-insecure", false, "the content registry speaks plain HTTP")
	fl.StringVar(&c.authFile, "content-registry-auth-file", "", "Docker config.json with the credentials to push to and pull from the content registry")
	fl.StringVar(&c.caFile, "content-registry-ca-file", "", "PEM CA bundle of the content registry")
	fl.StringVar(&c.pullSecret, "content-registry-pull-secret", "", "name of the dockerconfigjson Secret, in every namespace using the NFV API, with which the operator pulls packages from the content registry")
	fl.Int64Var(&c.maxBytes, "max-package-bytes", 64<<20, "largest VNF package content an upload may send (the operator's package limit)")
	fl.Int64Var(&c.inlineBytes, "inline-package-bytes", 512<<10, "VNF package content of at most this size is kept in a ConfigMap of its namespace (at most 768 KiB)")
}

// store makes the content store the flags say.
func (c *contentFlags) store() (*content.Store, error) {
	cfg := content.Config{Registry: c.registry, Insecure: c.insecure, PullSecret: c.pullSecret, MaxBytes: c.maxBytes, InlineBytes: c.inlineBytes}
	if c.authFile != "" {
		data, err := os.ReadFile(c.authFile)
		if err != nil {
			return nil, err
		}
		if cfg.Keychain, err = source.ParseDockerConfig(data, false); err != nil {
			return nil, fmt.Errorf("--content-registry-auth-file: %w", err)
		}
	}
	if c.caFile != "" {
		data, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, err
		}
		cfg.CABundle = data
	}
	return content.New(cfg)
}

func newNFVAPICommand() *cobra.Command {
	return nfvAPICommand(&nfvAPIFlags{})
}

// nfvAPICommand is calaf nfv-api, its flags parsed into f.
func nfvAPICommand(f *nfvAPIFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nfv-api",
		Short: "Serve the ETSI NFV interfaces (SOL003 VNF LCM, VNF package management) over REST",
		Long: "Serve the ETSI NFV interfaces an NFVO drives a VNFM through: SOL003 VNF lifecycle management at\n" +
			"/vnflcm/v2 and VNF package management at /vnfpkgm/v1, with the SOL013 conventions. Every resource\n" +
			"is a Kubernetes resource, read and written as the caller (docs/nfv-api.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(ctrl.SetupSignalHandler()) },
	}
	fl := cmd.Flags()
	f.kube.register(cmd)
	f.apiClient.register(fl)
	f.content.register(cmd)
	fl.StringVar(&f.listen, "listen", ":9443", "address to serve on")
	fl.StringVar(&f.certFile, "tls-cert-file", "", "PEM certificate to serve (re-read when it changes, e.g. a mounted cert-manager Secret)")
	fl.StringVar(&f.keyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	fl.StringVar(&f.certSecret, "tls-secret", "", "NAMESPACE/NAME of a kubernetes.io/tls Secret to serve (re-read when it changes), instead of files")
	fl.StringVar(&f.clientCAFile, "client-ca-file", "", "PEM CA bundle: accept client certificates it signed (common name = user, organizations = groups)")
	fl.BoolVar(&f.plainHTTP, "plain-http", false, "serve plain HTTP, without TLS (tokens then cross the network in clear: for tests)")
	fl.StringVar(&f.baseURL, "base-url", "", "URL NFVOs reach this server at, for Location headers and links (default: each request's own)")
	fl.StringVar(&f.tenantsFile, "tenants", "", "YAML file mapping users and groups that are not service accounts to a namespace: {users: {NAME: NS}, groups: {NAME: NS}}")
	fl.StringSliceVar(&f.audiences, "token-audience", nil, "audiences a bearer token must be meant for (default: the API server's)")
	fl.BoolVar(&f.insecureNoAuth, "insecure-no-auth", false, "serve every request unauthenticated, acting with this server's own identity in --namespace (for tests only)")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", 1<<20, "largest JSON request body")
	fl.IntVar(&f.pageSize, "page-size", 100, "largest page a list answers")
	fl.Float64Var(&f.ratePerCaller, "rate", 20, "requests per second each caller may make (bursts of twice as many)")
	fl.DurationVar(&f.shutdownGracePeriod, "shutdown-grace-period", 10*time.Second, "how long requests in progress may take to end on shutdown")
	fl.StringSliceVar(&f.outboundAllow, "outbound-allow", nil, "networks (CIDRs or addresses) a subscription's callback or a package's upload_from_uri may be on besides public addresses (the callback's test GET; give the operator the same)")
	fl.StringSliceVar(&f.outboundDeny, "outbound-deny", nil, "networks a subscription's callback or a package's upload_from_uri may not be on, besides loopback, link-local, metadata and private ones")
	return cmd
}

func (f *nfvAPIFlags) run(ctx context.Context) error {
	log := zap.New()
	config, err := f.restConfig()
	if err != nil {
		return err
	}
	cfg, err := f.serverConfig()
	if err != nil {
		return usageError{err}
	}
	cfg.Log = log
	scheme := operator.NewScheme()
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(config, httpClient)
	if err != nil {
		return err
	}
	server, err := nfvapi.New(cfg, config, scheme, mapper)
	if err != nil {
		return err
	}
	httpServer := &http.Server{Addr: f.listen, Handler: server, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 10 * time.Minute, WriteTimeout: 10 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	if httpServer.TLSConfig, err = f.tlsConfig(config, scheme); err != nil {
		return usageError{err}
	}
	listener, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	log.Info("serving the NFV interfaces", "address", listener.Addr().String(), "tls", httpServer.TLSConfig != nil, "authentication", !f.insecureNoAuth)
	done := make(chan error, 1)
	go func() {
		if httpServer.TLSConfig != nil {
			done <- httpServer.ServeTLS(listener, "", "")
		} else {
			done <- httpServer.Serve(listener)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), f.shutdownGracePeriod)
	defer cancel()
	if err := httpServer.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (f *nfvAPIFlags) serverConfig() (nfvapi.Config, error) {
	cfg := nfvapi.Config{Audiences: f.audiences, InsecureNoAuth: f.insecureNoAuth, Namespace: f.kube.namespace,
		MaxBodyBytes: f.maxBodyBytes, PageSize: f.pageSize, Rate: rate.Limit(f.ratePerCaller), Burst: int(2 * f.ratePerCaller)}
	if f.insecureNoAuth && f.kube.namespace == "" {
		return cfg, errors.New("--insecure-no-auth needs --namespace: the namespace every request acts in")
	}
	if !f.insecureNoAuth && f.kube.namespace != "" {
		return cfg, errors.New("--namespace goes with --insecure-no-auth only: an authenticated caller acts in its own namespace (--tenants)")
	}
	if f.baseURL != "" {
		u, err := url.Parse(f.baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, fmt.Errorf("--base-url %q is not an http(s) URL", f.baseURL)
		}
		cfg.BaseURL = u
	}
	allow, err := outbound.ParsePrefixes(f.outboundAllow)
	if err != nil {
		return cfg, fmt.Errorf("--outbound-allow: %w", err)
	}
	deny, err := outbound.ParsePrefixes(f.outboundDeny)
	if err != nil {
		return cfg, fmt.Errorf("--outbound-deny: %w", err)
	}
	var networks []outbound.Network
	for _, p := range deny {
		networks = append(networks, outbound.Network{Prefix: p, Name: "refused by the admin (--outbound-deny)"})
	}
	policy := outbound.Policy{Allow: allow, Deny: networks}
	cfg.Callbacks = nfvapi.OutboundCallbacks{Client: outbound.New(outbound.Options{UserAgent: "calaf-nfv-api", Policy: policy})}
	cfg.Downloads = outbound.New(outbound.Options{UserAgent: "calaf-nfv-api", Policy: policy, Timeout: 10 * time.Minute})
	store, err := f.content.store()
	if err != nil {
		return cfg, err
	}
	cfg.Content = store
	if f.tenantsFile != "" {
		data, err := os.ReadFile(f.tenantsFile)
		if err != nil {
			return cfg, err
		}
		if err := yaml.UnmarshalStrict(data, &cfg.Tenancy); err != nil {
			return cfg, fmt.Errorf("%s: %w", f.tenantsFile, err)
		}
	}
	return cfg, nil
}

// tlsConfig is the serving TLS configuration: the certificate from files or a Secret, and
// client certificates when a CA bundle is given; nil with --plain-http.
func (f *nfvAPIFlags) tlsConfig(config *rest.Config, scheme *runtime.Scheme) (*tls.Config, error) {
	var certs *nfvapi.CertificateSource
	switch {
	case f.plainHTTP:
		if f.certFile != "" || f.certSecret != "" || f.clientCAFile != "" {
			return nil, errors.New("--plain-http goes with no certificate flag")
		}
		return nil, nil
	case f.certSecret != "":
		if f.certFile != "" || f.keyFile != "" {
			return nil, errors.New("give the certificate as files or as a Secret, not both")
		}
		ns, name, ok := strings.Cut(f.certSecret, "/")
		if !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("--tls-secret %q is not NAMESPACE/NAME", f.certSecret)
		}
		c, err := client.New(config, client.Options{Scheme: scheme})
		if err != nil {
			return nil, err
		}
		certs = nfvapi.CertificateSecret(c, client.ObjectKey{Namespace: ns, Name: name})
	case f.certFile != "" && f.keyFile != "":
		certs = nfvapi.CertificateFiles(f.certFile, f.keyFile)
	default:
		return nil, errors.New("serve TLS (--tls-cert-file and --tls-key-file, or --tls-secret), or, for tests, --plain-http")
	}
	if _, err := certs.GetCertificate(nil); err != nil {
		return nil, err
	}
	var pool *x509.CertPool
	if f.clientCAFile != "" {
		data, err := os.ReadFile(f.clientCAFile)
		if err != nil {
			return nil, err
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("%s holds no PEM certificate", f.clientCAFile)
		}
	}
	return nfvapi.TLSConfig(certs, pool), nil
}
