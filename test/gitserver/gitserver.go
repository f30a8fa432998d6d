// Package gitserver runs a real git server for tests and benchmarks: Debian's
// `git http-backend` behind net/http/cgi, with basic auth, on loopback; and drives the git
// command line to commit and push to its repositories. It counts the requests it serves.
package gitserver

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Backend is the git-http-backend of Debian's git package.
const Backend = "/usr/lib/git-core/git-http-backend"

// Server serves the bare repositories under Root at URL/<name>.git.
type Server struct {
	URL  string
	Root string
	// Username and Password are required on every request (basic auth), unless it carries
	// Token as a bearer token (when Token is set).
	Username, Password string
	Token              string

	server   *httptest.Server
	lsRemote sync.Map // repository → *atomic.Int64: ref advertisements (GET info/refs)
	fetches  sync.Map // repository → *atomic.Int64: fetches (POST git-upload-pack)
	delay    atomic.Int64
	down     atomic.Bool
}

// Start starts a server on loopback; Close stops it.
func Start(root, username, password string) (*Server, error) {
	if _, err := os.Stat(Backend); err != nil {
		return nil, fmt.Errorf("%s not found: apt-get install git", Backend)
	}
	s := &Server{Root: root, Username: username, Password: password}
	backend := &cgi.Handler{
		Path: Backend,
		Root: "/",
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "HOME=" + root},
	}
	s.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		repo := repository(r.URL.Path)
		switch {
		case strings.HasSuffix(r.URL.Path, "/info/refs") && r.URL.Query().Get("service") == "git-upload-pack":
			counter(&s.lsRemote, repo).Add(1)
		case strings.HasSuffix(r.URL.Path, "/git-upload-pack") && r.Method == http.MethodPost:
			counter(&s.fetches, repo).Add(1)
		}
		if d := s.delay.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		backend.ServeHTTP(w, r)
	}))
	s.URL = s.server.URL
	return s, nil
}

// authorized tells whether a request carries the server's credentials: basic auth, or the
// bearer token.
func (s *Server) authorized(r *http.Request) bool {
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.Token != "" {
		return subtle.ConstantTimeCompare([]byte(bearer), []byte(s.Token)) == 1
	}
	user, password, ok := r.BasicAuth()
	return ok && subtle.ConstantTimeCompare([]byte(user), []byte(s.Username)) == 1 && subtle.ConstantTimeCompare([]byte(password), []byte(s.Password)) == 1
}

// Close stops the server.
func (s *Server) Close() { s.server.Close() }

// SetDown makes the server answer 503 to everything (true) or serve again (false).
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// SetDelay delays every request (to make concurrent fetches overlap).
func (s *Server) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// RepoURL is the clone URL of a repository.
func (s *Server) RepoURL(name string) string { return s.URL + "/" + name + ".git" }

// LsRemotes returns how many ref advertisements a repository served.
func (s *Server) LsRemotes(name string) int64 { return counter(&s.lsRemote, name+".git").Load() }

// Fetches returns how many fetches (git-upload-pack POSTs) a repository served.
func (s *Server) Fetches(name string) int64 { return counter(&s.fetches, name+".git").Load() }

func counter(m *sync.Map, key string) *atomic.Int64 {
	c, _ := m.LoadOrStore(key, &atomic.Int64{})
	return c.(*atomic.Int64)
}

// repository extracts "<name>.git" from a request path.
func repository(path string) string {
	for _, part := range strings.Split(path, "/") {
		if strings.HasSuffix(part, ".git") {
			return part
		}
	}
	return ""
}

// Repo is a bare repository on the server and a work tree that pushes to it.
type Repo struct {
	Name string
	Bare string
	Work string
}

// NewRepo creates an empty bare repository and its work tree on branch main.
func (s *Server) NewRepo(name string) (*Repo, error) {
	r := &Repo{Name: name, Bare: filepath.Join(s.Root, name+".git"), Work: filepath.Join(s.Root, "work", name)}
	if _, err := Git("", "init", "--quiet", "--bare", "--initial-branch=main", r.Bare); err != nil {
		return nil, err
	}
	if _, err := Git("", "init", "--quiet", "--initial-branch=main", r.Work); err != nil {
		return nil, err
	}
	for _, kv := range [][2]string{{"user.name", "Calaf Test"}, {"user.email", "test@calaf.io"}, {"commit.gpgsign", "false"}} {
		if _, err := Git(r.Work, "config", kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	if _, err := Git(r.Work, "remote", "add", "origin", r.Bare); err != nil {
		return nil, err
	}
	return r, nil
}

// Commit writes files (path → content; an empty content removes the file), commits them
// and returns the commit.
func (r *Repo) Commit(message string, files map[string]string) (string, error) {
	for path, content := range files {
		full := filepath.Join(r.Work, path)
		if content == "" {
			if _, err := Git(r.Work, "rm", "--quiet", "-r", "--", path); err != nil {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", err
		}
		if _, err := Git(r.Work, "add", "--", path); err != nil {
			return "", err
		}
	}
	if _, err := Git(r.Work, "commit", "--quiet", "--allow-empty", "-m", message); err != nil {
		return "", err
	}
	return r.Head()
}

// Head returns the commit of the work tree's HEAD.
func (r *Repo) Head() (string, error) {
	out, err := Git(r.Work, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// Push pushes a branch (and tags) of the work tree to the bare repository.
func (r *Repo) Push(branch string) error {
	_, err := Git(r.Work, "push", "--quiet", "--force", "--tags", "origin", "HEAD:refs/heads/"+branch)
	return err
}

// Tag tags HEAD; annotated tags carry a message.
func (r *Repo) Tag(name string, annotated bool) error {
	args := []string{"tag", "--force", name}
	if annotated {
		args = []string{"tag", "--force", "-a", "-m", "release " + name, name}
	}
	_, err := Git(r.Work, args...)
	return err
}

// Git runs the git command line in dir and returns its output.
func Git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// FreePort returns a loopback address nobody listens on (connections are refused).
func FreePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}
