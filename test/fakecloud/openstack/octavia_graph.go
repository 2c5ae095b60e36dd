package openstack

import "slices"

// A fully populated load balancer is created with its listeners and
// pools in one request, as load_balancer.py's _graph_create takes them:
// a listener's default_pool is either a whole pool, created with the
// top-level ones, or only a name, referring to one of those; every pool
// must be named, and names must be unique.

// graphPlan is a checked graph: the pools to create, then the listeners,
// each with the name of its default pool ("" for none).
type graphPlan struct {
	pools     []poolIn
	listeners []listenerIn
	refs      []string
}

func (s *Server) planGraphLocked(lb *lbState, listeners []listenerIn, pools []poolIn) (graphPlan, int, any) {
	g := graphPlan{pools: slices.Clone(pools), listeners: listeners}
	fail := func(st int, body any) (graphPlan, int, any) { return graphPlan{}, st, body }
	var required []string
	for _, l := range listeners {
		ref := ""
		if dp := l.defaultPool; dp != nil {
			if dp.name == "" {
				return fail(errOctaviaValidation("Pools must be named when creating a fully populated loadbalancer."))
			}
			if dp.nameOnly() {
				required = append(required, dp.name)
			} else {
				g.pools = append(g.pools, *dp)
			}
			ref = dp.name
		}
		if l.defaultPoolID != "" {
			// No pool can be this new load balancer's yet.
			return fail(errOctaviaNotFound("Pool", l.defaultPoolID))
		}
		g.refs = append(g.refs, ref)
	}
	var names []string
	for _, p := range g.pools {
		if slices.Contains(names, p.name) {
			return fail(errOctaviaValidation("Pool names must be unique when creating a fully populated loadbalancer."))
		}
		names = append(names, p.name)
	}
	for _, r := range required {
		if !slices.Contains(names, r) {
			return fail(errOctaviaValidation("Pool '" + r + "' was referenced but no full definition was found."))
		}
	}
	for _, p := range g.pools {
		for _, attr := range []string{"protocol", "lb_algorithm"} {
			if p.v.str(attr) == "" {
				return fail(errOctaviaValidation("Pool definition for '" + p.name + "' missing required attribute: " + attr))
			}
		}
		if st, body := s.checkPoolLocked(p); st != 0 {
			return fail(st, body)
		}
	}
	for k, l := range listeners {
		if ref := g.refs[k]; ref != "" {
			p := g.pools[slices.Index(names, ref)]
			if st, body := checkProtocols(l.protocol, p.protocol); st != 0 {
				return fail(st, body)
			}
		}
		if st, body := s.checkListenerLocked(lb, l, listeners[:k]); st != 0 {
			return fail(st, body)
		}
	}
	return g, 0, nil
}

// buildGraphLocked creates a checked graph on lb, PENDING_CREATE.
func (s *Server) buildGraphLocked(lb *lbState, g graphPlan) {
	byName := map[string]string{}
	for _, p := range g.pools {
		byName[p.name] = s.newPoolLocked(lb, p).ID
	}
	for k, l := range g.listeners {
		if ref := g.refs[k]; ref != "" {
			l.defaultPoolID = byName[ref]
		}
		s.newListenerLocked(lb, l)
	}
}
