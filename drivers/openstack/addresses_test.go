package openstack

import (
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
)

func addr(t v1.NodeAddressType, a string) v1.NodeAddress { return v1.NodeAddress{Type: t, Address: a} }

func novaAddrs(m map[string][][2]string) map[string]any {
	out := map[string]any{}
	for network, list := range m {
		var l []any
		for _, a := range list {
			l = append(l, map[string]any{"addr": a[0], "OS-EXT-IPS:type": a[1], "version": 4.0})
		}
		out[network] = l
	}
	return out
}

// The order openstack-cloud-controller-manager gives (its nodeAddresses):
// a switch must not reorder a Node's addresses, since the first
// InternalIP is what kubelet and many tools take.
func TestNodeAddressesInUpstreamOrder(t *testing.T) {
	s := &servers.Server{
		AccessIPv4: "203.0.113.7",
		Metadata:   map[string]string{"hostname": "node-a.example"},
		Addresses: novaAddrs(map[string][][2]string{
			"zeta":   {{"10.1.0.5", "fixed"}},
			"alpha":  {{"10.0.0.5", "fixed"}, {"198.51.100.9", "floating"}},
			"public": {{"192.0.2.4", "fixed"}},
		}),
	}
	ps := []trunkPort{
		{Port: ports.Port{Status: "ACTIVE", FixedIPs: []ports.IP{{IPAddress: "10.0.0.5"}}}},
		{Port: ports.Port{Status: "DOWN", FixedIPs: []ports.IP{{IPAddress: "10.9.9.9"}}}},
		{Port: ports.Port{Status: "ACTIVE", FixedIPs: []ports.IP{{IPAddress: "192.0.2.4"}}}},
	}
	got := nodeAddresses(s, ps, nil, NetworkingConfig{PublicNetworkNames: []string{"public"}})
	want := []v1.NodeAddress{
		addr(v1.NodeInternalIP, "10.0.0.5"),
		// 192.0.2.4 was an InternalIP from its port; on a public network
		// it is taken out and comes back as an ExternalIP, in network order.
		addr(v1.NodeExternalIP, "203.0.113.7"),
		addr(v1.NodeHostName, "node-a.example"),
		addr(v1.NodeExternalIP, "198.51.100.9"),
		addr(v1.NodeExternalIP, "192.0.2.4"),
		addr(v1.NodeInternalIP, "10.1.0.5"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("addresses\n got %v\nwant %v", got, want)
	}
}

// With internal networks named, a fixed address on another network is
// no Node's, even one its port gave.
func TestNodeAddressesOnlyInternalNetworks(t *testing.T) {
	s := &servers.Server{Addresses: novaAddrs(map[string][][2]string{
		"cluster": {{"10.0.0.5", "fixed"}},
		"storage": {{"172.16.0.5", "fixed"}},
	})}
	ps := []trunkPort{{Port: ports.Port{Status: "ACTIVE", FixedIPs: []ports.IP{{IPAddress: "172.16.0.5"}, {IPAddress: "10.0.0.5"}}}}}
	got := nodeAddresses(s, ps, nil, NetworkingConfig{InternalNetworkNames: []string{"cluster"}})
	want := []v1.NodeAddress{addr(v1.NodeInternalIP, "10.0.0.5")}
	if !slices.Equal(got, want) {
		t.Errorf("addresses %v, want %v", got, want)
	}
}

func TestNodeAddressesIPv6DisabledAndSorted(t *testing.T) {
	s := &servers.Server{
		AccessIPv6: "2001:db8::1",
		Addresses: novaAddrs(map[string][][2]string{
			"net": {{"10.0.0.9", "fixed"}, {"192.168.1.3", "fixed"}, {"2001:db8::5", "fixed"}, {"192.168.1.2", "fixed"}},
		}),
	}
	got := nodeAddresses(s, nil, nil, NetworkingConfig{IPv6SupportDisabled: true, AddressSortOrder: "192.168.0.0/16, 10.0.0.0/8"})
	want := []v1.NodeAddress{
		addr(v1.NodeInternalIP, "192.168.1.2"),
		addr(v1.NodeInternalIP, "192.168.1.3"),
		addr(v1.NodeInternalIP, "10.0.0.9"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("addresses %v, want %v", got, want)
	}
}

func TestSanitizeLabel(t *testing.T) {
	for in, want := range map[string]string{
		"nova":            "nova",
		"az 1 / rack#3":   "az-1-rack-3",
		"-edge.":          "edge",
		"zone:with:colon": "zone-with-colon",
	} {
		if got := sanitizeLabel(in); got != want {
			t.Errorf("sanitizeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestServerID(t *testing.T) {
	c := &Cloud{cfg: Config{Region: "RegionOne"}}
	for pid, want := range map[string]string{
		"openstack:///5d1e":          "5d1e",
		"openstack://RegionOne/5d1e": "5d1e",
	} {
		if got, err := c.serverID(pid); err != nil || got != want {
			t.Errorf("serverID(%q) = %q, %v; want %q", pid, got, err, want)
		}
	}
	for _, bad := range []string{"openstack://RegionTwo/5d1e", "aws:///i-1", "openstack://5d1e", "5d1e"} {
		if _, err := c.serverID(bad); err == nil {
			t.Errorf("serverID(%q) accepted", bad)
		}
	}
	if got := c.ProviderID("5d1e"); got != "openstack:///5d1e" {
		t.Errorf("ProviderID = %q", got)
	}
	c.cfg.RegionalProviderID = true
	if got := c.ProviderID("5d1e"); got != "openstack://RegionOne/5d1e" {
		t.Errorf("regional ProviderID = %q", got)
	}
}
