package gce

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// IPv6 as an internal passthrough load balancer uses it (GKE's dual-stack
// ILB): a dual-stack (IPV4_IPV6) subnetwork has an IPv6 /64, and
// forwarding rules and INTERNAL addresses with ipVersion IPV6 take /96
// blocks of it. The fake stores and keys usedIPs by netip's canonical
// form and renders as GCE reports: every group written out.

// ipv6RangeBits is the size of the block an IPv6 rule or address holds.
const ipv6RangeBits = 96

// ulaBase and docBase are where default subnetwork prefixes come from:
// GCE's ULA space fd20::/20, and the IPv6 documentation range (RFC 3849)
// for external ones, which no real network routes.
var (
	ulaBase = netip.MustParseAddr("fd20::")
	docBase = netip.MustParseAddr("2001:db8::")
)

// subnetIPv6 validates a subnetwork's IPv6 settings, filling defaults in
// sn, and returns its IPv6 /64 (the zero Prefix for IPV4_ONLY).
func subnetIPv6(sn *Subnetwork) (netip.Prefix, error) {
	switch sn.StackType {
	case "IPV4_ONLY":
		if sn.IPv6AccessType != "" || sn.InternalIPv6Prefix != "" || sn.ExternalIPv6Prefix != "" {
			return netip.Prefix{}, fmt.Errorf("subnetwork %s has IPv6 settings but stackType IPV4_ONLY", sn.Name)
		}
		return netip.Prefix{}, nil
	case "IPV4_IPV6":
	default:
		return netip.Prefix{}, fmt.Errorf("subnetwork %s: unknown stackType %q", sn.Name, sn.StackType)
	}
	if sn.IPv6AccessType == "" {
		sn.IPv6AccessType = "INTERNAL"
		if sn.ExternalIPv6Prefix != "" && sn.InternalIPv6Prefix == "" {
			sn.IPv6AccessType = "EXTERNAL"
		}
	}
	var field *string
	base := ulaBase
	switch sn.IPv6AccessType {
	case "INTERNAL":
		field = &sn.InternalIPv6Prefix
	case "EXTERNAL":
		field, base = &sn.ExternalIPv6Prefix, docBase
	default:
		return netip.Prefix{}, fmt.Errorf("subnetwork %s: unknown ipv6AccessType %q", sn.Name, sn.IPv6AccessType)
	}
	if *field == "" {
		// Bits 20..63 (ULA) or 32..63 (documentation) from the id: distinct
		// subnetworks get distinct ranges.
		b := base.As16()
		v := binary.BigEndian.Uint64(b[:8]) | sn.ID&(1<<44-1)
		if base == docBase {
			v = binary.BigEndian.Uint64(b[:8]) | sn.ID&(1<<32-1)
		}
		binary.BigEndian.PutUint64(b[:8], v)
		*field = netip.PrefixFrom(netip.AddrFrom16(b), 64).String()
	}
	p, err := netip.ParsePrefix(*field)
	if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p.Bits() != 64 || p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("subnetwork %s: IPv6 prefix %q is not an IPv6 /64", sn.Name, *field)
	}
	return p, nil
}

// expandIPv6 writes an IPv6 address as GCE reports forwarding rules' and
// addresses': all eight groups, without leading zeros, zeros as "0".
func expandIPv6(a netip.Addr) string {
	b := a.As16()
	groups := make([]string, 8)
	for k := range groups {
		groups[k] = strconv.FormatUint(uint64(binary.BigEndian.Uint16(b[2*k:])), 16)
	}
	return strings.Join(groups, ":")
}

// displayIP renders a stored (canonical) IPv6 address in GCE's form, with
// the /96 for forwarding rules; anything else is returned as is.
func displayIP(stored string, withRange bool) string {
	a, err := netip.ParseAddr(stored)
	if err != nil || !a.Is6() {
		return stored
	}
	if withRange {
		return expandIPv6(a) + "/" + strconv.Itoa(ipv6RangeBits)
	}
	return expandIPv6(a)
}

// parseRuleIP reads a forwarding rule's literal IPAddress: an address or,
// as GCE reports IPv6 ones, an IPv6 address with its /96. literal is
// false for anything else (an Address's name or URL); msg says why a
// range was refused.
func parseRuleIP(s string) (ip netip.Addr, literal bool, msg string) {
	if p, err := netip.ParsePrefix(s); err == nil {
		if !p.Addr().Is6() || p.Bits() != ipv6RangeBits {
			return netip.Addr{}, true, "An address range must be an IPv6 /96."
		}
		return p.Addr(), true, ""
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a, true, ""
	}
	return netip.Addr{}, false, ""
}

// ipKey is an IPv6 address's usedIPs key (its canonical form), "" when
// it is not one.
func ipKey(v6 string) string {
	a, err := netip.ParseAddr(v6)
	if err != nil || !a.Is6() {
		return ""
	}
	return a.String()
}

// familyMismatch is the message for an address of the wrong IP version.
func familyMismatch(v6 bool) string {
	if v6 {
		return "An IPV6 forwarding rule needs an IPv6 address."
	}
	return "An IPv6 address needs ipVersion IPV6."
}

// checkIPv6Subnet is the refusal for an IPv6 rule or address in a
// subnetwork without an IPv6 range.
func (s *Server) checkIPv6Subnet(sn *subnetState) (int, any) {
	if sn.ipv6.IsValid() {
		return 0, nil
	}
	return errInvalidField("resource.subnetwork", s.subnetPath(sn),
		fmt.Sprintf("Subnetwork '%s' has no IPv6 range; its stackType must be IPV4_IPV6.", sn.Name))
}

// ipv6RangeProblem says why a is not a /96 the subnetwork can give, ""
// when it is one. The first /96 is not given out, as .0 and .1 of IPv4
// ranges are not.
func ipv6RangeProblem(sn *subnetState, a netip.Addr) string {
	b := a.As16()
	switch {
	case !sn.ipv6.Contains(a):
		return fmt.Sprintf("The address is not in the IPv6 range %s of subnetwork '%s'.", sn.ipv6, sn.Name)
	case binary.BigEndian.Uint32(b[12:]) != 0:
		return "The address must start a /96 range."
	case binary.BigEndian.Uint32(b[8:12]) == 0:
		return fmt.Sprintf("The first /96 of %s is reserved.", sn.ipv6)
	}
	return ""
}

// allocIPv6Locked takes the next free /96 of a dual-stack subnetwork for
// holder, skipping the first.
func (s *Server) allocIPv6Locked(sn *subnetState, holder string) (string, bool) {
	b := sn.ipv6.Addr().As16()
	for k := uint32(1); k != 0; k++ {
		binary.BigEndian.PutUint32(b[8:12], k)
		if ip := netip.AddrFrom16(b).String(); s.usedIPs[ip] == "" {
			s.usedIPs[ip] = holder
			return ip, true
		}
	}
	return "", false
}

// checkRangeFamilies refuses a firewall mixing IPv4 and IPv6 ranges, as
// GCE does: each list is of one family, and both lists of the same.
func checkRangeFamilies(f *Firewall) (int, any) {
	fams := map[string]string{}
	for _, list := range []struct {
		name   string
		ranges []string
	}{{"sourceRanges", f.SourceRanges}, {"destinationRanges", f.DestinationRanges}} {
		for k, r := range list.ranges {
			fam := rangeFamily(r)
			if first, ok := fams[list.name]; ok && first != fam {
				return errInvalidField(fmt.Sprintf("resource.%s[%d]", list.name, k), r,
					fmt.Sprintf("A firewall's %s cannot mix IPv4 and IPv6 ranges.", list.name))
			}
			fams[list.name] = fam
		}
	}
	if src, dst := fams["sourceRanges"], fams["destinationRanges"]; src != "" && dst != "" && src != dst {
		return errInvalidField("resource.destinationRanges", strings.Join(f.DestinationRanges, ","),
			fmt.Sprintf("The destination ranges are %s but the source ranges %s: a firewall cannot mix IPv4 and IPv6.", dst, src))
	}
	return 0, nil
}

// rangeFamily is "IPv4" or "IPv6" for a range already validated.
func rangeFamily(r string) string {
	a, err := netip.ParseAddr(r)
	if p, perr := netip.ParsePrefix(r); perr == nil {
		a, err = p.Addr(), nil
	}
	if err == nil && a.Is6() && !a.Is4In6() {
		return "IPv6"
	}
	return "IPv4"
}

// anyRange is the default range of the family other ranges of a firewall
// use: 0.0.0.0/0, or ::/0 beside IPv6 ranges.
func anyRange(others []string) string {
	if len(others) > 0 && rangeFamily(others[0]) == "IPv6" {
		return "::/0"
	}
	return "0.0.0.0/0"
}
