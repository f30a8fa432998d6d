package nfvapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"

	"calaf.io/calaf/internal/lru"
	"calaf.io/calaf/nfvapi/sol013"
)

// Caller is who made a request, as Kubernetes knows them, and the namespace their VNF
// instances, occurrences, subscriptions and packages live in.
type Caller struct {
	User   string
	UID    string
	Groups []string
	Extra  map[string][]string
	// Namespace of the caller's resources.
	Namespace string
	// Anonymous callers (--insecure-no-auth) act with the server's own identity.
	Anonymous bool
}

// key identifies a caller for the caches of clients and rate limits.
func (c *Caller) key() string {
	if c.Anonymous {
		return "anonymous/" + c.Namespace
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%v\x00%v", c.User, c.UID, c.Namespace, c.Groups, c.Extra)
	return hex.EncodeToString(h.Sum(nil))
}

// Authenticator tells who made a request: a 401 Problem when nobody can be told.
type Authenticator interface {
	Authenticate(r *http.Request) (*Caller, error)
}

// Tenancy maps callers to the namespace they act in: a service account acts in its own
// namespace; any other caller in the one the admin maps its user name, or else the first
// of its groups, to. No mapping is a 403.
type Tenancy struct {
	Users  map[string]string `json:"users,omitempty"`
	Groups map[string]string `json:"groups,omitempty"`
}

// Namespace returns the namespace of a caller.
func (t Tenancy) Namespace(user string, groups []string) (string, error) {
	if ns, _, ok := serviceAccount(user); ok {
		return ns, nil
	}
	if ns, ok := t.Users[user]; ok {
		return ns, nil
	}
	for _, g := range groups {
		if ns, ok := t.Groups[g]; ok {
			return ns, nil
		}
	}
	return "", sol013.Errorf(http.StatusForbidden, "%q is not mapped to a namespace: the admin maps users and groups that are not service accounts to one (docs/nfv-api.md)", user)
}

// Validate refuses a mapping to a name that cannot be a namespace.
func (t Tenancy) Validate() error {
	for kind, m := range map[string]map[string]string{"user": t.Users, "group": t.Groups} {
		for who, ns := range m {
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return fmt.Errorf("the %s %q is mapped to %q, which is not a namespace name: %s", kind, who, ns, strings.Join(errs, "; "))
			}
		}
	}
	return nil
}

// serviceAccount splits "system:serviceaccount:NS:NAME".
func serviceAccount(user string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(user, "system:serviceaccount:")
	if !found {
		return "", "", false
	}
	namespace, name, found = strings.Cut(rest, ":")
	return namespace, name, found && namespace != "" && name != ""
}

// tokenAuthenticator validates bearer tokens with the API server's TokenReview, and
// accepts client certificates the TLS server verified (the subject's common name is the
// user, its organizations the groups, as Kubernetes reads them). Reviews are remembered
// for a short while, by the token's hash.
type tokenAuthenticator struct {
	reviews   authenticationclient.TokenReviewInterface
	audiences []string
	tenancy   Tenancy
	cache     *lru.Cache[reviewed]
	ttl       time.Duration
	now       func() time.Time
}

type reviewed struct {
	caller *Caller
	err    error
	at     time.Time
}

func newTokenAuthenticator(reviews authenticationclient.TokenReviewInterface, audiences []string, tenancy Tenancy, now func() time.Time) *tokenAuthenticator {
	return &tokenAuthenticator{reviews: reviews, audiences: audiences, tenancy: tenancy, cache: lru.New[reviewed](4096), ttl: 10 * time.Second, now: now}
}

func (a *tokenAuthenticator) Authenticate(r *http.Request) (*Caller, error) {
	if token, ok := bearer(r); ok {
		return a.review(r.Context(), token)
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		subject := r.TLS.VerifiedChains[0][0].Subject
		if subject.CommonName == "" {
			return nil, sol013.Errorf(http.StatusUnauthorized, "the client certificate names no user (its subject has no common name)")
		}
		return a.caller(subject.CommonName, "", subject.Organization, nil)
	}
	return nil, unauthorized("no credentials: send an OAuth 2.0 bearer token (Authorization: Bearer …) or a client certificate")
}

func (a *tokenAuthenticator) review(ctx context.Context, token string) (*Caller, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if r, ok := a.cache.Get(key); ok && a.now().Sub(r.at) < a.ttl {
		return r.caller, r.err
	}
	review, err := a.reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: a.audiences}}, metav1.CreateOptions{})
	if err != nil {
		return nil, sol013.Errorf(http.StatusServiceUnavailable, "the token could not be reviewed: the Kubernetes API server did not answer the TokenReview")
	}
	var caller *Caller
	if !review.Status.Authenticated {
		err = unauthorized("the bearer token is not valid")
	} else {
		u := review.Status.User
		extra := map[string][]string{}
		for k, v := range u.Extra {
			extra[k] = v
		}
		caller, err = a.caller(u.Username, u.UID, u.Groups, extra)
	}
	a.cache.Put(key, reviewed{caller: caller, err: err, at: a.now()})
	return caller, err
}

func (a *tokenAuthenticator) caller(user, uid string, groups []string, extra map[string][]string) (*Caller, error) {
	ns, err := a.tenancy.Namespace(user, groups)
	if err != nil {
		return nil, err
	}
	return &Caller{User: user, UID: uid, Groups: groups, Extra: extra, Namespace: ns}, nil
}

// bearer returns the request's bearer token: Authorization: Bearer, or the X-Auth-Token
// header OpenStack's clients send their token in (openstack --os-auth-type admin_token
// --os-token TOKEN).
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		token = r.Header.Get("X-Auth-Token")
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func unauthorized(detail string) error {
	return sol013.Errorf(http.StatusUnauthorized, "%s", detail)
}

// anonymous is the --insecure-no-auth authenticator: every request acts with the server's
// own identity, in one namespace.
type anonymous struct{ namespace string }

func (a anonymous) Authenticate(*http.Request) (*Caller, error) {
	return &Caller{User: "anonymous", Namespace: a.namespace, Anonymous: true}, nil
}
