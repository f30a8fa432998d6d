//go:build !calaf_offline

package cli

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/internal/outbound"
)

// nfvoFlags name the NFVO that grants occurrences (SOL003 direct mode) and how Calaf
// authenticates to it.
type nfvoFlags struct {
	url, tokenFile, clientID, clientSecretFile, tokenURL, caFile, vnfmURL string
}

func registerNFVOFlags(cmd *cobra.Command, f *nfvoFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.url, "nfvo-url", "", "apiRoot of the NFVO that grants the occurrences of VNF instances before they act (SOL003 direct mode; /grant/v1); empty: no grants asked")
	fl.StringVar(&f.tokenFile, "nfvo-token-file", "", "file holding a bearer token for the NFVO")
	fl.StringVar(&f.clientID, "nfvo-client-id", "", "OAuth 2.0 client id for the NFVO (client credentials, with --nfvo-client-secret-file and --nfvo-token-url)")
	fl.StringVar(&f.clientSecretFile, "nfvo-client-secret-file", "", "file holding the OAuth 2.0 client secret")
	fl.StringVar(&f.tokenURL, "nfvo-token-url", "", "the NFVO's OAuth 2.0 token endpoint")
	fl.StringVar(&f.caFile, "nfvo-ca-file", "", "PEM bundle the NFVO's certificate must chain to")
	fl.StringVar(&f.vnfmURL, "vnfm-url", "", "the URL of calaf nfv-api, for the links of grant requests")
}

// apply puts the NFVO into the operator's options.
func (f nfvoFlags) apply(opts *operator.Options) error {
	if f.url == "" {
		if f.tokenFile+f.clientID+f.clientSecretFile+f.tokenURL+f.caFile != "" {
			return usageError{errors.New("the --nfvo-* credential flags go with --nfvo-url")}
		}
		return nil
	}
	root, err := url.Parse(f.url)
	if err != nil || (root.Scheme != "https" && root.Scheme != "http") || root.Host == "" {
		return usageError{fmt.Errorf("--nfvo-url %q is not an http(s) URL", f.url)}
	}
	opts.NFVO, opts.VNFMRoot = root, strings.TrimSuffix(f.vnfmURL, "/")
	auth := &opts.NFVOAuth
	if f.caFile != "" {
		if auth.CA, err = os.ReadFile(f.caFile); err != nil {
			return err
		}
	}
	switch {
	case f.tokenFile != "" && f.clientID != "":
		return usageError{errors.New("give the NFVO a token or client credentials, not both")}
	case f.tokenFile != "":
		token, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return err
		}
		auth.Bearer = strings.TrimSpace(string(token))
	case f.clientID != "":
		if f.clientSecretFile == "" || f.tokenURL == "" {
			return usageError{errors.New("--nfvo-client-id needs --nfvo-client-secret-file and --nfvo-token-url")}
		}
		secret, err := os.ReadFile(f.clientSecretFile)
		if err != nil {
			return err
		}
		auth.OAuth2 = &outbound.ClientCredentials{TokenURL: f.tokenURL, ClientID: f.clientID, ClientSecret: strings.TrimSpace(string(secret))}
	}
	return nil
}
