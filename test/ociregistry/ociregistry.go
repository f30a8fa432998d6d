// Package ociregistry runs a real OCI registry for tests: distribution v3 (pinned by the
// module test/registry, built once from the module proxy), on loopback over plain HTTP,
// with htpasswd authentication.
package ociregistry

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/crypto/bcrypt"

	"calaf.io/calaf/test/gitserver"
)

// Version is the distribution release test/registry/go.mod pins.
const Version = "v3.1.2"

// Registry is a running registry: Host ("127.0.0.1:port") and the one user it knows.
type Registry struct {
	Host, User, Password string
	cmd                  *exec.Cmd
	log                  bytes.Buffer
}

// binary returns the registry binary, built once from the module proxy (in its own
// module, test/registry) and cached in $CALAF_CACHE (default ~/.cache/calaf).
func binary() (string, error) {
	cache := os.Getenv("CALAF_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(home, ".cache", "calaf")
	}
	path := filepath.Join(cache, "registry-"+Version, "registry")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	_, file, _, _ := runtime.Caller(0)
	fmt.Fprintf(os.Stderr, "building the OCI registry (distribution %s) into %s, once\n", Version, path)
	build := exec.Command("go", "build", "-ldflags", "-s -w", "-o", path+".new", "github.com/distribution/distribution/v3/cmd/registry")
	build.Dir = filepath.Join(filepath.Dir(file), "..", "registry")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building the registry: %w", err)
	}
	return path, os.Rename(path+".new", path)
}

// Start runs a registry keeping its data under dir, whose one user is user with
// password; Stop ends it.
func Start(dir, user, password string) (*Registry, error) {
	path, err := binary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
		return nil, err
	}
	addr, err := gitserver.FreePort()
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 16)
	rand.Read(secret)
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
  secret: %s
auth:
  htpasswd:
    realm: calaf-test
    path: %s
`, filepath.Join(dir, "data"), addr, hex.EncodeToString(secret), htpasswd)
	configPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	r := &Registry{Host: addr, User: user, Password: password}
	r.cmd = exec.Command(path, "serve", configPath)
	r.cmd.Stdout, r.cmd.Stderr = &r.log, &r.log
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return r, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.Stop()
	return nil, fmt.Errorf("the registry did not answer on %s: %s", addr, r.log.String())
}

// Stop ends the registry.
func (r *Registry) Stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
}
