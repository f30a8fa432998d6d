package outbound

import (
	"fmt"
	"net/netip"
	"strings"
)

// Network is a range of addresses with what it is, for messages.
type Network struct {
	Prefix netip.Prefix
	// Name says what the range is ("loopback", "the cluster's pod range").
	Name string
}

// RefusedNetworks are the networks every request is refused unless the admin allows them
// (Policy.Allow): the host itself, link-local and the metadata services clouds serve
// there, private networks, and the ranges no endpoint lives in.
func RefusedNetworks() []Network {
	refused := []struct{ cidr, name string }{
		{"0.0.0.0/8", "this host (0.0.0.0/8)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local"},
		{"169.254.169.254/32", "cloud metadata service"},
		{"169.254.170.2/32", "cloud metadata service"},
		{"100.100.100.200/32", "cloud metadata service"},
		{"192.0.0.192/32", "cloud metadata service"},
		{"168.63.129.16/32", "cloud host service"},
		{"10.0.0.0/8", "private network"},
		{"172.16.0.0/12", "private network"},
		{"192.168.0.0/16", "private network"},
		{"100.64.0.0/10", "shared address space (carrier-grade NAT)"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"198.18.0.0/15", "benchmarking network"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"fe80::/10", "link-local"},
		{"fc00::/7", "unique local (private network)"},
		{"fd00:ec2::254/128", "cloud metadata service"},
		{"ff00::/8", "multicast"},
		{"100::/64", "discard-only"},
	}
	networks := make([]Network, 0, len(refused))
	for _, r := range refused {
		networks = append(networks, Network{Prefix: netip.MustParsePrefix(r.cidr), Name: r.name})
	}
	return networks
}

// Policy says which addresses requests may connect to. An address is refused when a
// refused network holds it (RefusedNetworks, then Deny) unless an allowed network that
// holds it is as specific (as long a prefix) as every refused one that does, or more:
// allowing 10.20.0.0/16 opens that private network but not the cluster's pod range
// 10.20.64.0/18 in it, and a metadata address opens only to an allowlist that names it
// alone (a /32).
type Policy struct {
	// Allow are the networks the admin lets requests reach.
	Allow []netip.Prefix
	// Deny are refused networks besides RefusedNetworks: the cluster's service and pod
	// ranges, the nodes' and the operator's own addresses.
	Deny []Network
}

// RefusedError says that a request would have connected to an address the policy refuses.
type RefusedError struct {
	// Address is the address connected to, after name resolution.
	Address netip.AddrPort
	// Network is the refused network that holds it.
	Network Network
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("connection to %s refused by the outbound policy: %s (%s)", e.Address, e.Network.Name, e.Network.Prefix)
}

// Check returns a *RefusedError when the policy refuses the address. An IPv6 address that
// carries an IPv4 one (IPv4-mapped, IPv4-compatible, NAT64, 6to4) is refused when either
// is.
func (p *Policy) Check(address netip.AddrPort) error {
	for _, addr := range forms(address.Addr()) {
		if network, refused := p.refuses(addr); refused {
			return &RefusedError{Address: address, Network: network}
		}
	}
	return nil
}

// refuses finds the most specific refused network holding addr and tells whether an
// allowed network as specific or more lifts it.
func (p *Policy) refuses(addr netip.Addr) (Network, bool) {
	var refusing Network
	for _, n := range append(RefusedNetworks(), p.Deny...) {
		if n.Prefix.Contains(addr) && (!refusing.Prefix.IsValid() || n.Prefix.Bits() > refusing.Prefix.Bits()) {
			refusing = n
		}
	}
	if !refusing.Prefix.IsValid() {
		return Network{}, false
	}
	for _, allowed := range p.Allow {
		if allowed.Contains(addr) && allowed.Bits() >= refusing.Prefix.Bits() {
			return Network{}, false
		}
	}
	return refusing, true
}

// embedding are the IPv6 ranges that carry an IPv4 address, and where it is.
var embedding = []struct {
	prefix netip.Prefix
	offset int
}{
	{netip.MustParsePrefix("::ffff:0:0/96"), 12}, // IPv4-mapped
	{netip.MustParsePrefix("::/96"), 12},         // IPv4-compatible (deprecated)
	{netip.MustParsePrefix("64:ff9b::/96"), 12},  // NAT64
	{netip.MustParsePrefix("64:ff9b:1::/48"), 12},
	{netip.MustParsePrefix("2002::/16"), 2}, // 6to4
}

// forms are the addresses a connection to addr reaches: itself (without a zone), and the
// IPv4 address an IPv6 one carries.
func forms(addr netip.Addr) []netip.Addr {
	addr = addr.WithZone("")
	out := []netip.Addr{addr}
	if !addr.Is6() {
		return out
	}
	bytes := addr.As16()
	for _, e := range embedding {
		if e.prefix.Contains(addr) {
			out = append(out, netip.AddrFrom4([4]byte(bytes[e.offset:e.offset+4])))
		}
	}
	return out
}

// ParsePrefixes parses a list of CIDRs or single addresses (a /32 or /128).
func ParsePrefixes(values []string) ([]netip.Prefix, error) {
	var prefixes []netip.Prefix
	for _, value := range values {
		value = strings.TrimSpace(value)
		if value == "" {
			continue
		}
		if !strings.Contains(value, "/") {
			addr, err := netip.ParseAddr(value)
			if err != nil {
				return nil, fmt.Errorf("%q is neither a CIDR nor an address", value)
			}
			prefixes = append(prefixes, netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()))
			continue
		}
		prefix, err := netip.ParsePrefix(value)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", value, err)
		}
		prefixes = append(prefixes, prefix.Masked())
	}
	return prefixes, nil
}
