// Package kubeconfig reads the kubeconfigs tenants hand the operator to reach other
// clusters (a Service's spec.kubeConfig, a SOL003 request's vimConnectionInfo) as the
// hostile input they may be: a kubeconfig that would run a command (exec plugins,
// auth-provider helpers), read a file of the operator's, send its requests through a
// proxy, or skip TLS verification is refused with a message saying why, and what is kept
// is only the API server's address and the credentials written in it.
package kubeconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// MaxBytes bounds a kubeconfig (a Secret holds at most 1 MiB anyway).
const MaxBytes = 1 << 20

// Target is a cluster a kubeconfig reaches: its API server and the credentials to use.
type Target struct {
	// Server is the API server's URL as the kubeconfig writes it (https only).
	Server string
	// Config holds the server and the credentials written in the kubeconfig, nothing
	// else: no command, no file, no proxy; TLS always verified.
	Config *rest.Config
	// Digest identifies the server and credentials (clients of equal digests are
	// interchangeable); it reveals nothing of them.
	Digest string
}

// RefusedError says why a kubeconfig cannot be used.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "kubeconfig refused: " + e.Reason }

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// IsRefused tells whether err says a kubeconfig cannot be used as it is.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// Parse reads a kubeconfig and returns the cluster of its current context (or of its only
// context), refusing what the operator must never do on a tenant's behalf.
func Parse(data []byte) (*Target, error) {
	if len(data) > MaxBytes {
		return nil, refused("larger than %d bytes", MaxBytes)
	}
	config, err := clientcmd.Load(data)
	if err != nil {
		return nil, refused("not a kubeconfig: %s", firstLine(err.Error()))
	}
	contextName, context, err := chosenContext(config)
	if err != nil {
		return nil, err
	}
	cluster, ok := config.Clusters[context.Cluster]
	if !ok {
		return nil, refused("context %q names cluster %q, which it does not define", contextName, context.Cluster)
	}
	user, ok := config.AuthInfos[context.AuthInfo]
	if !ok && context.AuthInfo != "" {
		return nil, refused("context %q names user %q, which it does not define", contextName, context.AuthInfo)
	}
	if user == nil {
		user = &clientcmdapi.AuthInfo{}
	}
	if err := checkCluster(context.Cluster, cluster); err != nil {
		return nil, err
	}
	if err := checkUser(context.AuthInfo, user); err != nil {
		return nil, err
	}
	restConfig := &rest.Config{
		Host:               cluster.Server,
		DisableCompression: cluster.DisableCompression,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: cluster.TLSServerName,
			CAData:     cluster.CertificateAuthorityData,
			CertData:   user.ClientCertificateData,
			KeyData:    user.ClientKeyData,
		},
		BearerToken: user.Token,
		Username:    user.Username,
		Password:    user.Password,
		Impersonate: rest.ImpersonationConfig{
			UserName: user.Impersonate, UID: user.ImpersonateUID, Groups: user.ImpersonateGroups, Extra: user.ImpersonateUserExtra,
		},
	}
	return &Target{Server: cluster.Server, Config: restConfig, Digest: digest(restConfig)}, nil
}

// chosenContext is the current context, or the only one when none is current.
func chosenContext(config *clientcmdapi.Config) (string, *clientcmdapi.Context, error) {
	name := config.CurrentContext
	if name == "" {
		if len(config.Contexts) != 1 {
			return "", nil, refused("no current-context, and %d contexts to choose from", len(config.Contexts))
		}
		for only := range config.Contexts {
			name = only
		}
	}
	context, ok := config.Contexts[name]
	if !ok {
		return "", nil, refused("current-context %q is not defined", name)
	}
	return name, context, nil
}

// checkCluster refuses a cluster entry that names a file, a proxy, skips TLS
// verification, or whose server is not an https URL.
func checkCluster(name string, c *clientcmdapi.Cluster) error {
	switch {
	case c.CertificateAuthority != "":
		return refused("cluster %q reads its CA from a file (certificate-authority): write it in certificate-authority-data", name)
	case c.InsecureSkipTLSVerify:
		return refused("cluster %q skips TLS verification (insecure-skip-tls-verify): give its CA in certificate-authority-data", name)
	case c.ProxyURL != "":
		return refused("cluster %q goes through a proxy (proxy-url): the operator connects to API servers directly", name)
	}
	u, err := url.Parse(c.Server)
	switch {
	case c.Server == "":
		return refused("cluster %q has no server", name)
	case err != nil:
		return refused("cluster %q: server is not a URL", name)
	case u.Scheme != "https":
		return refused("cluster %q: server %q is not an https URL", name, redactedURL(u))
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return refused("cluster %q: server %q must be https://host[:port][/path]", name, redactedURL(u))
	}
	return nil
}

// checkUser refuses credentials that run a command or read a file.
func checkUser(name string, u *clientcmdapi.AuthInfo) error {
	var found []string
	for _, field := range []struct {
		set  bool
		what string
	}{
		{u.Exec != nil, "runs a command (exec)"},
		{u.AuthProvider != nil, "uses an auth-provider helper"},
		{u.TokenFile != "", "reads its token from a file (tokenFile)"},
		{u.ClientCertificate != "", "reads its certificate from a file (client-certificate)"},
		{u.ClientKey != "", "reads its key from a file (client-key)"},
	} {
		if field.set {
			found = append(found, field.what)
		}
	}
	if len(found) > 0 {
		return refused("user %q %s: the operator runs no command and reads no file for a kubeconfig; write the credentials in it (token, client-certificate-data and client-key-data)",
			name, strings.Join(found, ", "))
	}
	if (len(u.ClientCertificateData) > 0) != (len(u.ClientKeyData) > 0) {
		return refused("user %q has a client certificate without its key, or a key without its certificate", name)
	}
	return nil
}

// digest identifies a config's server and credentials.
func digest(c *rest.Config) string {
	h := sha256.New()
	write := func(parts ...string) {
		for _, p := range parts {
			fmt.Fprintf(h, "%d:%s;", len(p), p)
		}
	}
	write(c.Host, c.TLSClientConfig.ServerName, string(c.TLSClientConfig.CAData), string(c.TLSClientConfig.CertData),
		string(c.TLSClientConfig.KeyData), c.BearerToken, c.Username, c.Password, fmt.Sprint(c.DisableCompression))
	write(c.Impersonate.UserName, c.Impersonate.UID)
	write(c.Impersonate.Groups...)
	keys := make([]string, 0, len(c.Impersonate.Extra))
	for key := range c.Impersonate.Extra {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		write(key)
		write(c.Impersonate.Extra[key]...)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// redactedURL writes a URL without its user information.
func redactedURL(u *url.URL) string {
	v := *u
	v.User = nil
	return v.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
