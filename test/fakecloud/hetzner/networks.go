package hetzner

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// Subnet is a network's subnet, for AddNetwork.
type Subnet struct {
	Type        string // "cloud" (default), "server" or "vswitch"
	IPRange     string // e.g. "10.0.0.0/16"
	NetworkZone string // default "eu-central"
	VSwitchID   int64  // vswitch subnets only
}

// Route is a network route: traffic for Destination goes to Gateway.
type Route struct {
	Destination string
	Gateway     string
}

type subnetState struct {
	Subnet
	prefix netip.Prefix
}

type networkState struct {
	ID      int64
	Name    string
	IPRange netip.Prefix
	Subnets []subnetState
	Routes  []Route
	Labels  map[string]string
	Created time.Time
	used    map[netip.Addr]string // address → its owner (ownerServer, ownerLB)
	hint    map[int]netip.Addr    // per subnet, the last address handed out
}

func ownerServer(id int64) string { return "server:" + strconv.FormatInt(id, 10) }
func ownerLB(id int64) string     { return "load_balancer:" + strconv.FormatInt(id, 10) }

// Errors of address allocation, answered with the API's codes.
var (
	errIPTaken  = errors.New("ip_not_available")
	errNoSubnet = errors.New("no_subnet_available")
)

// AddNetwork creates a network with subnets and returns its ID. It panics
// on a taken name or ranges that do not parse or fit: mistakes in the
// calling test.
func (s *Server) AddNetwork(name, ipRange string, subnets ...Subnet) int64 {
	s.lock()
	defer s.mu.Unlock()
	r, err := netip.ParsePrefix(ipRange)
	if err != nil || r.Masked() != r || !r.Addr().Is4() {
		panic("hetzner fake: invalid network ip range " + ipRange)
	}
	for _, n := range s.networks {
		if n.Name == name {
			panic("hetzner fake: network name " + name + " is taken")
		}
	}
	n := &networkState{ID: s.newIDLocked("network"), Name: name, IPRange: r, Labels: map[string]string{},
		Created: s.now(), used: map[netip.Addr]string{}, hint: map[int]netip.Addr{}}
	for _, sn := range subnets {
		p, err := netip.ParsePrefix(sn.IPRange)
		if err != nil || p.Masked() != p || !r.Contains(p.Addr()) || p.Bits() < r.Bits() {
			panic("hetzner fake: subnet " + sn.IPRange + " is not inside " + ipRange)
		}
		sn.Type = cmp.Or(sn.Type, "cloud")
		sn.NetworkZone = cmp.Or(sn.NetworkZone, "eu-central")
		n.Subnets = append(n.Subnets, subnetState{Subnet: sn, prefix: p})
	}
	s.networks[n.ID] = n
	return n.ID
}

// AttachServer attaches a server to a network at ip, or at the next free
// address of a subnet in the server's network zone for "".
func (s *Server) AttachServer(serverID, networkID int64, ip string) error {
	s.lock()
	defer s.mu.Unlock()
	sv, ok := s.servers[serverID]
	if !ok {
		return fmt.Errorf("hetzner fake: no server %d", serverID)
	}
	return s.attachLocked(sv, networkID, ip)
}

func (s *Server) attachLocked(sv *serverState, networkID int64, ip string) error {
	n, ok := s.networks[networkID]
	if !ok {
		return fmt.Errorf("no network %d", networkID)
	}
	if slices.ContainsFunc(sv.PrivateNets, func(p PrivateNet) bool { return p.Network == networkID }) {
		return fmt.Errorf("server %d is already attached to network %d", sv.ID, networkID)
	}
	loc, _ := findLocation(sv.Location)
	a, err := n.allocLocked(loc.NetworkZone, ip, ownerServer(sv.ID))
	if err != nil {
		return fmt.Errorf("attaching server %d to network %d at %q: %w", sv.ID, networkID, ip, err)
	}
	mac := fmt.Sprintf("86:00:00:%02x:%02x:%02x", sv.ID>>16&0xff, sv.ID>>8&0xff, sv.ID&0xff)
	sv.PrivateNets = append(sv.PrivateNets, PrivateNet{Network: networkID, IP: a.String(), AliasIPs: []string{}, MAC: mac})
	return nil
}

// gateway is the address the cloud's router takes: the network's first
// for cloud and server subnets, the subnet's first for vSwitch ones.
func (n *networkState) gateway(sn subnetState) netip.Addr {
	if sn.Type == "vswitch" {
		return sn.prefix.Addr().Next()
	}
	return n.IPRange.Addr().Next()
}

// allocLocked reserves want (or the next free address) for owner in a
// cloud or server subnet of zone.
func (n *networkState) allocLocked(zone, want, owner string) (netip.Addr, error) {
	if want != "" {
		a, err := netip.ParseAddr(want)
		if err != nil {
			return a, errIPTaken
		}
		for _, sn := range n.Subnets {
			if sn.Type != "vswitch" && sn.NetworkZone == zone && sn.prefix.Contains(a) &&
				a != sn.prefix.Addr() && a != n.gateway(sn) && n.used[a] == "" {
				n.used[a] = owner
				return a, nil
			}
		}
		return a, errIPTaken
	}
	for k, sn := range n.Subnets {
		if sn.Type == "vswitch" || sn.NetworkZone != zone {
			continue
		}
		// Scan on from the last address handed out, so filling a subnet
		// stays linear, then from the start to reuse freed addresses. The
		// network and broadcast addresses and the gateway are never free.
		last := lastAddr(sn.prefix)
		start := n.hint[k]
		if !start.IsValid() {
			start = sn.prefix.Addr()
		}
		free := func(a netip.Addr) bool { return a != n.gateway(sn) && n.used[a] == "" }
		for _, r := range [][2]netip.Addr{{start.Next(), last}, {sn.prefix.Addr().Next(), start.Next()}} {
			for a := r[0]; a.Less(r[1]) && a.Less(last); a = a.Next() {
				if free(a) {
					n.used[a], n.hint[k] = owner, a
					return a, nil
				}
			}
		}
	}
	return netip.Addr{}, errNoSubnet
}

// lastAddr is a prefix's broadcast address.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Routes returns a network's routes.
func (s *Server) Routes(networkID int64) []Route {
	s.lock()
	defer s.mu.Unlock()
	if n, ok := s.networks[networkID]; ok {
		return slices.Clone(n.Routes)
	}
	return nil
}

// NetworkID finds a network by name; 0 if there is none.
func (s *Server) NetworkID(name string) int64 {
	s.lock()
	defer s.mu.Unlock()
	for _, n := range s.networks {
		if n.Name == name {
			return n.ID
		}
	}
	return 0
}

func (s *Server) registerNetworks() {
	s.handle(http.MethodGet, "/v1/networks", s.listNetworks)
	s.handle(http.MethodGet, "/v1/networks/{id}", s.getNetwork)
	s.handle(http.MethodPost, "/v1/networks/{id}/actions/add_route", s.routeAction("add_route"))
	s.handle(http.MethodPost, "/v1/networks/{id}/actions/delete_route", s.routeAction("delete_route"))
}

func (s *Server) listNetworks(r *http.Request, _ params) (int, any) {
	lq, st, body := parseList(r)
	if st != 0 {
		return st, body
	}
	s.lock()
	defer s.mu.Unlock()
	var out []*networkState
	for _, n := range s.networks {
		if lq.keep(n.Name, n.Labels) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *networkState) int { return cmp.Compare(a.ID, b.ID) })
	return page(r, lq, "networks", out, s.wireNetworkLocked)
}

func (s *Server) getNetwork(_ *http.Request, p params) (int, any) {
	id, ok := parseID(p["id"])
	s.lock()
	defer s.mu.Unlock()
	n := s.networks[id]
	if !ok || n == nil {
		return errNotFound("network with ID '" + p["id"] + "' not found")
	}
	return http.StatusOK, map[string]any{"network": s.wireNetworkLocked(n)}
}

func (s *Server) wireNetworkLocked(n *networkState) wireNetwork {
	w := wireNetwork{ID: n.ID, Name: n.Name, Created: stamp(n.Created), IPRange: n.IPRange.String(),
		Subnets: []wireSubnet{}, Routes: []wireRoute{}, Servers: []int64{}, LoadBalancers: []int64{},
		Labels: maps.Clone(n.Labels)}
	for _, sn := range n.Subnets {
		w.Subnets = append(w.Subnets, wireSubnet{Type: sn.Type, IPRange: sn.IPRange, NetworkZone: sn.NetworkZone,
			Gateway: n.gateway(sn).String(), VSwitchID: sn.VSwitchID})
	}
	for _, r := range n.Routes {
		w.Routes = append(w.Routes, wireRoute(r))
	}
	for _, sv := range s.sortedServersLocked() {
		if slices.ContainsFunc(sv.PrivateNets, func(p PrivateNet) bool { return p.Network == n.ID }) {
			w.Servers = append(w.Servers, sv.ID)
		}
	}
	for _, lb := range s.sortedLBsLocked() {
		if lb.Network == n.ID {
			w.LoadBalancers = append(w.LoadBalancers, lb.ID)
		}
	}
	return w
}

// routeAction: POST /v1/networks/{id}/actions/add_route and delete_route.
// The request is checked at once; the route changes when the action
// succeeds, and the network is busy until then.
func (s *Server) routeAction(command string) handlerFunc {
	return func(r *http.Request, p params) (int, any) {
		var req struct {
			Destination *string `json:"destination"`
			Gateway     *string `json:"gateway"`
		}
		if st, body := decode(r, &req); st != 0 {
			return st, body
		}
		switch {
		case req.Destination == nil:
			return errInvalid("destination", "is required")
		case req.Gateway == nil:
			return errInvalid("gateway", "is required")
		}
		dst, err := netip.ParsePrefix(*req.Destination)
		if err != nil || !dst.Addr().Is4() || dst.Masked() != dst {
			return errInvalid("destination", "is not a valid IPv4 network")
		}
		gw, err := netip.ParseAddr(*req.Gateway)
		if err != nil || !gw.Is4() {
			return errInvalid("gateway", "is not a valid IPv4 address")
		}
		id, ok := parseID(p["id"])
		s.lock()
		defer s.mu.Unlock()
		n := s.networks[id]
		if !ok || n == nil {
			return errNotFound("network with ID '" + p["id"] + "' not found")
		}
		ref := resourceRef{ID: id, Type: "network"}
		if st, body := s.lockedLocked(ref); st != 0 {
			return st, body
		}
		route := Route{Destination: dst.String(), Gateway: gw.String()}
		if command == "delete_route" {
			if !slices.Contains(n.Routes, route) {
				return errNotFound("network route not found")
			}
			a := s.startActionLocked(command, s.actionDelay, []resourceRef{ref}, func() {
				n.Routes = slices.DeleteFunc(n.Routes, func(x Route) bool { return x == route })
			}, nil)
			return s.actionDoc(a)
		}
		if st, body := n.checkRoute(dst, gw); st != 0 {
			return st, body
		}
		a := s.startActionLocked(command, s.actionDelay, []resourceRef{ref}, func() {
			n.Routes = append(n.Routes, route)
		}, nil)
		return s.actionDoc(a)
	}
}

var (
	rfc1918 = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16")}
	serversGateway = netip.MustParseAddr("172.31.1.1")
)

// checkRoute applies the reference's rules: the destination is a private
// (RFC 1918) range or 0.0.0.0/0 and overlaps no subnet, no other route's
// destination and not 172.31.1.1; the gateway lies in a cloud or server
// subnet and is not the network's own first address.
func (n *networkState) checkRoute(dst netip.Prefix, gw netip.Addr) (int, any) {
	private := dst.Bits() == 0 || slices.ContainsFunc(rfc1918, func(p netip.Prefix) bool {
		return p.Contains(dst.Addr()) && dst.Bits() >= p.Bits()
	})
	if !private {
		return errInvalidMsg("destination", "network route destination must be a private network (RFC 1918) or 0.0.0.0/0")
	}
	// A default route overlaps everything and is let be, once.
	overlaps := slices.ContainsFunc(n.Routes, func(r Route) bool { return r.Destination == dst.String() })
	if dst.Bits() != 0 {
		overlaps = overlaps || dst.Contains(serversGateway) ||
			slices.ContainsFunc(n.Subnets, func(sn subnetState) bool { return sn.prefix.Overlaps(dst) }) ||
			slices.ContainsFunc(n.Routes, func(r Route) bool {
				rp := netip.MustParsePrefix(r.Destination)
				return rp.Bits() != 0 && rp.Overlaps(dst)
			})
	}
	if overlaps {
		return errInvalidMsg("destination", "network route destination overlaps with another subnetwork or network route")
	}
	inSubnet := slices.ContainsFunc(n.Subnets, func(sn subnetState) bool {
		return sn.Type != "vswitch" && sn.prefix.Contains(gw) && gw != sn.prefix.Addr()
	})
	if !inSubnet || gw == n.IPRange.Addr().Next() || gw == serversGateway {
		return errInvalidMsg("gateway", "invalid gateway")
	}
	return 0, nil
}
