package digitalocean

import (
	"fmt"
	"net/netip"
)

// Addresses come from ranges reserved for documentation and benchmarking
// (198.18.0.0/15, 2001:db8::/32) and from 10.0.0.0/8, so nothing a test
// prints can be mistaken for, or routed to, a real host.

// allocIPv4 returns the n-th public and private address pair.
func allocIPv4(n int) (public, private string) {
	block := n / 250 // a /24 within 198.18.0.0/15; hosts .2 to .251
	public = fmt.Sprintf("198.%d.%d.%d", 18+block/256%2, block%256, n%250+2)
	h := n + 2 // skip the network and gateway addresses
	private = fmt.Sprintf("10.%d.%d.%d", 10+h/65536%200, h/256%256, h%256)
	return public, private
}

// allocIPv6 gives droplet id a /64 of its own.
func allocIPv6(id int) string {
	return fmt.Sprintf("2001:db8:%x:%x::2", id>>16&0xffff, id&0xffff)
}

// wireNetworksOf renders the droplet's addresses. A droplet still "new" has
// none yet, as on the real API.
func wireNetworksOf(d *Droplet) wireNetworks {
	n := wireNetworks{V4: []wireNetworkV4{}, V6: []wireNetworkV6{}}
	if d.Status == StatusNew {
		return n
	}
	if a, ok := parseAddr(d.PrivateIPv4); ok && a.Is4() {
		n.V4 = append(n.V4, wireNetworkV4{
			IPAddress: a.String(),
			Netmask:   "255.255.0.0",
			Gateway:   gateway(a, 16),
			Type:      "private",
		})
	}
	if a, ok := parseAddr(d.PublicIPv4); ok && a.Is4() {
		n.V4 = append(n.V4, wireNetworkV4{
			IPAddress: a.String(),
			Netmask:   "255.255.255.0",
			Gateway:   gateway(a, 24),
			Type:      "public",
		})
	}
	if a, ok := parseAddr(d.IPv6); ok && a.Is6() {
		n.V6 = append(n.V6, wireNetworkV6{
			IPAddress: a.String(),
			Netmask:   64,
			Gateway:   gateway(a, 64),
			Type:      "public",
		})
	}
	return n
}

func parseAddr(s string) (netip.Addr, bool) {
	if s == "" || s == NoIP {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s)
	return a, err == nil
}

// gateway is the first host of a's prefix of the given length.
func gateway(a netip.Addr, bits int) string {
	p, err := a.Prefix(bits)
	if err != nil {
		return ""
	}
	return p.Addr().Next().String()
}
