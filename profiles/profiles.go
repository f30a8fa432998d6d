// Package profiles embeds the TOSCA profiles that ship with Calaf and makes them importable
// by service templates under stable URLs, with no copy in each package and no network:
//
//	imports:
//	- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
//
// The content is registered as Puccini "internal:" URLs; Imports maps each public URL to
// its internal one for the compiler.
package profiles

import (
	"context"
	"embed"
	"io/fs"
	"strings"
	"sync"

	"github.com/tliron/exturl"
)

// publicRoot prefixes the public import URLs of every embedded profile file.
const publicRoot = "https://calaf.io/profiles/"

// KubernetesURL is the documented import of the Calaf Kubernetes profile.
const KubernetesURL = publicRoot + KubernetesEntry

// KubernetesEntry is the path in FS of the Calaf Kubernetes profile's entry.
const KubernetesEntry = "kubernetes/1.0/profile.yaml"

// SOL001 types: Calaf's minimal edition of the ETSI NFV-SOL 001 type files (docs/etsi.md),
// importable by these URLs or carried in a package under the same file names.
const (
	SOL001CommonURL = publicRoot + sol001Dir + "etsi_nfv_sol001_common_types.yaml"
	SOL001VNFDURL   = publicRoot + sol001Dir + "etsi_nfv_sol001_vnfd_types.yaml"
	sol001Dir       = "etsi-nfv/sol001/1.0/"
)

// internalRoot prefixes the internal URLs of every embedded profile file.
const internalRoot = "/calaf/profiles/"

// The Calaf Kubernetes profile's test cases (kubernetes/1.0/tests) stay out of the binary.
//
//go:embed kubernetes/1.0/*.yaml kubernetes/1.0/js etsi-nfv
var content embed.FS

var register = sync.OnceValue(func() error {
	return exturl.ReadToInternalURLsFromFS(context.Background(), content, ".", func(path string) (string, bool) {
		return internalRoot + path, true
	})
})

// Imports registers the embedded profiles (once per process) and returns the map from
// each public import URL to the internal URL that serves it.
func Imports() (map[string]string, error) {
	if err := register(); err != nil {
		return nil, err
	}
	return map[string]string{
		KubernetesURL:   "internal:" + internalRoot + "kubernetes/1.0/profile.yaml",
		SOL001CommonURL: "internal:" + internalRoot + sol001Dir + "etsi_nfv_sol001_common_types.yaml",
		SOL001VNFDURL:   "internal:" + internalRoot + sol001Dir + "etsi_nfv_sol001_vnfd_types.yaml",
	}, nil
}

// FS returns the embedded profile files, e.g. for `calaf profile export`.
func FS() fs.FS {
	return content
}

// IsInternal tells whether a URL is served by an embedded profile (Calaf's or Puccini's).
func IsInternal(url string) bool {
	return strings.HasPrefix(url, "internal:")
}

// Public rewrites the internal URLs of embedded profile files in text (a diagnostic) to
// their public spelling, "https://calaf.io/profiles/...", the one templates import.
func Public(text string) string {
	return strings.ReplaceAll(text, "internal:"+internalRoot, publicRoot)
}

// IsProfileURL tells whether text names a file of an embedded Calaf profile, by its public
// or its internal URL.
func IsProfileURL(text string) bool {
	return strings.Contains(text, publicRoot) || strings.Contains(text, "internal:"+internalRoot)
}

// EmbeddedPath returns the path in FS of the embedded file a public import URL names.
func EmbeddedPath(url string) (string, bool) {
	rel, ok := strings.CutPrefix(url, publicRoot)
	if !ok {
		return "", false
	}
	if _, err := fs.Stat(content, rel); err != nil {
		return "", false
	}
	return rel, true
}
