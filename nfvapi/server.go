package nfvapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/internal/lru"
	"calaf.io/calaf/internal/outbound"
	"calaf.io/calaf/nfvapi/content"
	"calaf.io/calaf/nfvapi/sol013"
)

// Config is what the server needs besides a connection to the Kubernetes API.
type Config struct {
	// BaseURL is the URL NFVOs reach the server at, for Location headers and links;
	// empty uses each request's own scheme and host.
	BaseURL *url.URL
	// Tenancy maps callers that are not service accounts to a namespace.
	Tenancy Tenancy
	// Audiences a bearer token must be meant for (TokenReview); empty: the API server's.
	Audiences []string
	// InsecureNoAuth serves every request unauthenticated, acting with the server's own
	// identity in Namespace: for tests only.
	InsecureNoAuth bool
	Namespace      string
	// MaxBodyBytes bounds a JSON request body (default 1 MiB).
	MaxBodyBytes int64
	// PageSize is the largest page a list answers (default 100).
	PageSize int
	// Rate and Burst bound each caller's requests per second (default 20, burst 40).
	Rate  rate.Limit
	Burst int
	// Content keeps the content of uploaded packages (nil: a store of small packages
	// only, in ConfigMaps).
	Content *content.Store
	// Downloads fetches the content of packages uploaded from a URI, under the admin's
	// outbound policy (nil: a client of the default policy).
	Downloads *outbound.Client
	// Callbacks tests a subscription's callback before it is made; nil skips the test.
	Callbacks CallbackTester
	// Now is the clock (default time.Now).
	Now func() time.Time
	Log logr.Logger
}

func (c *Config) defaults() {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.PageSize <= 0 {
		c.PageSize = 100
	}
	if c.Rate <= 0 {
		c.Rate, c.Burst = 20, 40
	}
	if c.Burst <= 0 {
		c.Burst = int(c.Rate) * 2
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Server serves the NFV interfaces.
type Server struct {
	cfg      Config
	authn    Authenticator
	clients  *clients
	limiters *lru.Cache[*rate.Limiter]
	mux      *http.ServeMux
}

// New makes a server acting through config (the server's own identity, which must be
// allowed to impersonate the callers and to create TokenReviews) with scheme and mapper.
func New(cfg Config, config *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper) (*Server, error) {
	cfg.defaults()
	if cfg.Content == nil {
		store, err := content.New(content.Config{})
		if err != nil {
			return nil, err
		}
		cfg.Content = store
	}
	if cfg.Downloads == nil {
		cfg.Downloads = outbound.New(outbound.Options{UserAgent: "calaf-nfv-api", Timeout: downloadTimeout})
	}
	if err := cfg.Tenancy.Validate(); err != nil {
		return nil, err
	}
	cl, err := newClients(config, scheme, mapper)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, clients: cl, limiters: lru.New[*rate.Limiter](4096), mux: http.NewServeMux()}
	if cfg.InsecureNoAuth {
		if cfg.Namespace == "" {
			return nil, errors.New("without authentication, the namespace to act in must be given")
		}
		s.authn = anonymous{namespace: cfg.Namespace}
	} else {
		kube, err := kubernetes.NewForConfigAndClient(config, cl.base)
		if err != nil {
			return nil, err
		}
		s.authn = newTokenAuthenticator(kube.AuthenticationV1().TokenReviews(), cfg.Audiences, cfg.Tenancy, cfg.Now)
	}
	s.routes()
	return s, nil
}

// ServeHTTP answers a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			s.cfg.Log.Error(fmt.Errorf("%v", v), "a request handler panicked", "method", r.Method, "path", r.URL.Path)
			sol013.WriteProblem(w, r, errors.New("panic"))
		}
	}()
	s.mux.ServeHTTP(w, r)
}

// request is what a handler gets: the caller and the client acting as them.
type request struct {
	*http.Request
	caller *Caller
	client client.Client
	// header of the answer.
	header http.Header
}

// handlerFunc answers with a status and a body (nil: none), or an error (a Problem).
type handlerFunc func(r *request) (int, any, error)

// route registers a handler for "METHOD /path"; paths under /vnflcm/v2 require the
// Version header of major version 2.
func (s *Server) route(pattern string, h handlerFunc) {
	s.routeBounded(pattern, s.cfg.MaxBodyBytes, h)
}

// routeBounded is route for a request whose body may be up to maxBody bytes (a package's
// content), not the bound of a JSON body.
func (s *Server) routeBounded(pattern string, maxBody int64, h handlerFunc) {
	_, path, _ := strings.Cut(pattern, " ")
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, path, maxBody, h) })
}

// methods registers, for each path, the answer to methods it does not serve: 405 with
// the Allow header.
func (s *Server) methods(allowed map[string][]string) {
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			sol013.WriteProblem(w, r, sol013.Errorf(http.StatusMethodNotAllowed, "%s is not served on %s (only %s)", r.Method, r.URL.Path, allow))
		})
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, path string, maxBody int64, h handlerFunc) {
	if strings.HasPrefix(path, "/vnflcm/v2/") {
		w.Header().Set(sol013.HeaderVersion, lcmVersion)
		if err := sol013.CheckVersion(r, 2, !strings.HasSuffix(path, "/api_versions")); err != nil {
			sol013.WriteProblem(w, r, err)
			return
		}
	}
	caller, err := s.authn.Authenticate(r)
	if err != nil {
		if sol013.AsProblem(err).Status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="calaf"`)
		}
		sol013.WriteProblem(w, r, err)
		return
	}
	if !s.allow(caller) {
		w.Header().Set("Retry-After", "1")
		sol013.WriteProblem(w, r, sol013.Errorf(http.StatusTooManyRequests, "more than %v requests a second from %s", s.cfg.Rate, caller.User))
		return
	}
	cl, err := s.clients.For(caller)
	if err != nil {
		sol013.WriteProblem(w, r, err)
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	req := &request{Request: r, caller: caller, client: cl, header: w.Header()}
	status, body, err := h(req)
	if err != nil {
		if p := sol013.AsProblem(err); p.Status >= 500 {
			s.cfg.Log.Error(err, "request failed", "method", r.Method, "path", r.URL.Path, "user", caller.User)
		}
		sol013.WriteProblem(w, r, err)
		return
	}
	if stream, ok := body.(streamed); ok {
		stream.write(w, r, status)
		return
	}
	writeJSON(w, status, body)
}

// streamed is an answer that is no JSON document (a package's content, a file of it):
// it writes itself.
type streamed interface {
	write(w http.ResponseWriter, r *http.Request, status int)
}

// allow takes one request from the caller's rate.
func (s *Server) allow(caller *Caller) bool {
	key := caller.key()
	limiter, ok := s.limiters.Get(key)
	if !ok {
		limiter = rate.NewLimiter(s.cfg.Rate, s.cfg.Burst)
		s.limiters.Put(key, limiter)
	}
	return limiter.Allow()
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	if body == nil {
		w.WriteHeader(status)
		return
	}
	data, err := json.Marshal(body)
	if err != nil {
		sol013.WriteProblem(w, nil, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// decode reads a JSON request body into v: 400 for what is not JSON of that shape, 413
// past the size bound.
func (r *request) decode(v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return sol013.Errorf(http.StatusUnsupportedMediaType, "the body must be application/json, not %s", ct)
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return sol013.Errorf(http.StatusRequestEntityTooLarge, "the body is larger than %d bytes", tooLarge.Limit)
		}
		return sol013.Errorf(http.StatusBadRequest, "the body could not be read")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return sol013.Errorf(http.StatusBadRequest, "the body is not the JSON this request takes: %s", jsonError(err))
	}
	if dec.More() {
		return sol013.Errorf(http.StatusBadRequest, "the body holds more than one JSON value")
	}
	return nil
}

// jsonError words a decoding error without Go type names.
func jsonError(err error) string {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at byte %d", syntax.Offset)
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "the body"
		}
		return fmt.Sprintf("%s must be %s, not %s", field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends too early"
	}
	return "invalid JSON"
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "true or false"
	}
	return "a number"
}

// base is the URL of this server as the caller reaches it: the configured one, else the
// request's scheme and host.
func (r *request) base(s *Server) string {
	if s.cfg.BaseURL != nil {
		return strings.TrimSuffix(s.cfg.BaseURL.String(), "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
