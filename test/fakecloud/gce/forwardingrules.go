package gce

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Forwarding rules (regions/{region}/forwardingRules): insert, get, list,
// delete, setTarget. Two kinds are modelled:
//
//   - EXTERNAL, pointing at a target pool (target) or an EXTERNAL
//     backend service, with a portRange (the API reports "80" as
//     "80-80", and an unset range of a TCP/UDP rule as "1-65535"),
//     ports (backend services only) or allPorts;
//   - INTERNAL, pointing at an INTERNAL backend service, in a network
//     and subnetwork (the network's in the region by default), with up to
//     five ports or allPorts, and optionally allowGlobalAccess.
//
// IPAddress may be empty (an ephemeral address is assigned when the
// operation completes: from the documentation ranges for EXTERNAL rules,
// from the subnetwork for INTERNAL ones), an address, or a reserved
// Address's URL or name. An EXTERNAL rule's literal address must be a
// reserved address of the region. Two rules may share an address only if
// it is a static one and their protocols or ports do not overlap (INTERNAL
// ones only with purpose SHARED_LOADBALANCER_VIP); otherwise the operation
// fails with IP_IN_USE_BY_ANOTHER_RESOURCE.
//
// ipVersion IPV6 (GKE's dual-stack internal load balancer) is for INTERNAL
// rules in an IPV4_IPV6 subnetwork; target pools are IPv4 only, and the
// fake refuses IPv6 EXTERNAL rules. Such a rule holds a /96 of the
// subnetwork's IPv6 /64: the next free one but the first when IPAddress
// is empty, else the literal ("addr" or "addr/96") or an INTERNAL IPV6
// Address of the subnetwork. Its IPAddress is reported as GCE does, every
// group written out with its range: "fd20:1:2:3:0:1:0:0/96". An address
// of the other family than ipVersion is refused.

// ForwardingRules returns every forwarding rule, sorted by region and
// name.
func (s *Server) ForwardingRules() []ForwardingRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	return sortedRender(s.forwardingRules, s.baseLocked(), ForwardingRule.render)
}

// ForwardingRule returns one forwarding rule.
func (s *Server) ForwardingRule(region, name string) (ForwardingRule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	f := s.forwardingRules[s.regionalPath(region, "forwardingRules", name)]
	if f == nil {
		return ForwardingRule{}, false
	}
	return f.render(s.baseLocked()), true
}

var (
	ipProtocols = []string{"TCP", "UDP", "L3_DEFAULT", "ESP", "AH", "SCTP", "ICMP"}
	portSpecRE  = regexp.MustCompile(`^(\d+)(?:-(\d+))?$`)
)

// portSpan is an inclusive port range.
type portSpan struct{ lo, hi int }

func parseSpan(spec string) (portSpan, bool) {
	m := portSpecRE.FindStringSubmatch(spec)
	if m == nil {
		return portSpan{}, false
	}
	lo, _ := strconv.Atoi(m[1])
	hi := lo
	if m[2] != "" {
		hi, _ = strconv.Atoi(m[2])
	}
	if lo < 1 || hi > 65535 || lo > hi {
		return portSpan{}, false
	}
	return portSpan{lo, hi}, true
}

// spans is the ports a rule forwards.
func (f *ForwardingRule) spans() []portSpan {
	switch {
	case f.PortRange != "":
		sp, _ := parseSpan(f.PortRange)
		return []portSpan{sp}
	case len(f.Ports) > 0:
		var out []portSpan
		for _, p := range f.Ports {
			sp, _ := parseSpan(p)
			out = append(out, sp)
		}
		return out
	}
	return []portSpan{{1, 65535}}
}

// overlaps reports whether two rules on one address would take the same
// packets.
func overlaps(a, b *ForwardingRule) bool {
	if a.IPProtocol != b.IPProtocol && a.IPProtocol != "L3_DEFAULT" && b.IPProtocol != "L3_DEFAULT" {
		return false
	}
	for _, x := range a.spans() {
		for _, y := range b.spans() {
			if x.lo <= y.hi && y.lo <= x.hi {
				return true
			}
		}
	}
	return false
}

func (s *Server) registerForwardingRules() {
	const coll = "projects/{project}/regions/{region}/forwardingRules"
	pathOf := func(c *call) string { return s.regionalPath(c.p["region"], "forwardingRules", c.p["forwardingRule"]) }

	s.handle("GET", coll, func(c *call) (int, any) {
		items := listOf(s.forwardingRules, s.regionalColl(c.p["region"], "forwardingRules")+"/", func(f *ForwardingRule) listItem {
			return listItem{name: f.Name, created: parseTS(f.CreationTimestamp), doc: f.render(c.base)}
		})
		return s.listResponse(c, "compute#forwardingRuleList", s.regionalColl(c.p["region"], "forwardingRules"), items)
	})
	s.handle("GET", coll+"/{forwardingRule}", func(c *call) (int, any) {
		f := s.forwardingRules[pathOf(c)]
		if f == nil {
			return errNotFound(pathOf(c))
		}
		return http.StatusOK, f.render(c.base)
	})
	s.handleOp("POST", coll, s.insertForwardingRule)
	s.handleOp("DELETE", coll+"/{forwardingRule}", func(c *call) (int, any) {
		path := pathOf(c)
		var id uint64
		if f := s.forwardingRules[path]; f != nil {
			id = f.ID
		}
		return s.deleteLocked(c, "regions/"+c.p["region"], "forwardingRules", "forwarding_rule", path, id, func() {
			s.releaseIPLocked(s.forwardingRules[path].IPAddress, path)
			delete(s.forwardingRules, path)
		})
	})
	s.handleOp("POST", coll+"/{forwardingRule}/setTarget", func(c *call) (int, any) {
		path := pathOf(c)
		var req struct {
			Target string `json:"target"`
		}
		if _, status, body := readBody(c, "TargetReference", &req); status != 0 {
			return status, body
		}
		f := s.forwardingRules[path]
		if f == nil {
			return errNotFound(path)
		}
		if f.Target == "" {
			return errInvalidField("target", req.Target, "The forwarding rule does not use a target.")
		}
		rel, status, body := s.refLocked("target", req.Target, shapeTargetPool, s.regionalColl(c.p["region"], "targetPools"))
		if status != 0 {
			return status, body
		}
		if seg(rel, 3) != c.p["region"] {
			return errInvalidField("target", req.Target, "The target must be in the forwarding rule's region.")
		}
		return s.changeLocked(c, "regions/"+c.p["region"], "forwardingRules", "setTarget", path, f.ID, func() *opError {
			f := s.forwardingRules[path]
			f.Target = rel
			f.Fingerprint = fingerprint(f.SelfLink, rel, fmt.Sprint(s.newIDLocked()))
			return nil
		})
	})
}

func (s *Server) insertForwardingRule(c *call) (int, any) {
	var in ForwardingRule
	if _, status, body := readBody(c, "ForwardingRule", &in); status != 0 {
		return status, body
	}
	if status, body := checkName(in.Name); status != 0 {
		return status, body
	}
	region := c.p["region"]
	path := s.regionalPath(region, "forwardingRules", in.Name)
	f := ForwardingRule{
		Kind:                "compute#forwardingRule",
		ID:                  s.newIDLocked(),
		CreationTimestamp:   timestamp(s.now()),
		Name:                in.Name,
		Description:         in.Description,
		Region:              s.regionPath(region),
		IPProtocol:          cmp.Or(in.IPProtocol, "TCP"),
		AllPorts:            in.AllPorts,
		LoadBalancingScheme: cmp.Or(in.LoadBalancingScheme, "EXTERNAL"),
		AllowGlobalAccess:   in.AllowGlobalAccess,
		IPVersion:           in.IPVersion,
		SourceIPRanges:      slices.Clone(in.SourceIPRanges),
		Labels:              maps.Clone(in.Labels),
		LabelFingerprint:    labelFingerprint(in.Labels),
		SelfLink:            path,
	}
	f.Fingerprint = fingerprint(path, fmt.Sprint(f.ID))
	if !slices.Contains(ipProtocols, f.IPProtocol) {
		return errInvalidField("resource.IPProtocol", f.IPProtocol, "Unknown protocol.")
	}
	if f.IPVersion != "" && f.IPVersion != "IPV4" && f.IPVersion != "IPV6" {
		return errInvalidField("resource.ipVersion", f.IPVersion, "Must be IPV4 or IPV6.")
	}
	v6 := f.IPVersion == "IPV6"

	// Ports.
	set := 0
	for _, b := range []bool{in.PortRange != "", len(in.Ports) > 0, in.AllPorts} {
		if b {
			set++
		}
	}
	if set > 1 {
		return errInvalid("Invalid value for field 'resource': ports, portRange and allPorts are mutually exclusive.")
	}
	if in.PortRange != "" {
		sp, ok := parseSpan(in.PortRange)
		if !ok {
			return errInvalidField("resource.portRange", in.PortRange, "Must be a port or a range of ports, such as 80 or 8000-8080.")
		}
		f.PortRange = fmt.Sprintf("%d-%d", sp.lo, sp.hi)
	}
	if len(in.Ports) > 5 {
		return errInvalidField("resource.ports", strings.Join(in.Ports, ","), "At most 5 ports may be specified.")
	}
	for k, p := range in.Ports {
		if _, ok := parseSpan(p); !ok {
			return errInvalidField(fmt.Sprintf("resource.ports[%d]", k), p, "Must be a port number.")
		}
		f.Ports = append(f.Ports, p)
	}
	portful := f.IPProtocol == "TCP" || f.IPProtocol == "UDP" || f.IPProtocol == "SCTP"
	if !portful && set > 0 && !in.AllPorts {
		return errInvalidField("resource.IPProtocol", f.IPProtocol, "Ports can only be given for TCP, UDP and SCTP.")
	}

	var sn *subnetState
	switch f.LoadBalancingScheme {
	case "EXTERNAL":
		f.NetworkTier = cmp.Or(in.NetworkTier, "PREMIUM")
		if !slices.Contains(networkTiers, f.NetworkTier) {
			return errInvalidField("resource.networkTier", f.NetworkTier, "Unknown network tier.")
		}
		switch {
		case v6 && in.Target != "":
			return errInvalidField("resource.ipVersion", f.IPVersion, "Target pools support IPv4 only; an IPV6 rule needs a backendService.")
		case v6:
			return errInvalidField("resource.ipVersion", f.IPVersion, "The fake supports IPV6 for INTERNAL forwarding rules only.")
		}
		switch {
		case in.Target != "" && in.BackendService != "":
			return errInvalid("Invalid value for field 'resource': a forwarding rule has a target or a backendService, not both.")
		case in.Target != "":
			rel, status, body := s.refLocked("resource.target", in.Target, shapeTargetPool, s.regionalColl(region, "targetPools"))
			if status != 0 {
				return status, body
			}
			if seg(rel, 3) != region {
				return errInvalidField("resource.target", in.Target, "The target must be in the forwarding rule's region.")
			}
			if len(in.Ports) > 0 {
				return errInvalidField("resource.ports", strings.Join(in.Ports, ","), "Target pool forwarding rules take a portRange, not ports.")
			}
			f.Target = rel
		case in.BackendService != "":
			rel, status, body := s.backendServiceRefLocked(in.BackendService, region, "EXTERNAL")
			if status != 0 {
				return status, body
			}
			f.BackendService = rel
		default:
			return errRequired("resource.target")
		}
		if in.Network != "" || in.Subnetwork != "" {
			return errInvalidField("resource.network", in.Network+in.Subnetwork, "EXTERNAL forwarding rules do not belong to a network.")
		}
		if in.AllowGlobalAccess {
			return errInvalidField("resource.allowGlobalAccess", "true", "Only INTERNAL forwarding rules can allow global access.")
		}
		if portful && set == 0 && f.Target != "" {
			f.PortRange = "1-65535"
		}
	case "INTERNAL":
		if in.Target != "" {
			return errInvalidField("resource.target", in.Target, "INTERNAL forwarding rules use a backendService.")
		}
		if in.BackendService == "" {
			return errRequired("resource.backendService")
		}
		rel, status, body := s.backendServiceRefLocked(in.BackendService, region, "INTERNAL")
		if status != 0 {
			return status, body
		}
		f.BackendService = rel
		if in.NetworkTier != "" && in.NetworkTier != "PREMIUM" {
			return errInvalidField("resource.networkTier", in.NetworkTier, "INTERNAL forwarding rules are PREMIUM tier.")
		}
		f.NetworkTier = "PREMIUM"
		if in.PortRange != "" {
			return errInvalidField("resource.portRange", in.PortRange, "INTERNAL forwarding rules take ports or allPorts.")
		}
		if portful && set == 0 {
			return errInvalidField("resource.ports", "", "INTERNAL forwarding rules need ports or allPorts.")
		}
		network := s.globalPath("networks", DefaultNetwork)
		if in.Network != "" {
			if network, status, body = s.refLocked("resource.network", in.Network, shapeNetwork, s.globalColl("networks")); status != 0 {
				return status, body
			}
		}
		if in.Subnetwork != "" {
			srel, status, body := s.refLocked("resource.subnetwork", in.Subnetwork, shapeSubnetwork, s.regionalColl(region, "subnetworks"))
			if status != 0 {
				return status, body
			}
			sn = s.subnetByPathLocked(srel)
			if sn.Region != region {
				return errInvalidField("resource.subnetwork", in.Subnetwork, "The subnetwork must be in the forwarding rule's region.")
			}
			if in.Network != "" && s.globalPath("networks", sn.Network) != network {
				return errInvalidField("resource.subnetwork", in.Subnetwork, "The subnetwork is not in the forwarding rule's network.")
			}
		} else {
			n := s.networks[lastSeg(network)]
			if !n.AutoCreateSubnetworks {
				return errRequired("resource.subnetwork")
			}
			if sn = s.subnetForLocked(n.Name, region); sn == nil {
				return errRequired("resource.subnetwork")
			}
		}
		if v6 {
			if status, body := s.checkIPv6Subnet(sn); status != 0 {
				return status, body
			}
		}
		f.Subnetwork = s.subnetPath(sn)
		f.Network = s.globalPath("networks", sn.Network)
	default:
		return errInvalidField("resource.loadBalancingScheme", f.LoadBalancingScheme, "The fake supports EXTERNAL and INTERNAL forwarding rules.")
	}

	// The address: validate now, take it when the operation completes.
	var want string // a specific address
	if in.IPAddress != "" {
		if ip, literal, msg := parseRuleIP(in.IPAddress); literal {
			if msg != "" {
				return errInvalidField("resource.IPAddress", in.IPAddress, msg)
			}
			if ip.Is6() != v6 {
				return errInvalidField("resource.IPAddress", in.IPAddress, familyMismatch(v6))
			}
			want = ip.String()
			a := s.addressByIPLocked(want)
			switch {
			case f.LoadBalancingScheme == "EXTERNAL" && (a == nil || a.AddressType != "EXTERNAL" || lastSeg(a.Region) != region):
				return errInvalidField("resource.IPAddress", in.IPAddress, "The address is not reserved as an EXTERNAL address in this region.")
			case v6:
				if msg := ipv6RangeProblem(sn, ip); msg != "" {
					return errInvalidField("resource.IPAddress", in.IPAddress, msg)
				}
			case f.LoadBalancingScheme == "INTERNAL" && !inSubnet(sn, want):
				return errInvalidField("resource.IPAddress", in.IPAddress, fmt.Sprintf("The address is not in the range of subnetwork '%s'.", sn.Name))
			}
		} else {
			rel, status, body := s.refLocked("resource.IPAddress", in.IPAddress, shapeAddress, s.regionalColl(region, "addresses"))
			if status != 0 {
				return status, body
			}
			a := s.addresses[rel]
			if seg(rel, 3) != region || a.AddressType != f.LoadBalancingScheme {
				return errInvalidField("resource.IPAddress", in.IPAddress, fmt.Sprintf("The address must be a %s address in region '%s'.", f.LoadBalancingScheme, region))
			}
			if (a.IPVersion == "IPV6") != v6 {
				return errInvalidField("resource.IPAddress", in.IPAddress, familyMismatch(v6))
			}
			if v6 && a.Subnetwork != f.Subnetwork {
				return errInvalidField("resource.IPAddress", in.IPAddress, fmt.Sprintf("The address must be in subnetwork '%s'.", sn.Name))
			}
			want = a.Address
		}
		if a := s.addressByIPLocked(want); a != nil && a.AddressType == "EXTERNAL" && a.NetworkTier != f.NetworkTier {
			return errInvalidField("resource.networkTier", f.NetworkTier, fmt.Sprintf("The address's network tier is %s.", a.NetworkTier))
		}
	}

	return s.insertLocked(c, "regions/"+region, "forwardingRules", path, f.ID, func() *opError {
		if want == "" {
			var ip string
			var ok bool
			switch {
			case v6:
				ip, ok = s.allocIPv6Locked(sn, path)
			case sn != nil:
				ip, ok = s.allocInternalLocked(sn, path)
			default:
				ip, ok = s.allocExternalLocked(lbRanges, path)
			}
			if !ok {
				return &opError{code: "IP_SPACE_EXHAUSTED", message: "No IP addresses are available for the forwarding rule.", http: http.StatusForbidden}
			}
			f.IPAddress = ip
			s.forwardingRules[path] = &f
			return nil
		}
		holder := s.usedIPs[want]
		a := s.addresses[holder]
		switch {
		case holder == "":
			s.usedIPs[want] = path // an ephemeral address of the client's choosing
		case a == nil:
			return ipInUse(want)
		case a.AddressType == "INTERNAL" && a.Purpose != "SHARED_LOADBALANCER_VIP" && len(s.addressUsersLocked(a)) > 0:
			return ipInUse(want)
		}
		f.IPAddress = want
		for _, users := range s.addressUsersLocked(&Address{Address: want, Region: f.Region}) {
			if overlaps(s.forwardingRules[users], &f) {
				return ipInUse(want)
			}
		}
		s.forwardingRules[path] = &f
		return nil
	})
}
