package sources

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/crypto/bcrypt"

	"calaf.io/calaf/test/gitserver"
)

// registryVersion is the distribution release test/registry/go.mod pins.
const registryVersion = "v3.1.2"

// registry is a distribution v3 registry running on loopback over plain HTTP, with
// htpasswd authentication.
type registry struct {
	host string
	cmd  *exec.Cmd
	log  bytes.Buffer
}

// registryBinary returns the registry binary, built once from the module proxy (in its
// own module, test/registry) and cached in $CALAF_CACHE (default ~/.cache/calaf).
func registryBinary() (string, error) {
	cache := os.Getenv("CALAF_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(home, ".cache", "calaf")
	}
	binary := filepath.Join(cache, "registry-"+registryVersion, "registry")
	if _, err := os.Stat(binary); err == nil {
		return binary, nil
	}
	fmt.Fprintf(os.Stderr, "building the OCI registry (distribution %s) into %s, once\n", registryVersion, binary)
	build := exec.Command("go", "build", "-ldflags", "-s -w", "-o", binary+".new", "github.com/distribution/distribution/v3/cmd/registry")
	build.Dir = filepath.Join("..", "registry")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building the registry: %w", err)
	}
	return binary, os.Rename(binary+".new", binary)
}

func startRegistry(dir string) (*registry, error) {
	binary, err := registryBinary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(registryPass), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(registryUser+":"+string(hash)+"\n"), 0o600); err != nil {
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
	r := &registry{host: addr}
	r.cmd = exec.Command(binary, "serve", configPath)
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
	r.stop()
	return nil, fmt.Errorf("the registry did not answer on %s: %s", addr, r.log.String())
}

func (r *registry) stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
}
