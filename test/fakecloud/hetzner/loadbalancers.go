package hetzner

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"time"
)

// Algorithms, as the API spells them.
const (
	AlgorithmRoundRobin       = "round_robin"
	AlgorithmLeastConnections = "least_connections"
)

// LoadBalancer is a load balancer as the fake holds it.
type LoadBalancer struct {
	ID       int64
	Name     string
	Type     string // "lb11", "lb21" or "lb31"
	Location string
	Labels   map[string]string
	// Algorithm defaults to AlgorithmRoundRobin.
	Algorithm string
	Services  []Service
	Targets   []Target
	// PublicInterface says whether the public addresses answer.
	PublicInterface bool
	IPv4, IPv6      string // public addresses, allocated at creation
	IPv4DNSPtr      string
	IPv6DNSPtr      string
	// Network is the private network it is attached to (0 for none; the
	// API allows one), at PrivateIP.
	Network          int64
	PrivateIP        string
	DeleteProtection bool
	Created          time.Time
}

type lbState struct {
	LoadBalancer
	ipv4ID, ipv6ID int64
}

func (lb LoadBalancer) clone() LoadBalancer {
	lb.Labels = maps.Clone(lb.Labels)
	lb.Services = slices.Clone(lb.Services)
	for k := range lb.Services {
		lb.Services[k] = lb.Services[k].clone()
	}
	lb.Targets = slices.Clone(lb.Targets)
	return lb
}

// LoadBalancer returns a load balancer by ID.
func (s *Server) LoadBalancer(id int64) (LoadBalancer, bool) {
	s.lock()
	defer s.mu.Unlock()
	lb, ok := s.lbs[id]
	if !ok {
		return LoadBalancer{}, false
	}
	return lb.clone(), true
}

// LoadBalancers returns every load balancer, by ID.
func (s *Server) LoadBalancers() []LoadBalancer {
	s.lock()
	defer s.mu.Unlock()
	var out []LoadBalancer
	for _, lb := range s.sortedLBsLocked() {
		out = append(out, lb.clone())
	}
	return out
}

// CreateLoadBalancerDirect stores a load balancer as if created long ago
// (by hcloud CCM, for a migration test): no action, no lock. Unset fields
// get the API's defaults (type lb11, location fsn1, round robin, service
// and health check defaults, public addresses allocated), except
// PublicInterface: a bool cannot say "unset", so false means the public
// interface is off, as the caller wrote it; Network, if set, is
// joined at PrivateIP or the next free address. It returns the ID, or an
// error for what the API would refuse.
func (s *Server) CreateLoadBalancerDirect(lb LoadBalancer) (int64, error) {
	s.lock()
	defer s.mu.Unlock()
	lb = lb.clone()
	lb.Type = cmp.Or(lb.Type, "lb11")
	lb.Location = cmp.Or(lb.Location, "fsn1")
	lb.Algorithm = cmp.Or(lb.Algorithm, AlgorithmRoundRobin)
	if lb.Labels == nil {
		lb.Labels = map[string]string{}
	}
	typ, ok := findLBType(lb.Type)
	if _, okLoc := findLocation(lb.Location); !ok || !okLoc {
		return 0, fmt.Errorf("hetzner fake: unknown type %q or location %q", lb.Type, lb.Location)
	}
	if s.lbNameTakenLocked(lb.Name, 0) || lb.Name == "" {
		return 0, fmt.Errorf("hetzner fake: load balancer name %q is empty or taken", lb.Name)
	}
	services := lb.Services
	lb.Services = nil
	for _, sv := range services {
		sv = fillService(sv)
		if st, body := s.addServiceLocked(&lb, sv); st != 0 {
			return 0, fmt.Errorf("hetzner fake: service %d: %v", sv.ListenPort, body)
		}
		lb.Services = append(lb.Services, sv)
	}
	if len(lb.Targets) > typ.MaxTargets {
		return 0, fmt.Errorf("hetzner fake: %d targets, %s takes %d", len(lb.Targets), typ.Name, typ.MaxTargets)
	}
	for k := range lb.Targets {
		lb.Targets[k].added = time.Time{}
	}
	st := &lbState{LoadBalancer: lb}
	if lb.Created.IsZero() {
		st.Created = s.now()
	}
	if err := s.placeLBLocked(st, lb.Network, lb.PrivateIP); err != nil {
		return 0, err
	}
	return st.ID, nil
}

// fillService gives a service built in Go the defaults buildService gives
// one built from JSON.
func fillService(sv Service) Service {
	req := serviceReq{Protocol: &sv.Protocol}
	if sv.ListenPort != 0 {
		req.ListenPort = &sv.ListenPort
	}
	if sv.DestinationPort != 0 {
		req.DestinationPort = &sv.DestinationPort
	}
	out := buildService(Service{}, req, true)
	out.ProxyProtocol = sv.ProxyProtocol
	if sv.HealthCheck.Protocol != "" {
		hc := sv.HealthCheck
		hc.Port = cmp.Or(hc.Port, out.DestinationPort)
		hc.Interval, hc.Timeout, hc.Retries = cmp.Or(hc.Interval, 15), cmp.Or(hc.Timeout, 10), cmp.Or(hc.Retries, 3)
		if hc.Protocol != ProtocolTCP && hc.HTTP == nil {
			hc.HTTP = &HealthCheckHTTP{Path: "/", StatusCodes: []string{"2??", "3??"}}
		}
		out.HealthCheck = hc
	}
	if sv.HTTP != nil && out.HTTP != nil {
		out.HTTP = sv.HTTP
	}
	return out.clone()
}

// placeLBLocked gives a new load balancer its ID and public addresses,
// joins its network and stores it.
func (s *Server) placeLBLocked(lb *lbState, network int64, ip string) error {
	lb.ID = s.newIDLocked("load_balancer")
	n := s.nextIP
	s.nextIP++
	// Load balancers take the documentation ranges, 203.0.113.0/24 then
	// 198.51.100.0/24, and 2001:db8:ffff::/48.
	k := (lb.ID - firstLBID) % 762
	lb.IPv4 = fmt.Sprintf("%s.%d", []string{"203.0.113", "198.51.100", "192.0.2"}[k/254], k%254+1)
	lb.IPv6 = fmt.Sprintf("2001:db8:ffff:%x::1", n)
	lb.ipv4ID, lb.ipv6ID = s.newIDLocked("ip"), s.newIDLocked("ip")
	lb.IPv4DNSPtr, lb.IPv6DNSPtr = reverseDNS(lb.IPv4), "static."+lb.IPv6+".clients.your-server.de"
	lb.Network, lb.PrivateIP = 0, ""
	if network != 0 {
		nw, ok := s.networks[network]
		if !ok {
			return fmt.Errorf("hetzner fake: no network %d", network)
		}
		loc, _ := findLocation(lb.Location)
		a, err := nw.allocLocked(loc.NetworkZone, ip, ownerLB(lb.ID))
		if err != nil {
			return fmt.Errorf("hetzner fake: load balancer in network %d: %w", network, err)
		}
		lb.Network, lb.PrivateIP = network, a.String()
	}
	s.lbs[lb.ID] = lb
	return nil
}

func (s *Server) lbNameTakenLocked(name string, except int64) bool {
	for _, o := range s.lbs {
		if o.Name == name && o.ID != except {
			return true
		}
	}
	return false
}

func (s *Server) sortedLBsLocked() []*lbState {
	out := slices.Collect(maps.Values(s.lbs))
	slices.SortFunc(out, func(a, b *lbState) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (s *Server) registerLoadBalancers() {
	const base = "/v1/load_balancers"
	s.handle(http.MethodGet, base, s.listLBs)
	s.handle(http.MethodPost, base, s.createLB)
	s.handle(http.MethodGet, base+"/{id}", s.getLB)
	s.handle(http.MethodPut, base+"/{id}", s.updateLB)
	s.handle(http.MethodDelete, base+"/{id}", s.deleteLB)
	for _, c := range []string{"add_service", "update_service", "delete_service"} {
		s.handle(http.MethodPost, base+"/{id}/actions/"+c, s.serviceAction(c))
	}
	s.handle(http.MethodPost, base+"/{id}/actions/add_target", s.targetAction("add_target"))
	s.handle(http.MethodPost, base+"/{id}/actions/remove_target", s.targetAction("remove_target"))
	s.handle(http.MethodPost, base+"/{id}/actions/change_algorithm", s.changeAlgorithm)
	s.handle(http.MethodPost, base+"/{id}/actions/change_type", s.changeType)
	s.handle(http.MethodPost, base+"/{id}/actions/attach_to_network", s.attachLB)
	s.handle(http.MethodPost, base+"/{id}/actions/detach_from_network", s.detachLB)
	s.handle(http.MethodPost, base+"/{id}/actions/enable_public_interface", s.publicInterface(true))
	s.handle(http.MethodPost, base+"/{id}/actions/disable_public_interface", s.publicInterface(false))
	s.handle(http.MethodPost, base+"/{id}/actions/change_dns_ptr", s.changeDNSPtr)
	s.handle(http.MethodPost, base+"/{id}/actions/change_protection", s.changeProtection)
}

func (s *Server) listLBs(r *http.Request, _ params) (int, any) {
	lq, st, body := parseList(r)
	if st != 0 {
		return st, body
	}
	s.lock()
	defer s.mu.Unlock()
	var out []*lbState
	for _, lb := range s.sortedLBsLocked() {
		if lq.keep(lb.Name, lb.Labels) {
			out = append(out, lb)
		}
	}
	return page(r, lq, "load_balancers", out, s.wireLBLocked)
}

func (s *Server) getLB(_ *http.Request, p params) (int, any) {
	id, ok := parseID(p["id"])
	s.lock()
	defer s.mu.Unlock()
	lb := s.lbs[id]
	if !ok || lb == nil {
		return errNotFound("load_balancer with ID '" + p["id"] + "' not found")
	}
	return http.StatusOK, map[string]any{"load_balancer": s.wireLBLocked(lb)}
}

type lbCreateReq struct {
	Name             *string   `json:"name"`
	LoadBalancerType *idOrName `json:"load_balancer_type"`
	Algorithm        *struct {
		Type string `json:"type"`
	} `json:"algorithm"`
	Location        *string            `json:"location"`
	NetworkZone     *string            `json:"network_zone"`
	Labels          *map[string]string `json:"labels"`
	Targets         []targetReq        `json:"targets"`
	Services        []serviceReq       `json:"services"`
	PublicInterface *bool              `json:"public_interface"`
	PublicNet       *struct {
		IPv4 int64 `json:"ipv4"`
		IPv6 int64 `json:"ipv6"`
	} `json:"public_net"`
	Network *int64 `json:"network"`
}

// createLB: POST /v1/load_balancers. The load balancer exists at once,
// with its addresses, services and targets, and is locked while its
// create_load_balancer action runs.
func (s *Server) createLB(r *http.Request, _ params) (int, any) {
	var req lbCreateReq
	if st, body := decode(r, &req); st != 0 {
		return st, body
	}
	s.lock()
	defer s.mu.Unlock()
	lb, st, body := s.checkCreateLocked(req)
	if st != 0 {
		return st, body
	}
	var network int64
	if req.Network != nil {
		network = *req.Network
	}
	if err := s.placeLBLocked(lb, network, ""); err != nil {
		return errCode(http.StatusUnprocessableEntity, "no_subnet_available", "no subnet or IP available in the network zone")
	}
	now := s.now()
	for k := range lb.Targets {
		lb.Targets[k].added = now
	}
	a := s.startActionLocked("create_load_balancer", s.lbCreateDelay, []resourceRef{{ID: lb.ID, Type: "load_balancer"}}, nil, nil)
	return http.StatusCreated, map[string]any{"load_balancer": s.wireLBLocked(lb), "action": s.wireActionOf(a)}
}

// checkCreateLocked validates a create request and builds the load
// balancer it asks for, not yet stored.
func (s *Server) checkCreateLocked(req lbCreateReq) (*lbState, int, any) {
	fail := func(st int, body any) (*lbState, int, any) { return nil, st, body }
	lb := &lbState{LoadBalancer: LoadBalancer{Labels: map[string]string{}, Algorithm: AlgorithmRoundRobin,
		PublicInterface: true, Created: s.now()}}
	switch {
	case req.Name == nil || *req.Name == "":
		return fail(errInvalid("name", "is required"))
	case s.lbNameTakenLocked(*req.Name, 0):
		return fail(errUniqueness("name", "name is already used"))
	case req.LoadBalancerType == nil:
		return fail(errInvalid("load_balancer_type", "is required"))
	case (req.Location == nil) == (req.NetworkZone == nil):
		return fail(errInvalid("location", "exactly one of location and network_zone is required"))
	}
	lb.Name = *req.Name
	typ, ok := findLBType(string(*req.LoadBalancerType))
	if !ok {
		return fail(errInvalid("load_balancer_type", "load balancer type not found"))
	}
	lb.Type = typ.Name
	if req.Location != nil {
		loc, ok := findLocation(*req.Location)
		if !ok {
			return fail(errInvalid("location", "location not found"))
		}
		lb.Location = loc.Name
	} else {
		k := slices.IndexFunc(locations, func(l location) bool { return l.NetworkZone == *req.NetworkZone })
		if k < 0 {
			return fail(errInvalid("network_zone", "network zone not found"))
		}
		lb.Location = locations[k].Name
	}
	if req.Algorithm != nil {
		if req.Algorithm.Type != AlgorithmRoundRobin && req.Algorithm.Type != AlgorithmLeastConnections {
			return fail(errInvalid("algorithm.type", "must be one of round_robin, least_connections"))
		}
		lb.Algorithm = req.Algorithm.Type
	}
	if req.Labels != nil {
		if st, body := validLabels(*req.Labels); st != 0 {
			return fail(st, body)
		}
		lb.Labels = maps.Clone(*req.Labels)
	}
	if pn := req.PublicNet; pn != nil && (pn.IPv4 != 0 || pn.IPv6 != 0) {
		return fail(errNotFound(fmt.Sprintf("primary_ip with ID '%d' not found", max(pn.IPv4, pn.IPv6))))
	}
	if req.PublicInterface != nil {
		lb.PublicInterface = *req.PublicInterface
	}
	if req.Network != nil {
		n, ok := s.networks[*req.Network]
		if !ok {
			return fail(errNotFound(fmt.Sprintf("network with ID '%d' not found", *req.Network)))
		}
		loc, _ := findLocation(lb.Location)
		if !slices.ContainsFunc(n.Subnets, func(sn subnetState) bool { return sn.NetworkZone == loc.NetworkZone && sn.Type != "vswitch" }) {
			return fail(errCode(http.StatusUnprocessableEntity, "no_subnet_available", "no subnet available in network zone "+loc.NetworkZone))
		}
		// Targets check their network against this one.
		lb.Network = *req.Network
	} else if !lb.PublicInterface {
		return fail(errInvalid("public_interface", "a load balancer without public interface needs a network"))
	}
	for _, sr := range req.Services {
		if sr.Protocol == nil {
			return fail(errInvalid("services.protocol", "is required"))
		}
		sv := buildService(Service{}, sr, true)
		if st, body := s.addServiceLocked(&lb.LoadBalancer, sv); st != 0 {
			return fail(st, body)
		}
		lb.Services = append(lb.Services, sv)
	}
	for _, tr := range req.Targets {
		t, st, body := s.checkTargetLocked(lb, tr)
		if st != 0 {
			return fail(st, body)
		}
		lb.Targets = append(lb.Targets, t)
	}
	return lb, 0, nil
}

// updateLB: PUT /v1/load_balancers/{id}, changing name and labels at once.
func (s *Server) updateLB(r *http.Request, p params) (int, any) {
	var req struct {
		Name   *string            `json:"name"`
		Labels *map[string]string `json:"labels"`
	}
	if st, body := decode(r, &req); st != 0 {
		return st, body
	}
	id, ok := parseID(p["id"])
	s.lock()
	defer s.mu.Unlock()
	lb := s.lbs[id]
	if !ok || lb == nil {
		return errNotFound("load_balancer with ID '" + p["id"] + "' not found")
	}
	if req.Name != nil {
		if *req.Name == "" {
			return errInvalid("name", "must not be empty")
		}
		if s.lbNameTakenLocked(*req.Name, id) {
			return errUniqueness("name", "name is already used")
		}
	}
	if req.Labels != nil {
		if st, body := validLabels(*req.Labels); st != 0 {
			return st, body
		}
		lb.Labels = maps.Clone(*req.Labels)
	}
	if req.Name != nil {
		lb.Name = *req.Name
	}
	return http.StatusOK, map[string]any{"load_balancer": s.wireLBLocked(lb)}
}

// deleteLB: DELETE /v1/load_balancers/{id}. Since 2026-10-05 it answers
// 201 with a delete_load_balancer action; the load balancer goes when the
// action ends, and its private address is freed.
func (s *Server) deleteLB(_ *http.Request, p params) (int, any) {
	return s.lbAction(p, "delete_load_balancer", func(lb *lbState) (int, any, change) {
		if lb.DeleteProtection {
			return no(errProtected("load balancer is delete protected"))
		}
		return done(func() {
			s.releaseLBLocked(lb)
			delete(s.lbs, lb.ID)
		})
	})
}

// releaseLBLocked frees a load balancer's private address.
func (s *Server) releaseLBLocked(lb *lbState) {
	if n := s.networks[lb.Network]; n != nil {
		if a, err := netip.ParseAddr(lb.PrivateIP); err == nil && n.used[a] == ownerLB(lb.ID) {
			delete(n.used, a)
		}
	}
	lb.Network, lb.PrivateIP = 0, ""
}

// change is what an action request leads to: the effect when the action
// succeeds, the undo if it fails, and resources it locks besides the
// load balancer.
type change struct {
	effect, undo func()
	more         []resourceRef
}

func no(st int, body any) (int, any, change) { return st, body, change{} }
func done(effect func()) (int, any, change)  { return 0, nil, change{effect: effect} }

// lbAction runs the steps every load balancer action shares: find the
// load balancer, refuse if another action holds it, let check validate
// the request, start the action.
func (s *Server) lbAction(p params, command string, check func(lb *lbState) (int, any, change)) (int, any) {
	id, ok := parseID(p["id"])
	s.lock()
	defer s.mu.Unlock()
	lb := s.lbs[id]
	if !ok || lb == nil {
		return errNotFound("load_balancer with ID '" + p["id"] + "' not found")
	}
	ref := resourceRef{ID: id, Type: "load_balancer"}
	if st, body := s.lockedLocked(ref); st != 0 {
		return st, body
	}
	st, body, c := check(lb)
	if st != 0 {
		return st, body
	}
	if st, body := s.lockedLocked(c.more...); st != 0 {
		if c.undo != nil {
			c.undo()
		}
		return st, body
	}
	a := s.startActionLocked(command, s.actionDelay, append([]resourceRef{ref}, c.more...), c.effect, c.undo)
	return s.actionDoc(a)
}
