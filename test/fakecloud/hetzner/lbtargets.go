package hetzner

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"time"
)

// Target types, as the API spells them.
const (
	TargetServer        = "server"
	TargetLabelSelector = "label_selector"
	TargetIP            = "ip"
)

// Target is one target of a load balancer: a server, the servers a label
// selector matches, or an IP (a dedicated server's).
type Target struct {
	Type          string
	ServerID      int64
	LabelSelector string
	IP            string
	UsePrivateIP  bool
	added         time.Time // when it joined: health is "unknown" for a while
}

// same says whether two targets are the same target (use_private_ip
// aside).
func (t Target) same(o Target) bool {
	return t.Type == o.Type && t.ServerID == o.ServerID && t.LabelSelector == o.LabelSelector && t.IP == o.IP
}

type targetReq struct {
	Type   string `json:"type"`
	Server *struct {
		ID int64 `json:"id"`
	} `json:"server"`
	LabelSelector *struct {
		Selector string `json:"selector"`
	} `json:"label_selector"`
	IP *struct {
		IP string `json:"ip"`
	} `json:"ip"`
	UsePrivateIP *bool `json:"use_private_ip"`
}

// parseTarget reads which target a request names.
func parseTarget(req targetReq) (Target, int, any) {
	t := Target{Type: req.Type}
	if req.UsePrivateIP != nil {
		t.UsePrivateIP = *req.UsePrivateIP
	}
	switch {
	case req.Type == TargetServer && req.Server == nil:
		st, body := errInvalid("server", "is required")
		return t, st, body
	case req.Type == TargetServer:
		t.ServerID = req.Server.ID
	case req.Type == TargetLabelSelector && req.LabelSelector == nil:
		st, body := errInvalid("label_selector", "is required")
		return t, st, body
	case req.Type == TargetLabelSelector:
		t.LabelSelector = req.LabelSelector.Selector
	case req.Type == TargetIP && req.IP == nil:
		st, body := errInvalid("ip", "is required")
		return t, st, body
	case req.Type == TargetIP:
		a, err := netip.ParseAddr(req.IP.IP)
		if err != nil {
			st, body := errInvalid("ip.ip", "is not a valid IP address")
			return t, st, body
		}
		t.IP = a.String()
	default:
		st, body := errInvalid("type", "must be one of server, label_selector, ip")
		return t, st, body
	}
	return t, 0, nil
}

// checkTargetLocked validates a target to add to lb: it is new, the
// type has room, a server exists and is reachable the way asked (on the
// load balancer's network, or by a public IPv4), an IP is public and no
// cloud resource's.
func (s *Server) checkTargetLocked(lb *lbState, req targetReq) (Target, int, any) {
	t, st, body := parseTarget(req)
	if st != 0 {
		return t, st, body
	}
	fail := func(st int, body any) (Target, int, any) { return t, st, body }
	if slices.ContainsFunc(lb.Targets, t.same) {
		return fail(errCode(http.StatusConflict, "target_already_defined", "the load balancer target is already defined"))
	}
	typ, _ := findLBType(lb.Type)
	if s.countTargetsLocked(lb) >= typ.MaxTargets {
		return fail(errResourceLimit("max_targets", "maximum number of targets reached"))
	}
	if t.UsePrivateIP && t.Type != TargetIP && lb.Network == 0 {
		return fail(errCode(http.StatusUnprocessableEntity, "load_balancer_not_attached_to_network",
			"the load balancer is not attached to a network"))
	}
	switch t.Type {
	case TargetServer:
		sv, ok := s.servers[t.ServerID]
		if !ok {
			return fail(errNotFound(fmt.Sprintf("server with ID '%d' not found", t.ServerID)))
		}
		attached := slices.ContainsFunc(sv.PrivateNets, func(p PrivateNet) bool { return p.Network == lb.Network })
		if t.UsePrivateIP && !attached {
			return fail(errCode(http.StatusUnprocessableEntity, "server_not_attached_to_network",
				"the server is not attached to the network of the load balancer"))
		}
		if !t.UsePrivateIP && sv.PublicIPv4 == "" {
			return fail(errCode(http.StatusUnprocessableEntity, "missing_ipv4", "the server has no public IPv4 address"))
		}
	case TargetLabelSelector:
		if _, err := parseSelector(t.LabelSelector); err != nil || t.LabelSelector == "" {
			return fail(errInvalid("label_selector.selector", "is not a valid label selector"))
		}
	case TargetIP:
		a := netip.MustParseAddr(t.IP)
		if a.IsPrivate() || a.IsLoopback() || a.IsUnspecified() || a.IsLinkLocalUnicast() || a.IsMulticast() {
			return fail(errInvalid("ip.ip", "must be a public IP address"))
		}
		if s.cloudIPLocked(t.IP) {
			return fail(errCode(http.StatusUnprocessableEntity, "cloud_resource_ip_not_allowed",
				"the IP belongs to a Hetzner Cloud resource"))
		}
	}
	return t, 0, nil
}

// countTargetsLocked counts targets as the type's limit does: label
// selectors by the servers they match.
func (s *Server) countTargetsLocked(lb *lbState) int {
	n := 0
	for _, t := range lb.Targets {
		if t.Type == TargetLabelSelector {
			n += len(s.selectedLocked(lb, t))
		} else {
			n++
		}
	}
	return n
}

// selectedLocked lists the servers a label selector target takes, by ID:
// with use_private_ip only those on the load balancer's network.
func (s *Server) selectedLocked(lb *lbState, t Target) []*serverState {
	sel, _ := parseSelector(t.LabelSelector)
	var out []*serverState
	for _, sv := range s.sortedServersLocked() {
		if !sel.matches(sv.Labels) {
			continue
		}
		if t.UsePrivateIP && !slices.ContainsFunc(sv.PrivateNets, func(p PrivateNet) bool { return p.Network == lb.Network }) {
			continue
		}
		out = append(out, sv)
	}
	return out
}

// cloudIPLocked says whether ip is a server's or load balancer's.
func (s *Server) cloudIPLocked(ip string) bool {
	for _, sv := range s.servers {
		if sv.PublicIPv4 == ip {
			return true
		}
		if p, err := netip.ParsePrefix(sv.PublicIPv6); err == nil && p.Contains(netip.MustParseAddr(ip)) {
			return true
		}
	}
	for _, lb := range s.lbs {
		if lb.IPv4 == ip || lb.IPv6 == ip {
			return true
		}
	}
	return false
}

// targetAction: POST .../add_target and remove_target. A new target
// reports "unknown" health until SetTargetHealthDelay has passed.
func (s *Server) targetAction(command string) handlerFunc {
	return func(r *http.Request, p params) (int, any) {
		var req targetReq
		if st, body := decode(r, &req); st != 0 {
			return st, body
		}
		return s.lbAction(p, command, func(lb *lbState) (int, any, change) {
			if command == "add_target" {
				t, st, body := s.checkTargetLocked(lb, req)
				if st != 0 {
					return no(st, body)
				}
				return done(func() {
					t.added = s.now()
					lb.Targets = append(lb.Targets, t)
				})
			}
			t, st, body := parseTarget(req)
			if st != 0 {
				return no(st, body)
			}
			if !slices.ContainsFunc(lb.Targets, t.same) {
				return no(errNotFound("load balancer target not found"))
			}
			return done(func() { lb.Targets = slices.DeleteFunc(lb.Targets, t.same) })
		})
	}
}

// healthLocked is a target's health on every service: "unknown" while it
// is new, then "healthy" if its server runs and is reachable the way the
// target says, else "unhealthy".
func (s *Server) healthLocked(lb *lbState, t Target, serverID int64) []wireHealthStatus {
	status := "healthy"
	switch sv := s.servers[serverID]; {
	case s.now().Before(t.added.Add(s.healthDelay)):
		status = "unknown"
	case t.Type == TargetIP:
	case sv == nil || sv.Status != StatusRunning:
		status = "unhealthy"
	case t.UsePrivateIP && !slices.ContainsFunc(sv.PrivateNets, func(p PrivateNet) bool { return p.Network == lb.Network }):
		status = "unhealthy"
	}
	out := []wireHealthStatus{}
	for _, svc := range lb.Services {
		out = append(out, wireHealthStatus{ListenPort: svc.ListenPort, Status: status})
	}
	return out
}
