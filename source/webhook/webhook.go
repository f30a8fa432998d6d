// Package webhook receives push notifications from git servers (GitHub, GitLab, Gitea),
// OCI registries (distribution, Harbor), or anything that can POST a URL, and reconciles at
// once every Service whose source is the pushed repository, instead of waiting for its
// interval.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
)

// Path is where the receiver listens for git push events; OCIPath, for registry push
// notifications (the same handler: both name repositories).
const (
	Path    = "/hooks/git"
	OCIPath = "/hooks/oci"
)

// maxBody bounds a push payload (GitHub caps them at 25 MB; the fields read come first
// in every payload seen, but a payload is parsed whole).
const maxBody = 5 << 20

// Tokens are the tokens a token file holds, one per line: while a token is rotated the
// file holds the old and the new one, and either is taken.
func Tokens(data []byte) [][]byte {
	var tokens [][]byte
	for line := range bytes.Lines(data) {
		if token := bytes.TrimSpace(line); len(token) > 0 {
			tokens = append(tokens, token)
		}
	}
	return tokens
}

// Receiver is the HTTP handler of push notifications. Every request must carry the token
// (one of them, while it is rotated: see Tokens):
// "Authorization: Bearer <token>", "?token=<token>", GitLab's "X-Gitlab-Token", or an
// HMAC-SHA256 of the body keyed with the token ("X-Hub-Signature-256: sha256=<hex>" from
// GitHub and Gitea, "X-Gitea-Signature: <hex>"). A request without the right token gets
// 401 and triggers nothing.
type Receiver struct {
	// Token returns the current tokens (read per request, so a mounted Secret can rotate),
	// one per line: the push receiver's own, not the Alertmanager receiver's.
	Token func() ([]byte, error)
	// Reader lists Services (the manager's cache).
	Reader client.Reader
	// Namespace limits the Services considered; empty means all.
	Namespace string
	// Trigger reconciles a Service at once.
	Trigger func(namespace, name string) bool
	Log     logr.Logger
}

// Response is the JSON body of a handled push.
type Response struct {
	// Repositories are the URLs the payload named.
	Repositories []string `json:"repositories"`
	// Triggered are the Services reconciled, as namespace/name.
	Triggered []string `json:"triggered"`
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	if len(body) > maxBody {
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	token, err := r.Token()
	if err != nil || len(token) == 0 {
		r.Log.Error(err, "webhook token unavailable")
		http.Error(w, "the webhook has no token configured", http.StatusServiceUnavailable)
		return
	}
	if !slices.ContainsFunc(Tokens(token), func(t []byte) bool { return authorized(req, body, t) }) {
		r.Log.Info("refused a webhook request without the right token", "remote", req.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if event := req.Header.Get("X-GitHub-Event"); event == "ping" {
		writeJSON(w, http.StatusOK, Response{})
		return
	}
	urls := repositoryURLs(req, body)
	if len(urls) == 0 {
		http.Error(w, "no repository URL: send a GitHub, GitLab or Gitea push payload, or ?url=<repository>", http.StatusBadRequest)
		return
	}
	triggered, err := r.trigger(req.Context(), urls)
	if err != nil {
		r.Log.Error(err, "listing Services for a webhook")
		http.Error(w, "cannot list Services", http.StatusInternalServerError)
		return
	}
	r.Log.Info("push received", "repositories", urls, "triggered", triggered)
	writeJSON(w, http.StatusAccepted, Response{Repositories: urls, Triggered: triggered})
}

// trigger reconciles every Service whose git (or OCI) source is one of the URLs.
func (r *Receiver) trigger(ctx context.Context, urls []string) ([]string, error) {
	wanted := map[string]bool{}
	for _, u := range urls {
		wanted[source.NormalizeRepoURL(u)] = true
	}
	var list v1alpha1.ServiceList
	var opts []client.ListOption
	if r.Namespace != "" {
		opts = append(opts, client.InNamespace(r.Namespace))
	}
	if err := r.Reader.List(ctx, &list, opts...); err != nil {
		return nil, err
	}
	triggered := []string{}
	for i := range list.Items {
		svc := &list.Items[i]
		if svc.Spec.Suspend || !svc.DeletionTimestamp.IsZero() {
			continue
		}
		var repo string
		switch src := svc.Spec.Source; {
		case src.Git != nil:
			repo = src.Git.URL
		case src.OCI != nil:
			repo = src.OCI.URL
		default:
			continue
		}
		if wanted[source.NormalizeRepoURL(repo)] {
			r.Trigger(svc.Namespace, svc.Name)
			triggered = append(triggered, svc.Namespace+"/"+svc.Name)
		}
	}
	sort.Strings(triggered)
	return triggered, nil
}

// authorized checks the token in constant time, whichever way the sender carries it.
func authorized(req *http.Request, body, token []byte) bool {
	equal := func(given string) bool {
		a, b := sha256.Sum256([]byte(given)), sha256.Sum256(token)
		return given != "" && subtle.ConstantTimeCompare(a[:], b[:]) == 1
	}
	if bearer, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok && equal(strings.TrimSpace(bearer)) {
		return true
	}
	if equal(req.URL.Query().Get("token")) || equal(req.Header.Get("X-Gitlab-Token")) {
		return true
	}
	mac := hmac.New(sha256.New, token)
	mac.Write(body)
	expected := mac.Sum(nil)
	for _, header := range []string{"X-Hub-Signature-256", "X-Gitea-Signature", "X-Gogs-Signature"} {
		given := strings.TrimPrefix(req.Header.Get(header), "sha256=")
		if given == "" {
			continue
		}
		if sig, err := hex.DecodeString(given); err == nil && hmac.Equal(sig, expected) {
			return true
		}
	}
	return false
}

// repositoryURLs returns the repository URLs of a push: ?url= values, and the URLs of
// GitHub, Gitea/Gogs ("repository": clone_url, html_url, ssh_url...) and GitLab
// ("project": git_http_url, git_ssh_url, web_url...) payloads.
func repositoryURLs(req *http.Request, body []byte) []string {
	seen := map[string]bool{}
	var urls []string
	add := func(u string) {
		if u != "" && !seen[u] {
			seen[u] = true
			urls = append(urls, u)
		}
	}
	for _, u := range req.URL.Query()["url"] {
		add(u)
	}
	var payload map[string]any
	if len(body) > 0 && json.Unmarshal(body, &payload) == nil {
		for _, object := range []string{"repository", "project"} {
			fields, _ := payload[object].(map[string]any)
			for _, key := range []string{"clone_url", "html_url", "ssh_url", "git_url", "git_http_url", "git_ssh_url", "http_url", "web_url", "homepage", "url"} {
				if value, ok := fields[key].(string); ok {
					add(value)
				}
			}
		}
		for _, u := range registryURLs(payload) {
			add(u)
		}
	}
	return urls
}

// registryURLs returns the oci:// repositories of registry push notifications:
// distribution's envelope ({"events": [{"action": "push", "target": {"repository"},
// "request": {"host"}}]}) and Harbor's ({"event_data": {"resources": [{"resource_url":
// "host/project/repo:tag"}]}}).
func registryURLs(payload map[string]any) []string {
	var urls []string
	events, _ := payload["events"].([]any)
	for _, e := range events {
		event, _ := e.(map[string]any)
		target, _ := event["target"].(map[string]any)
		request, _ := event["request"].(map[string]any)
		repo, _ := target["repository"].(string)
		host, _ := request["host"].(string)
		if action, _ := event["action"].(string); action == "push" && repo != "" && host != "" {
			urls = append(urls, "oci://"+host+"/"+repo)
		}
	}
	data, _ := payload["event_data"].(map[string]any)
	resources, _ := data["resources"].([]any)
	for _, r := range resources {
		resource, _ := r.(map[string]any)
		ref, _ := resource["resource_url"].(string)
		if ref == "" {
			continue
		}
		if at := strings.Index(ref, "@"); at >= 0 {
			ref = ref[:at]
		}
		if colon := strings.LastIndex(ref, ":"); colon > strings.LastIndex(ref, "/") {
			ref = ref[:colon]
		}
		urls = append(urls, "oci://"+ref)
	}
	return urls
}

func writeJSON(w http.ResponseWriter, status int, value any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(value); err != nil {
		fmt.Fprintln(w)
	}
}
