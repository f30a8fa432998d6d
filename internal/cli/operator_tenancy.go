//go:build !calaf_offline

package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	"calaf.io/calaf/internal/operator"
)

// registerTenancyFlags adds the flags of lockdown mode: the service account every Service
// acts as unless it names its own, and where the operator keeps its state then; and what
// a tenant's Service may publish of the Secrets it reads.
func registerTenancyFlags(cmd *cobra.Command, opts *operator.Options) {
	cmd.Flags().StringVar(&opts.DefaultServiceAccount, "default-service-account", "", "lockdown mode: a Service without spec.serviceAccountName acts as this service account of its own namespace (no Service acts with the operator's rights)")
	cmd.Flags().StringVar(&opts.StateNamespace, "state-namespace", "", "in lockdown mode, the operator's namespace, where it keeps the Services' compiled state (default: --leader-election-namespace)")
	cmd.Flags().BoolVar(&opts.RevealSecretOutputs, "reveal-secret-outputs", false, "publish the outputs derived from a Secret that a package marks calaf.io/publish-secret as they are, instead of redacted")
}

// checkTenancyFlags refuses a lockdown mode that cannot work: an invalid account name, or
// no namespace of its own for the state.
func checkTenancyFlags(opts *operator.Options) error {
	if opts.DefaultServiceAccount == "" {
		return nil
	}
	if errs := k8svalidation.IsDNS1123Subdomain(opts.DefaultServiceAccount); len(errs) > 0 {
		return usageError{fmt.Errorf("--default-service-account %q: %s", opts.DefaultServiceAccount, strings.Join(errs, "; "))}
	}
	if opts.StateNamespace == "" && opts.LeaderElectionNamespace == "" {
		return usageError{fmt.Errorf("--default-service-account needs --state-namespace (the operator's own namespace, for its state)")}
	}
	return nil
}
