package operator

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"calaf.io/calaf/internal/outbound"
)

// The outbound policy refuses the cluster's service range, every node's pod range and
// addresses, the admin's extra networks; a source that cannot be read later keeps the
// networks it gave.
func TestClusterNetworksRefused(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}, Spec: corev1.NodeSpec{PodCIDRs: []string{"10.244.1.0/24"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "203.0.113.10"}, {Type: corev1.NodeHostName, Address: "worker-1"}}}}
	cidr := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12"}}}
	failing := false
	reader := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(node, cidr).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if failing {
				return errors.New("forbidden")
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	opts := Options{OutboundAllow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, OutboundDeny: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}}
	c := outbound.New(outbound.Options{})
	watch := &networkWatch{reader: reader, client: c, opts: opts, log: logr.Discard()}
	check := func(when string) {
		policy := c.Policy()
		for address, want := range map[string]string{
			"10.96.0.1:443":     "the cluster's service range (ServiceCIDR kubernetes)",
			"10.244.1.7:8080":   "the pod range of node worker-1",
			"203.0.113.10:2379": "node worker-1 (InternalIP)",
			"198.51.100.9:80":   "refused by the admin (--outbound-deny)",
			"10.20.0.5:443":     "",
		} {
			err := policy.Check(netip.MustParseAddrPort(address))
			var refused *outbound.RefusedError
			switch {
			case want == "" && err != nil:
				t.Errorf("%s: %s: %v, want allowed", when, address, err)
			case want != "" && (!errors.As(err, &refused) || refused.Network.Name != want):
				t.Errorf("%s: %s: %v, want refused as %s", when, address, err, want)
			}
		}
	}
	watch.refresh(context.Background())
	check("read")
	failing = true
	watch.refresh(context.Background())
	check("not readable any more")
}
