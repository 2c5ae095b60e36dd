package gce

import (
	"cmp"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Firewalls (global/firewalls): insert, get, list, delete, update (PUT)
// and patch. Defaults as the API documents them: network "default",
// direction INGRESS, priority 1000, and for an INGRESS rule without
// sources, sourceRanges 0.0.0.0/0 (for EGRESS, destinationRanges); ::/0
// when the other ranges are IPv6. A rule has allowed or denied entries,
// not both, and as on GCE does not mix IPv4 and IPv6 ranges: in
// sourceRanges, in destinationRanges, or between the two.

// Firewalls returns every firewall, sorted by name.
func (s *Server) Firewalls() []Firewall {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	return sortedRender(s.firewalls, s.baseLocked(), Firewall.render)
}

// Firewall returns one firewall.
func (s *Server) Firewall(name string) (Firewall, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	f := s.firewalls[s.globalPath("firewalls", name)]
	if f == nil {
		return Firewall{}, false
	}
	return f.render(s.baseLocked()), true
}

// WatchFirewalls calls fn with every firewall rule, sorted by name, each
// time a change to them takes effect (when its operation is DONE), so a
// test can check what held between two changes, not only at the end: that
// a deny rule never overrode an allow rule while a load balancer's rules
// changed, say. fn runs under the server's lock and must not call it; nil
// stops watching.
func (s *Server) WatchFirewalls(fn func([]Firewall)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fwWatch = fn
}

// firewallsChangedLocked tells the watcher, if any.
func (s *Server) firewallsChangedLocked() {
	if s.fwWatch != nil {
		s.fwWatch(sortedRender(s.firewalls, s.baseLocked(), Firewall.render))
	}
}

var namedProtocols = []string{"tcp", "udp", "icmp", "esp", "ah", "sctp", "ipip", "all"}

// normFirewallLocked fills a firewall's defaults and validates it; the
// network is resolved to its stored path.
func (s *Server) normFirewallLocked(f *Firewall, hasPriority bool) (int, any) {
	if f.Network == "" {
		f.Network = s.globalPath("networks", DefaultNetwork)
	} else {
		rel, status, body := s.refLocked("resource.network", f.Network, shapeNetwork, s.globalColl("networks"))
		if status != 0 {
			return status, body
		}
		f.Network = rel
	}
	f.Direction = cmp.Or(f.Direction, "INGRESS")
	if f.Direction != "INGRESS" && f.Direction != "EGRESS" {
		return errInvalidField("resource.direction", f.Direction, "Must be INGRESS or EGRESS.")
	}
	if !hasPriority {
		f.Priority = 1000
	}
	if f.Priority < 0 || f.Priority > 65535 {
		return errInvalidField("resource.priority", fmt.Sprint(f.Priority), "Must be between 0 and 65535.")
	}
	switch {
	case len(f.Allowed) == 0 && len(f.Denied) == 0:
		return errRequired("resource.allowed")
	case len(f.Allowed) > 0 && len(f.Denied) > 0:
		return errInvalid("Invalid value for field 'resource': a firewall has allowed or denied rules, not both.")
	}
	for _, list := range []struct {
		name  string
		rules []FirewallRule
	}{{"allowed", f.Allowed}, {"denied", f.Denied}} {
		for k, r := range list.rules {
			field := fmt.Sprintf("resource.%s[%d]", list.name, k)
			proto := strings.ToLower(r.IPProtocol)
			n, numErr := strconv.Atoi(proto)
			switch {
			case proto == "":
				return errRequired(field + ".IPProtocol")
			case numErr == nil && (n < 0 || n > 255), numErr != nil && !slices.Contains(namedProtocols, proto):
				return errInvalidField(field+".IPProtocol", r.IPProtocol, "Unknown protocol.")
			}
			for j, p := range r.Ports {
				if _, ok := parseSpan(p); !ok {
					return errInvalidField(fmt.Sprintf("%s.ports[%d]", field, j), p, "Must be a port or a range of ports.")
				}
				if proto != "tcp" && proto != "udp" && proto != "sctp" && proto != "all" && proto != "6" && proto != "17" && proto != "132" {
					return errInvalidField(fmt.Sprintf("%s.ports[%d]", field, j), p, "Ports can only be given for tcp, udp, sctp and all.")
				}
			}
		}
	}
	for _, list := range []struct {
		name   string
		ranges []string
	}{{"sourceRanges", f.SourceRanges}, {"destinationRanges", f.DestinationRanges}} {
		for k, r := range list.ranges {
			if _, err := netip.ParsePrefix(r); err != nil {
				if _, err := netip.ParseAddr(r); err != nil {
					return errInvalidField(fmt.Sprintf("resource.%s[%d]", list.name, k), r, "Must be a CIDR address range.")
				}
			}
		}
	}
	switch f.Direction {
	case "INGRESS":
		if len(f.SourceRanges) == 0 && len(f.SourceTags) == 0 && len(f.SourceServiceAccounts) == 0 {
			f.SourceRanges = []string{anyRange(f.DestinationRanges)}
		}
	case "EGRESS":
		if len(f.SourceTags) > 0 {
			return errInvalidField("resource.sourceTags", strings.Join(f.SourceTags, ","), "EGRESS rules cannot have source tags.")
		}
		if len(f.DestinationRanges) == 0 {
			f.DestinationRanges = []string{anyRange(f.SourceRanges)}
		}
	}
	return checkRangeFamilies(f)
}

func (s *Server) registerFirewalls() {
	const coll = "projects/{project}/global/firewalls"
	pathOf := func(c *call) string { return s.globalPath("firewalls", c.p["firewall"]) }

	s.handle("GET", coll, func(c *call) (int, any) {
		items := listOf(s.firewalls, s.globalColl("firewalls")+"/", func(f *Firewall) listItem {
			return listItem{name: f.Name, created: parseTS(f.CreationTimestamp), doc: f.render(c.base)}
		})
		return s.listResponse(c, "compute#firewallList", s.globalColl("firewalls"), items)
	})
	s.handle("GET", coll+"/{firewall}", func(c *call) (int, any) {
		f := s.firewalls[pathOf(c)]
		if f == nil {
			return errNotFound(pathOf(c))
		}
		return http.StatusOK, f.render(c.base)
	})
	s.handleOp("POST", coll, func(c *call) (int, any) {
		var in Firewall
		d, status, body := readBody(c, "Firewall", &in)
		if status != 0 {
			return status, body
		}
		if status, body := checkName(in.Name); status != 0 {
			return status, body
		}
		if status, body := s.normFirewallLocked(&in, d.has("priority")); status != 0 {
			return status, body
		}
		path := s.globalPath("firewalls", in.Name)
		f := in.render("")
		f.Network = in.Network
		f.Kind, f.ID, f.CreationTimestamp, f.SelfLink = "compute#firewall", s.newIDLocked(), timestamp(s.now()), path
		return s.insertLocked(c, "global", "firewalls", path, f.ID, func() *opError {
			s.firewalls[path] = &f
			s.firewallsChangedLocked()
			return nil
		})
	})
	s.handleOp("DELETE", coll+"/{firewall}", func(c *call) (int, any) {
		path := pathOf(c)
		var id uint64
		if f := s.firewalls[path]; f != nil {
			id = f.ID
		}
		return s.deleteLocked(c, "global", "firewalls", "firewall", path, id, func() {
			delete(s.firewalls, path)
			s.firewallsChangedLocked()
		})
	})
	change := func(opType string) handlerFunc {
		return func(c *call) (int, any) {
			path := pathOf(c)
			cur := s.firewalls[path]
			var in Firewall
			d, status, body := readBody(c, "Firewall", &in)
			if status != 0 {
				return status, body
			}
			if cur == nil {
				return errNotFound(path)
			}
			next, hasPriority := in, d.has("priority")
			if opType == "patch" {
				next, hasPriority = cur.render(""), true
				next.SelfLink = ""
				if err := mergePatch(&next, d); err != nil {
					return errParse(err.Error())
				}
				if !d.has("network") {
					next.Network = cur.Network
				}
				if d.has("allowed") && !d.has("denied") {
					next.Denied = nil
				}
				if d.has("denied") && !d.has("allowed") {
					next.Allowed = nil
				}
			}
			if next.Name != "" && next.Name != cur.Name {
				return errInvalidField("resource.name", next.Name, "The name cannot be changed.")
			}
			if status, body := s.normFirewallLocked(&next, hasPriority); status != 0 {
				return status, body
			}
			next.Kind, next.ID, next.Name, next.CreationTimestamp, next.SelfLink = cur.Kind, cur.ID, cur.Name, cur.CreationTimestamp, cur.SelfLink
			return s.changeLocked(c, "global", "firewalls", opType, path, cur.ID, func() *opError {
				*s.firewalls[path] = next
				s.firewallsChangedLocked()
				return nil
			})
		}
	}
	s.handleOp("PUT", coll+"/{firewall}", change("update"))
	s.handleOp("PATCH", coll+"/{firewall}", change("patch"))
}
