package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// httpsCatalog serves a package as a CSAR over HTTPS with basic auth (vendor /
// catalog-password), and returns the server URL, its CA and the CSAR.
func httpsCatalog(t *testing.T, files map[string]string) (string, []byte, []byte) {
	t.Helper()
	dir := t.TempDir()
	for path, content := range files {
		if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer pkg.Close()
	csar, err := source.PackCSAR(pkg)
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, password, ok := r.BasicAuth(); !ok || user != "vendor" || password != "catalog-password" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Write(csar)
	}))
	t.Cleanup(server.Close)
	return server.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}), csar
}
