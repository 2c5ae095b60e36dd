package gce

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"sort"
)

// Addresses (regions/{region}/addresses): insert, get, list, delete. An
// EXTERNAL address without an address gets one from the documentation
// ranges (RFC 5737); an INTERNAL one from its subnetwork (by default the
// default network's in the region). An address is RESERVED until
// forwarding rules use it, then IN_USE with them as users.
//
// As on GCE, reserving the IP a forwarding rule holds as ephemeral
// promotes it to static, and deleting a static address one forwarding
// rule uses demotes it: the reservation goes and the rule keeps the IP as
// ephemeral, until the rule is deleted (cloud-provider-gcp keeps a load
// balancer's IP across a rule's recreation so). An address several rules
// share cannot be deleted (400 resourceInUseByAnotherResource).
//
// An address with ipVersion IPV6 is INTERNAL, in an IPV4_IPV6 subnetwork,
// and a /96 of its IPv6 /64 (prefixLength 96): the one address names, or
// the next free one but the first. It is reported as GCE does, every group
// written out and without its range ("fd20:1:2:3:0:1:0:0"), which is what
// the filter address = "..." matches. Promotion and demotion work as for
// IPv4, with an IPV6 forwarding rule's /96.

// Addresses returns every address, sorted by region and name.
func (s *Server) Addresses() []Address {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	out := sortedRender(s.addresses, s.baseLocked(), Address.render)
	for k := range out {
		s.fillAddressStatusLocked(&out[k], s.baseLocked())
	}
	return out
}

// addressUsersLocked lists the forwarding rules using an address.
func (s *Server) addressUsersLocked(a *Address) []string {
	var users []string
	region := lastSeg(a.Region)
	for p, f := range s.forwardingRules {
		if f.IPAddress == a.Address && seg(p, 3) == region {
			users = append(users, p)
		}
	}
	sort.Strings(users)
	return users
}

// fillAddressStatusLocked sets status and users of a rendered address.
func (s *Server) fillAddressStatusLocked(a *Address, base string) {
	stored := s.addresses[s.regionalPath(lastSeg(a.Region), "addresses", a.Name)]
	if stored == nil {
		return
	}
	users := s.addressUsersLocked(stored)
	a.Users = links(base, users)
	a.Status = "RESERVED"
	if len(users) > 0 {
		a.Status = "IN_USE"
	}
}

// addressByIPLocked finds the address holding ip, if an address does.
func (s *Server) addressByIPLocked(ip string) *Address {
	if holder := s.usedIPs[ip]; holder != "" {
		return s.addresses[holder]
	}
	return nil
}

var networkTiers = []string{"PREMIUM", "STANDARD"}

func (s *Server) registerAddresses() {
	const coll = "projects/{project}/regions/{region}/addresses"
	pathOf := func(c *call) string { return s.regionalPath(c.p["region"], "addresses", c.p["address"]) }
	render := func(c *call, a *Address) Address {
		r := a.render(c.base)
		s.fillAddressStatusLocked(&r, c.base)
		return r
	}

	s.handle("GET", coll, func(c *call) (int, any) {
		items := listOf(s.addresses, s.regionalColl(c.p["region"], "addresses")+"/", func(a *Address) listItem {
			return listItem{name: a.Name, created: parseTS(a.CreationTimestamp), doc: render(c, a)}
		})
		return s.listResponse(c, "compute#addressList", s.regionalColl(c.p["region"], "addresses"), items)
	})
	s.handle("GET", coll+"/{address}", func(c *call) (int, any) {
		a := s.addresses[pathOf(c)]
		if a == nil {
			return errNotFound(pathOf(c))
		}
		return http.StatusOK, render(c, a)
	})
	s.handleOp("POST", coll, func(c *call) (int, any) {
		var in Address
		if _, status, body := readBody(c, "Address", &in); status != 0 {
			return status, body
		}
		if status, body := checkName(in.Name); status != 0 {
			return status, body
		}
		region := c.p["region"]
		path := s.regionalPath(region, "addresses", in.Name)
		a := Address{
			Kind:              "compute#address",
			ID:                s.newIDLocked(),
			CreationTimestamp: timestamp(s.now()),
			Name:              in.Name,
			Description:       in.Description,
			AddressType:       cmp.Or(in.AddressType, "EXTERNAL"),
			IPVersion:         in.IPVersion,
			Region:            s.regionPath(region),
			Labels:            maps.Clone(in.Labels),
			LabelFingerprint:  labelFingerprint(in.Labels),
			SelfLink:          path,
			Status:            "RESERVED",
		}
		v6 := a.IPVersion == "IPV6"
		switch {
		case a.IPVersion != "" && a.IPVersion != "IPV4" && !v6:
			return errInvalidField("resource.ipVersion", a.IPVersion, "Must be IPV4 or IPV6.")
		case v6 && a.AddressType != "INTERNAL":
			return errInvalidField("resource.ipVersion", a.IPVersion, "The fake supports IPV6 for INTERNAL addresses only.")
		case v6 && in.PrefixLength != 0 && in.PrefixLength != ipv6RangeBits:
			return errInvalidField("resource.prefixLength", fmt.Sprint(in.PrefixLength), "An internal IPv6 address is a /96.")
		case v6:
			a.PrefixLength = ipv6RangeBits
		}
		var sn *subnetState
		switch a.AddressType {
		case "EXTERNAL":
			a.NetworkTier = cmp.Or(in.NetworkTier, "PREMIUM")
			if !slices.Contains(networkTiers, a.NetworkTier) {
				return errInvalidField("resource.networkTier", a.NetworkTier, "Unknown network tier.")
			}
			if in.Subnetwork != "" || in.Network != "" {
				return errInvalidField("resource.subnetwork", in.Subnetwork+in.Network, "Only INTERNAL addresses belong to a subnetwork.")
			}
		case "INTERNAL":
			a.Purpose = cmp.Or(in.Purpose, "GCE_ENDPOINT")
			if in.Subnetwork == "" {
				sn = s.subnetForLocked(DefaultNetwork, region)
				if sn == nil {
					return errRequired("resource.subnetwork")
				}
			} else {
				rel, status, body := s.refLocked("resource.subnetwork", in.Subnetwork, shapeSubnetwork, s.regionalColl(region, "subnetworks"))
				if status != 0 {
					return status, body
				}
				if sn = s.subnetByPathLocked(rel); sn.Region != region {
					return errInvalidField("resource.subnetwork", in.Subnetwork, "The subnetwork must be in the address's region.")
				}
			}
			if v6 {
				if status, body := s.checkIPv6Subnet(sn); status != 0 {
					return status, body
				}
			}
			a.Subnetwork = s.subnetPath(sn)
			a.Network = s.globalPath("networks", sn.Network)
		default:
			return errInvalidField("resource.addressType", a.AddressType, "Unknown address type.")
		}
		var want string // canonical, as usedIPs is keyed
		if in.Address != "" {
			ip, err := netip.ParseAddr(in.Address)
			switch {
			case v6 && (err != nil || !ip.Is6() || ip.Zone() != ""):
				return errInvalidField("resource.address", in.Address, "Must be an IPv6 address, without its range.")
			case v6:
				if msg := ipv6RangeProblem(sn, ip); msg != "" {
					return errInvalidField("resource.address", in.Address, msg)
				}
			case err == nil && ip.Is6():
				return errInvalidField("resource.address", in.Address, familyMismatch(false))
			case err != nil || !ip.Is4():
				return errInvalidField("resource.address", in.Address, "Must be an IPv4 address.")
			case sn != nil && !inSubnet(sn, in.Address):
				return errInvalidField("resource.address", in.Address, fmt.Sprintf("The address is not in the range of subnetwork '%s'.", sn.Name))
			}
			want = ip.String()
			if holder := s.usedIPs[want]; holder != "" && seg(holder, -2) != "forwardingRules" {
				return newError(http.StatusBadRequest, "ipInUseByAnotherResource", fmt.Sprintf("IP '%s' is already being used by another resource.", in.Address))
			}
		}
		return s.insertLocked(c, "regions/"+region, "addresses", path, a.ID, func() *opError {
			switch {
			case want != "":
				// Reserving an address a forwarding rule uses promotes it
				// from ephemeral to static.
				if holder := s.usedIPs[want]; holder != "" && seg(holder, -2) != "forwardingRules" {
					return ipInUse(want)
				}
				s.usedIPs[want] = path
				a.Address = want
			case v6:
				ip, ok := s.allocIPv6Locked(sn, path)
				if !ok {
					return &opError{code: "IP_SPACE_EXHAUSTED", message: fmt.Sprintf("IPv6 space of '%s' is exhausted.", s.subnetPath(sn)), http: http.StatusBadRequest}
				}
				a.Address = ip
			case sn != nil:
				ip, ok := s.allocInternalLocked(sn, path)
				if !ok {
					return &opError{code: "IP_SPACE_EXHAUSTED", message: fmt.Sprintf("IP space of '%s' is exhausted.", s.subnetPath(sn)), http: http.StatusBadRequest}
				}
				a.Address = ip
			default:
				ip, ok := s.allocExternalLocked(lbRanges, path)
				if !ok {
					return &opError{code: "IP_SPACE_EXHAUSTED", message: "No external IP addresses are available.", http: http.StatusForbidden}
				}
				a.Address = ip
			}
			s.addresses[path] = &a
			return nil
		})
	})
	s.handleOp("DELETE", coll+"/{address}", func(c *call) (int, any) {
		path := pathOf(c)
		var id uint64
		if a := s.addresses[path]; a != nil {
			id = a.ID
		}
		return s.deleteLocked(c, "regions/"+c.p["region"], "addresses", "address", path, id, func() {
			a := s.addresses[path]
			if users := s.addressUsersLocked(a); len(users) == 1 && s.usedIPs[a.Address] == path {
				s.usedIPs[a.Address] = users[0] // demoted: the rule's ephemeral IP now
			} else {
				s.releaseIPLocked(a.Address, path)
			}
			delete(s.addresses, path)
		})
	})
}

func ipInUse(ip string) *opError {
	return &opError{code: "IP_IN_USE_BY_ANOTHER_RESOURCE", message: fmt.Sprintf("IP '%s' is already being used by another resource.", ip), http: http.StatusBadRequest}
}
