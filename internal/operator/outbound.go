package operator

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/internal/outbound"
)

// networkRefresh is how often the cluster's networks are read again.
const networkRefresh = time.Minute

// newOutbound makes the process's outbound client: the admin's policy, and the networks
// of the cluster when they can be read (see clusterNetworks).
func newOutbound(ctx context.Context, reader client.Reader, opts Options, log logr.Logger) *outbound.Client {
	// An endpoint's circuit stays open no longer than a notification waits.
	c := outbound.New(outbound.Options{Policy: outbound.Policy{Allow: opts.OutboundAllow, Deny: denied(opts.OutboundDeny)},
		CircuitBackoff: opts.NotifyBackoff})
	// ConfigMap mode alone has no subscriptions (no notification to send) and no right
	// to read the cluster's networks.
	if opts.OutboundDiscover && opts.servesCRDs() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		(&networkWatch{reader: reader, client: c, opts: opts, log: log}).refresh(ctx)
	}
	return c
}

// denied names the admin's refused networks.
func denied(prefixes []netip.Prefix) []outbound.Network {
	networks := make([]outbound.Network, 0, len(prefixes))
	for _, p := range prefixes {
		networks = append(networks, outbound.Network{Prefix: p, Name: "refused by the admin (--outbound-deny)"})
	}
	return networks
}

// networkWatch keeps the outbound policy's refused networks up to date with the cluster's:
// nodes join, ServiceCIDRs are added.
type networkWatch struct {
	reader client.Reader
	client *outbound.Client
	opts   Options
	log    logr.Logger
	failed map[string]bool
	// last are the networks each source gave the last time it could be read.
	last map[string][]outbound.Network
}

// Start reads the cluster's networks every minute until ctx ends.
func (w *networkWatch) Start(ctx context.Context) error {
	ticker := time.NewTicker(networkRefresh)
	defer ticker.Stop()
	for {
		w.refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// refresh sets the policy: the admin's networks and the cluster's, as far as they can
// be read (a source that cannot be read keeps the networks it gave last, and says so
// once).
func (w *networkWatch) refresh(ctx context.Context) {
	if w.failed == nil {
		w.failed, w.last = map[string]bool{}, map[string][]outbound.Network{}
	}
	networks := denied(w.opts.OutboundDeny)
	for _, source := range []struct {
		name string
		read func(context.Context, client.Reader) ([]outbound.Network, error)
	}{{"ServiceCIDRs", serviceRanges}, {"Nodes", nodeNetworks}, {"interfaces", ownAddresses}} {
		found, err := source.read(ctx, w.reader)
		if err != nil && !w.failed[source.name] {
			w.log.Info("the outbound policy cannot read the cluster's networks from "+source.name+"; name them with --outbound-deny", "error", err.Error())
		}
		w.failed[source.name] = err != nil
		if err == nil {
			w.last[source.name] = found
		}
		networks = append(networks, w.last[source.name]...)
	}
	w.client.SetPolicy(outbound.Policy{Allow: w.opts.OutboundAllow, Deny: networks})
}

// serviceRanges are the cluster's service ranges (ServiceCIDRs).
func serviceRanges(ctx context.Context, reader client.Reader) ([]outbound.Network, error) {
	list := &networkingv1.ServiceCIDRList{}
	if err := reader.List(ctx, list); err != nil {
		return nil, err
	}
	var networks []outbound.Network
	for _, item := range list.Items {
		networks = appendPrefixes(networks, item.Spec.CIDRs, "the cluster's service range (ServiceCIDR "+item.Name+")")
	}
	return networks, nil
}

// nodeNetworks are the nodes' pod ranges and addresses.
func nodeNetworks(ctx context.Context, reader client.Reader) ([]outbound.Network, error) {
	list := &corev1.NodeList{}
	if err := reader.List(ctx, list); err != nil {
		return nil, err
	}
	var networks []outbound.Network
	for _, node := range list.Items {
		networks = appendPrefixes(networks, node.Spec.PodCIDRs, "the pod range of node "+node.Name)
		for _, address := range node.Status.Addresses {
			if address.Type == corev1.NodeInternalIP || address.Type == corev1.NodeExternalIP {
				networks = appendPrefixes(networks, []string{address.Address}, fmt.Sprintf("node %s (%s)", node.Name, address.Type))
			}
		}
	}
	return networks, nil
}

// ownAddresses are the addresses of this process's network interfaces: its pod's, or
// the node's on the host network.
func ownAddresses(context.Context, client.Reader) ([]outbound.Network, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var networks []outbound.Network
	for _, a := range addrs {
		if prefix, ok := a.(*net.IPNet); ok {
			networks = appendPrefixes(networks, []string{prefix.IP.String()}, "the operator's own address")
		}
	}
	return networks, nil
}

func appendPrefixes(networks []outbound.Network, values []string, name string) []outbound.Network {
	for _, value := range values {
		prefixes, err := outbound.ParsePrefixes([]string{value})
		if err == nil {
			for _, p := range prefixes {
				networks = append(networks, outbound.Network{Prefix: p, Name: name})
			}
		}
	}
	return networks
}
