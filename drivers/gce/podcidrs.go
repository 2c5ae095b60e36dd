package gce

import (
	"net/netip"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/polyccm/polyccm/core/instances"
)

var _ instances.PodCIDRSource = (*Cloud)(nil)

// ipv6PodBits is the size of a node's IPv6 pod range: cloud-provider-gcp
// (GetIPV6Address) takes the first /112 of the /96 GCE gives the
// interface.
const ipv6PodBits = 112

// PodCIDRHint says what gives a GCE instance its pod ranges.
func (c *Cloud) PodCIDRHint() string {
	switch c.cfg.StackType {
	case StackDualStack:
		return "an alias IP range and an IPv6 address on the instance's nic0 (drivers.gce.stackType is IPV4_IPV6)"
	case StackIPv6:
		return "an IPv6 address on the instance's nic0 (drivers.gce.stackType is IPV6)"
	}
	return "an alias IP range on the instance's nic0 (a VPC-native instance)"
}

// podCIDRs are the instance's pod ranges as cloud-provider-gcp's cloud
// CIDR allocator reads them (updateCIDRAllocation, multi-networking off):
// from the default interface, its first alias IP range and the /112 of
// its IPv6 address, ordered by the cluster's stack type; nil unless the
// stack's every family has one.
func (c *Cloud) podCIDRs(in *computepb.Instance) []string {
	nic := defaultNIC(in.GetNetworkInterfaces())
	if nic == nil {
		return nil
	}
	v4 := ""
	if ar := nic.GetAliasIpRanges(); len(ar) > 0 {
		v4 = ar[0].GetIpCidrRange()
	}
	v6 := ""
	if a, err := netip.ParseAddr(nicIPv6(nic)); err == nil && a.Is6() && !a.Is4In6() {
		v6 = netip.PrefixFrom(a, ipv6PodBits).Masked().String()
	}
	switch c.cfg.StackType {
	case StackDualStack:
		if v4 != "" && v6 != "" {
			return []string{v4, v6}
		}
	case StackIPv6:
		if v6 != "" {
			return []string{v6}
		}
	default:
		if v4 != "" {
			return []string{v4}
		}
	}
	return nil
}

// defaultNIC is the interface named nic0 (the API's default), else the
// first.
func defaultNIC(nics []*computepb.NetworkInterface) *computepb.NetworkInterface {
	for _, n := range nics {
		if n.GetName() == "nic0" {
			return n
		}
	}
	if len(nics) > 0 {
		return nics[0]
	}
	return nil
}

// nicIPv6 is an interface's IPv6 address as cloud-provider-gcp reads it
// (getIPV6AddressFromInterface): the internal one, else the last external
// one of an EXTERNAL interface; "" for none.
func nicIPv6(ni *computepb.NetworkInterface) string {
	v6 := ni.GetIpv6Address()
	if v6 == "" && ni.GetIpv6AccessType() == "EXTERNAL" {
		for _, ac := range ni.GetIpv6AccessConfigs() {
			v6 = ac.GetExternalIpv6()
		}
	}
	return v6
}
