package gce

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
)

// Routes (global/routes): insert, get, list (with filters, e.g. a name
// prefix), delete. A route needs a network, a destRange and exactly one
// next hop; nextHopInstance must name an existing instance, and a route
// whose instance is later deleted carries a NEXT_HOP_INSTANCE_NOT_FOUND
// warning, as on the real API. Priority defaults to 1000.

// Routes returns every route, sorted by name.
func (s *Server) Routes() []Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	out := sortedRender(s.routesByPath, s.baseLocked(), Route.render)
	for k := range out {
		s.routeWarningsLocked(&out[k], s.baseLocked())
	}
	return out
}

// routeWarningsLocked adds the warnings the API reports about a route's
// next hop.
func (s *Server) routeWarningsLocked(r *Route, base string) {
	stored := s.routesByPath[s.globalPath("routes", r.Name)]
	if stored == nil || stored.NextHopInstance == "" {
		return
	}
	in := s.instances[stored.NextHopInstance]
	switch {
	case in == nil:
		r.Warnings = append(r.Warnings, warning{
			Code:    "NEXT_HOP_INSTANCE_NOT_FOUND",
			Message: fmt.Sprintf("Next hop instance '%s' does not exist.", link(base, stored.NextHopInstance)),
			Data:    []warningData{{Key: "instance", Value: link(base, stored.NextHopInstance)}},
		})
	case in.Status != StatusRunning:
		r.Warnings = append(r.Warnings, warning{
			Code:    "NEXT_HOP_NOT_RUNNING",
			Message: fmt.Sprintf("Next hop instance '%s' is not running.", link(base, stored.NextHopInstance)),
			Data:    []warningData{{Key: "instance", Value: link(base, stored.NextHopInstance)}},
		})
	}
}

func (s *Server) registerRoutes() {
	const coll = "projects/{project}/global/routes"
	pathOf := func(c *call) string { return s.globalPath("routes", c.p["route"]) }
	render := func(c *call, r *Route) Route {
		out := r.render(c.base)
		s.routeWarningsLocked(&out, c.base)
		return out
	}

	s.handle("GET", coll, func(c *call) (int, any) {
		items := listOf(s.routesByPath, s.globalColl("routes")+"/", func(r *Route) listItem {
			return listItem{name: r.Name, created: parseTS(r.CreationTimestamp), doc: render(c, r)}
		})
		return s.listResponse(c, "compute#routeList", s.globalColl("routes"), items)
	})
	s.handle("GET", coll+"/{route}", func(c *call) (int, any) {
		r := s.routesByPath[pathOf(c)]
		if r == nil {
			return errNotFound(pathOf(c))
		}
		return http.StatusOK, render(c, r)
	})
	s.handleOp("POST", coll, func(c *call) (int, any) {
		var in Route
		d, status, body := readBody(c, "Route", &in)
		if status != 0 {
			return status, body
		}
		if status, body := checkName(in.Name); status != 0 {
			return status, body
		}
		path := s.globalPath("routes", in.Name)
		r := Route{
			Kind:              "compute#route",
			ID:                s.newIDLocked(),
			CreationTimestamp: timestamp(s.now()),
			Name:              in.Name,
			Description:       in.Description,
			Tags:              slices.Clone(in.Tags),
			Priority:          1000,
			SelfLink:          path,
		}
		if in.Network == "" {
			return errRequired("resource.network")
		}
		if r.Network, status, body = s.refLocked("resource.network", in.Network, shapeNetwork, s.globalColl("networks")); status != 0 {
			return status, body
		}
		if in.DestRange == "" {
			return errRequired("resource.destRange")
		}
		pfx, err := netip.ParsePrefix(in.DestRange)
		if err != nil {
			return errInvalidField("resource.destRange", in.DestRange, "Must be a CIDR address range.")
		}
		if pfx.Masked() != pfx {
			return errInvalidField("resource.destRange", in.DestRange, fmt.Sprintf("The range is not in canonical form; use %s.", pfx.Masked()))
		}
		r.DestRange = in.DestRange
		if d.has("priority") {
			r.Priority = in.Priority
		}
		if r.Priority < 0 || r.Priority > 65535 {
			return errInvalidField("resource.priority", fmt.Sprint(r.Priority), "Must be between 0 and 65535.")
		}
		hops := 0
		for _, h := range []string{in.NextHopInstance, in.NextHopIP, in.NextHopNetwork, in.NextHopGateway, in.NextHopIlb} {
			if h != "" {
				hops++
			}
		}
		if d.has("nextHopVpnTunnel") || d.has("nextHopPeering") || d.has("nextHopInterconnectAttachment") || d.has("nextHopHub") {
			return errInvalid("Invalid value for field 'resource': the fake supports instance, IP, gateway and ILB next hops.")
		}
		if hops != 1 {
			return errInvalid("Invalid value for field 'resource': a route needs exactly one next hop.")
		}
		switch {
		case in.NextHopInstance != "":
			rel, status, body := s.refLocked("resource.nextHopInstance", in.NextHopInstance, shapeInstance, "")
			if status != 0 {
				return status, body
			}
			if s.globalPath("networks", s.instances[rel].Network) != r.Network {
				return errInvalidField("resource.nextHopInstance", in.NextHopInstance, "The instance is not on the route's network.")
			}
			r.NextHopInstance = rel
		case in.NextHopIP != "":
			if _, err := netip.ParseAddr(in.NextHopIP); err != nil {
				return errInvalidField("resource.nextHopIp", in.NextHopIP, "Must be an IP address.")
			}
			r.NextHopIP = in.NextHopIP
		case in.NextHopGateway != "":
			rel, ok := s.parseRef(in.NextHopGateway, shapeGateway, s.globalColl("gateways"))
			if !ok || lastSeg(rel) != "default-internet-gateway" {
				return errInvalidField("resource.nextHopGateway", in.NextHopGateway, "The only gateway is default-internet-gateway.")
			}
			r.NextHopGateway = rel
		case in.NextHopIlb != "":
			if _, err := netip.ParseAddr(in.NextHopIlb); err == nil {
				r.NextHopIlb = in.NextHopIlb
				break
			}
			rel, status, body := s.refLocked("resource.nextHopIlb", in.NextHopIlb, shapeForwardingRl, "")
			if status != 0 {
				return status, body
			}
			r.NextHopIlb = rel
		case in.NextHopNetwork != "":
			return errInvalidField("resource.nextHopNetwork", in.NextHopNetwork, "Routes to a network are created by peering, not inserted.")
		}
		return s.insertLocked(c, "global", "routes", path, r.ID, func() *opError {
			s.routesByPath[path] = &r
			return nil
		})
	})
	s.handleOp("DELETE", coll+"/{route}", func(c *call) (int, any) {
		path := pathOf(c)
		var id uint64
		if r := s.routesByPath[path]; r != nil {
			id = r.ID
		}
		return s.deleteLocked(c, "global", "routes", "route", path, id, func() { delete(s.routesByPath, path) })
	})
}
