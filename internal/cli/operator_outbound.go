//go:build !calaf_offline

package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/internal/outbound"
)

// outboundFlags are the operator's outbound policy: where requests made on a user's
// behalf (notifications) may go, and how failed ones are retried.
type outboundFlags struct {
	allow, deny  []string
	clusterAllow []string
}

func registerOutboundFlags(cmd *cobra.Command, opts *operator.Options, f *outboundFlags) {
	cmd.Flags().StringSliceVar(&f.allow, "outbound-allow", nil, "networks (CIDRs or addresses, comma-separated or repeated) that notifications may reach besides public addresses, e.g. an NFVO's private network; a refused network more specific than an allowed one stays refused")
	cmd.Flags().StringSliceVar(&f.deny, "outbound-deny", nil, "networks notifications may not reach, besides loopback, link-local, metadata, private and the cluster's discovered networks: e.g. the pod range of a CNI that does not set the nodes' podCIDRs")
	cmd.Flags().BoolVar(&opts.OutboundDiscover, "outbound-discover", opts.OutboundDiscover, "refuse notifications the cluster's networks too, read every minute: ServiceCIDRs, the nodes' pod ranges and addresses (needs list on nodes and servicecidrs)")
	cmd.Flags().DurationVar(&opts.NotifyBackoff.Base, "notification-backoff", opts.NotifyBackoff.Base, "wait before a failed notification is sent again; it doubles with each failure in a row")
	cmd.Flags().DurationVar(&opts.NotifyBackoff.Max, "notification-backoff-max", opts.NotifyBackoff.Max, "longest wait before a failed notification is sent again")
	cmd.Flags().StringSliceVar(&f.clusterAllow, "target-cluster-allow", nil, "networks (CIDRs or addresses) the API servers of the clusters Services deploy into (spec.kubeConfig) may be on besides public addresses, e.g. the sites' private network; the operator's own cluster's networks and --outbound-deny stay refused unless named as specifically")
	cmd.Flags().IntVar(&opts.MaxTargetClusters, "max-target-clusters", 64, "target clusters (kubeconfig identities) connected at once; a Service that needs one more while all are in use waits (ClusterUnreachable)")
}

// apply parses the networks into opts.
func (f outboundFlags) apply(opts *operator.Options) error {
	var err error
	if opts.OutboundAllow, err = outbound.ParsePrefixes(f.allow); err != nil {
		return usageError{fmt.Errorf("--outbound-allow: %w", err)}
	}
	if opts.OutboundDeny, err = outbound.ParsePrefixes(f.deny); err != nil {
		return usageError{fmt.Errorf("--outbound-deny: %w", err)}
	}
	if opts.TargetClusterAllow, err = outbound.ParsePrefixes(f.clusterAllow); err != nil {
		return usageError{fmt.Errorf("--target-cluster-allow: %w", err)}
	}
	if opts.NotifyBackoff.Base <= 0 || opts.NotifyBackoff.Max < opts.NotifyBackoff.Base {
		return usageError{fmt.Errorf("--notification-backoff must be positive and at most --notification-backoff-max")}
	}
	return nil
}
