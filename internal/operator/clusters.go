package operator

import (
	"context"
	"net/netip"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/controller"
	"calaf.io/calaf/internal/clusters"
	"calaf.io/calaf/internal/outbound"
	"calaf.io/calaf/lifecycle"
)

// newClusters makes the connections to the clusters Services deploy into (spec.kubeConfig):
// their caches hold the objects of Services, trimmed as the operator's own cache does;
// their changes and their recoveries reconcile the Services through the reconciler. The
// API servers may be where the target-cluster policy allows: the networks the admin names
// (--target-cluster-allow) and public addresses, never the operator's own cluster's
// networks or what --outbound-deny refuses.
func newClusters(opts Options, st *stages, reconciler *controller.ServiceReconciler, log logr.Logger) (*clusters.Pool, error) {
	managed, err := labels.NewRequirement(v1alpha1.LabelService, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	return clusters.New(clusters.Options{
		Scheme:        NewScheme(),
		Policy:        targetClusterPolicy(st.outbound, opts.TargetClusterAllow),
		Selector:      cache.Options{DefaultLabelSelector: labels.NewSelector().Add(*managed), DefaultTransform: trimForCache},
		Owns:          controller.OwnsInTarget,
		Changed:       reconciler.TargetChanged,
		HealthChanged: reconciler.TargetHealthChanged,
		MaxClusters:   opts.MaxTargetClusters,
		Log:           log.WithName("clusters"),
	}), nil
}

// targetClusterPolicy is the policy of the addresses target clusters' API servers may be
// at: the outbound policy's refused networks (the cluster's own, --outbound-deny, and
// the built-in ones), lifted only by the target clusters' own allowlist.
func targetClusterPolicy(c *outbound.Client, allow []netip.Prefix) func() outbound.Policy {
	return func() outbound.Policy {
		policy := c.Policy()
		policy.Allow = allow
		return policy
	}
}

// targetPods is the lifecycle's client of the pods of a Service with spec.kubeConfig.
func targetPods(reconciler *controller.ServiceReconciler) func(ctx context.Context, svc *v1alpha1.Service) (lifecycle.PodClient, error) {
	return func(ctx context.Context, svc *v1alpha1.Service) (lifecycle.PodClient, error) {
		return reconciler.TargetClient(ctx, svc)
	}
}
