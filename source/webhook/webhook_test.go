package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"calaf.io/calaf/api/v1alpha1"
)

const token = "the-webhook-token"

func gitSvc(namespace, name, url string) *v1alpha1.Service {
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	svc.Spec.Source.Git = &v1alpha1.GitSource{URL: url}
	return svc
}

type recorder struct {
	lock      sync.Mutex
	triggered []string
}

func (r *recorder) trigger(namespace, name string) bool {
	r.lock.Lock()
	defer r.lock.Unlock()
	r.triggered = append(r.triggered, namespace+"/"+name)
	return true
}

func (r *recorder) list() []string {
	r.lock.Lock()
	defer r.lock.Unlock()
	out := append([]string(nil), r.triggered...)
	sort.Strings(out)
	return out
}

func newReceiver(t *testing.T) (*Receiver, *recorder) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	suspended := gitSvc("a", "suspended", "https://git.example/team/net.git")
	suspended.Spec.Suspend = true
	oci := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "oci"}}
	oci.Spec.Source.OCI = &v1alpha1.OCISource{URL: "oci://registry.example/team/net"}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		gitSvc("a", "https", "https://git.example/team/net.git"),
		gitSvc("b", "ssh", "ssh://git@git.example/team/net"),
		gitSvc("b", "other-repo", "https://git.example/team/other.git"),
		gitSvc("c", "other-host", "https://elsewhere.example/team/net.git"),
		suspended, oci,
	).Build()
	rec := &recorder{}
	return &Receiver{Token: func() ([]byte, error) { return []byte(token), nil }, Reader: reader, Trigger: rec.trigger, Log: logr.Discard()}, rec
}

func sign(body string) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}

const (
	githubPush       = `{"ref":"refs/heads/main","repository":{"clone_url":"https://git.example/team/net.git","ssh_url":"git@git.example:team/net.git","html_url":"https://git.example/team/net"}}`
	gitlabPush       = `{"object_kind":"push","project":{"git_http_url":"https://git.example/team/net.git","git_ssh_url":"git@git.example:team/net.git","web_url":"https://git.example/team/net"}}`
	distributionPush = `{"events":[{"action":"pull","target":{"repository":"team/other"},"request":{"host":"registry.example"}},{"action":"push","target":{"repository":"team/net","tag":"v1"},"request":{"host":"registry.example"}}]}`
	harborPush       = `{"type":"PUSH_ARTIFACT","event_data":{"resources":[{"resource_url":"registry.example/team/net:v2"}]}}`
	giteaPush        = `{"ref":"refs/heads/main","repository":{"clone_url":"https://GIT.example/team/net.git/"}}`
)

func TestReceiver(t *testing.T) {
	matching := []string{"a/https", "b/ssh"}
	cases := []struct {
		name      string
		target    string
		body      string
		headers   map[string]string
		status    int
		triggered []string
	}{
		{"GitHub push, HMAC signature", Path, githubPush, map[string]string{"X-Hub-Signature-256": "sha256=" + sign(githubPush), "X-GitHub-Event": "push"}, http.StatusAccepted, matching},
		{"GitLab push, token header", Path, gitlabPush, map[string]string{"X-Gitlab-Token": token}, http.StatusAccepted, matching},
		{"Gitea push, signature header", Path, giteaPush, map[string]string{"X-Gitea-Signature": sign(giteaPush)}, http.StatusAccepted, matching},
		{"bearer token and ?url=", Path + "?url=https://git.example/team/other", "", map[string]string{"Authorization": "Bearer " + token}, http.StatusAccepted, []string{"b/other-repo"}},
		{"query token, OCI URL", Path + "?token=" + token + "&url=oci://registry.example/team/net", "", nil, http.StatusAccepted, []string{"b/oci"}},
		{"distribution notification", OCIPath, distributionPush, map[string]string{"Authorization": "Bearer " + token}, http.StatusAccepted, []string{"b/oci"}},
		{"Harbor notification", OCIPath, harborPush, map[string]string{"Authorization": "Bearer " + token}, http.StatusAccepted, []string{"b/oci"}},
		{"no Service matches", Path + "?token=" + token + "&url=https://git.example/nobody", "", nil, http.StatusAccepted, nil},
		{"GitHub ping", Path, `{"zen":"x"}`, map[string]string{"X-Hub-Signature-256": "sha256=" + sign(`{"zen":"x"}`), "X-GitHub-Event": "ping"}, http.StatusOK, nil},
		{"wrong token", Path, githubPush, map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized, nil},
		{"token of another body", Path, githubPush, map[string]string{"X-Hub-Signature-256": "sha256=" + sign(gitlabPush)}, http.StatusUnauthorized, nil},
		{"no token", Path, githubPush, nil, http.StatusUnauthorized, nil},
		{"empty token", Path + "?token=", githubPush, nil, http.StatusUnauthorized, nil},
		{"no URL", Path + "?token=" + token, `{"hello":"world"}`, nil, http.StatusBadRequest, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			receiver, rec := newReceiver(t)
			req := httptest.NewRequest(http.MethodPost, c.target, strings.NewReader(c.body))
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			receiver.ServeHTTP(w, req)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body.String())
			}
			got := rec.list()
			if strings.Join(got, ",") != strings.Join(c.triggered, ",") {
				t.Fatalf("triggered %v, want %v", got, c.triggered)
			}
			if c.status == http.StatusAccepted {
				var resp Response
				if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
					t.Fatal(err)
				}
				if strings.Join(resp.Triggered, ",") != strings.Join(c.triggered, ",") {
					t.Fatalf("response says %v", resp.Triggered)
				}
			}
		})
	}
}

func TestReceiverRefusesGET(t *testing.T) {
	receiver, rec := newReceiver(t)
	w := httptest.NewRecorder()
	receiver.ServeHTTP(w, httptest.NewRequest(http.MethodGet, Path+"?token="+token+"&url=https://git.example/team/net", nil))
	if w.Code != http.StatusMethodNotAllowed || len(rec.list()) != 0 {
		t.Fatalf("status %d, triggered %v", w.Code, rec.list())
	}
}

// While a token is rotated its file holds the old and the new one, one per line: either
// is taken, and nothing else.
func TestTokenRotation(t *testing.T) {
	receiver, _ := newReceiver(t)
	receiver.Token = func() ([]byte, error) { return []byte("old-token\n" + token + "\n"), nil }
	for given, want := range map[string]int{"old-token": http.StatusAccepted, token: http.StatusAccepted, "old-token\n" + token: http.StatusUnauthorized, "other": http.StatusUnauthorized} {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, Path+"?url=https://git.example/team/net", nil)
		req.Header.Set("Authorization", "Bearer "+given)
		receiver.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("token %q: %d, want %d", given, w.Code, want)
		}
	}
}
