package openstack

import (
	"bytes"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	v1 "k8s.io/api/core/v1"
)

// metadataHostname is the server metadata key whose value becomes the
// Node's Hostname address (upstream's TypeHostName).
const metadataHostname = "hostname"

// nodeAddresses gives a server's Node addresses in the order
// openstack-cloud-controller-manager gives them (instances_addresses.go),
// so a switch changes no Node's addresses: the fixed IPs of its ACTIVE
// ports (InternalIP), accessIPv4 and accessIPv6 (ExternalIP), the
// hostname metadata; then each network's addresses by network name:
// floating ones and those on a public network ExternalIP, the others
// InternalIP (only on the internal networks, when those are named);
// finally sorted by addressSortOrder when it is set. IPv6 is left out
// with ipv6SupportDisabled. A trunk's subports add their fixed IPs to
// their networks' addresses, as upstream does.
func nodeAddresses(s *servers.Server, ps []trunkPort, subports map[string][]string, o NetworkingConfig) []v1.NodeAddress {
	var addrs []v1.NodeAddress
	v6 := func(a string) bool { return net.ParseIP(a).To4() == nil }
	for _, p := range ps {
		if p.Status != "ACTIVE" {
			continue
		}
		for _, ip := range p.FixedIPs {
			if !v6(ip.IPAddress) || !o.IPv6SupportDisabled {
				addrs = addAddress(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip.IPAddress})
			}
		}
	}
	if s.AccessIPv4 != "" {
		addrs = addAddress(addrs, v1.NodeAddress{Type: v1.NodeExternalIP, Address: s.AccessIPv4})
	}
	if s.AccessIPv6 != "" && !o.IPv6SupportDisabled {
		addrs = addAddress(addrs, v1.NodeAddress{Type: v1.NodeExternalIP, Address: s.AccessIPv6})
	}
	if h := s.Metadata[metadataHostname]; h != "" {
		addrs = addAddress(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: h})
	}

	byNetwork := serverAddresses(s.Addresses)
	for network, ips := range subports {
		for _, ip := range ips {
			if !v6(ip) || !o.IPv6SupportDisabled {
				byNetwork[network] = append(byNetwork[network], networkAddress{ipType: "fixed", addr: ip})
			}
		}
	}
	for _, network := range slices.Sorted(maps.Keys(byNetwork)) {
		for _, a := range byNetwork[network] {
			var typ v1.NodeAddressType
			switch {
			case a.ipType == "floating":
				typ = v1.NodeExternalIP
			case slices.Contains(o.PublicNetworkNames, network):
				typ = v1.NodeExternalIP
				addrs = removeAddress(addrs, a.addr)
			case len(o.InternalNetworkNames) == 0 || slices.Contains(o.InternalNetworkNames, network):
				typ = v1.NodeInternalIP
			default:
				// Not an internal network: the address is no Node's.
				addrs = removeAddress(addrs, a.addr)
				continue
			}
			if !v6(a.addr) || !o.IPv6SupportDisabled {
				addrs = addAddress(addrs, v1.NodeAddress{Type: typ, Address: a.addr})
			}
		}
	}
	if o.AddressSortOrder != "" {
		sortAddresses(addrs, o.AddressSortOrder)
	}
	return addrs
}

type networkAddress struct{ ipType, addr string }

// serverAddresses reads Nova's addresses: network name -> [{addr,
// OS-EXT-IPS:type}].
func serverAddresses(m map[string]any) map[string][]networkAddress {
	out := map[string][]networkAddress{}
	for network, v := range m {
		list, _ := v.([]any)
		out[network] = []networkAddress{}
		for _, e := range list {
			obj, _ := e.(map[string]any)
			addr, _ := obj["addr"].(string)
			typ, _ := obj["OS-EXT-IPS:type"].(string)
			out[network] = append(out[network], networkAddress{ipType: typ, addr: addr})
		}
	}
	return out
}

// addAddress appends a unless the same type and address is there.
func addAddress(addrs []v1.NodeAddress, a v1.NodeAddress) []v1.NodeAddress {
	if slices.Contains(addrs, a) {
		return addrs
	}
	return append(addrs, a)
}

// removeAddress drops the address under any type.
func removeAddress(addrs []v1.NodeAddress, addr string) []v1.NodeAddress {
	return slices.DeleteFunc(addrs, func(a v1.NodeAddress) bool { return a.Address == addr })
}

// sortAddresses orders addresses by the first CIDR of order that holds
// them (earlier first, addresses in one CIDR by value), the others after,
// in their order: upstream's sortNodeAddresses.
func sortAddresses(addrs []v1.NodeAddress, order string) {
	var cidrs []*net.IPNet
	for _, s := range strings.Split(order, ",") {
		if _, n, err := net.ParseCIDR(strings.TrimSpace(s)); err == nil {
			cidrs = append(cidrs, n)
		}
	}
	priority := func(a string) int {
		ip := net.ParseIP(a)
		if ip == nil {
			return 0
		}
		for i, n := range cidrs {
			if n.Contains(ip) {
				return len(cidrs) - i
			}
		}
		return 0
	}
	sort.SliceStable(addrs, func(i, j int) bool {
		pi, pj := priority(addrs[i].Address), priority(addrs[j].Address)
		if pi > 0 && pi == pj {
			return bytes.Compare(net.ParseIP(addrs[i].Address), net.ParseIP(addrs[j].Address)) < 0
		}
		return pi > pj
	})
}
