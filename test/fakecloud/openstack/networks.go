package openstack

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// NetworkSpec describes a network for AddNetwork; zero fields get
// defaults.
type NetworkSpec struct {
	Name   string // default "network-<n>"
	Region string // default the first region
	// Subnets are made with the network, in order.
	Subnets []SubnetSpec
	// External marks a provider network floating IPs come from
	// (router:external), owned by the cloud's admin project.
	External bool
	Shared   bool
	MTU      int // default 1450, a VXLAN tenant network's
}

// SubnetSpec describes a subnet: its CIDR, IPv4 or IPv6.
type SubnetSpec struct {
	Name    string // default ""
	CIDR    string
	Gateway string // default the CIDR's first address
	// NoGateway leaves the subnet without a gateway.
	NoGateway bool
}

// CloudNetwork is a network as the fake holds it.
type CloudNetwork struct {
	ID       string
	Name     string
	Region   string
	External bool
	Shared   bool
	MTU      int
	Subnets  []CloudSubnet
}

// CloudSubnet is a subnet as the fake holds it.
type CloudSubnet struct {
	ID        string
	Name      string
	NetworkID string
	CIDR      string
	Gateway   string // "" for none
	IPVersion int
}

type networkState struct {
	CloudNetwork
	subnets []string // IDs, in order
	created time.Time
}

type subnetState struct {
	CloudSubnet
	region  string
	prefix  netip.Prefix
	gateway netip.Addr // invalid for none
	used    map[netip.Addr]bool
	created time.Time
}

// adminProject owns external networks, as the cloud admin makes them.
var adminProject = stableID("project", "admin")

// AddNetwork creates a network with its subnets, as the cloud's admin or
// the project would, and returns its ID. It panics on a taken name in the
// region or a bad CIDR or gateway: mistakes in the calling test.
func (s *Server) AddNetwork(spec NetworkSpec) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	region := s.regionLocked(spec.Region)
	id := newUUID()
	name := cmp.Or(spec.Name, fmt.Sprintf("network-%d", len(s.networks)+1))
	for _, n := range s.networks {
		if n.Name == name && n.Region == region {
			panic("openstack fake: network name " + name + " is taken")
		}
	}
	n := &networkState{CloudNetwork: CloudNetwork{ID: id, Name: name, Region: region, External: spec.External,
		Shared: spec.Shared, MTU: cmp.Or(spec.MTU, 1450)}, created: s.now()}
	for _, ss := range spec.Subnets {
		n.subnets = append(n.subnets, s.addSubnetLocked(n, ss))
	}
	s.networks[id] = n
	return id
}

func (s *Server) addSubnetLocked(n *networkState, spec SubnetSpec) string {
	p, err := netip.ParsePrefix(spec.CIDR)
	if err != nil || p != p.Masked() {
		panic("openstack fake: bad subnet CIDR " + spec.CIDR)
	}
	sub := &subnetState{CloudSubnet: CloudSubnet{ID: newUUID(), Name: spec.Name, NetworkID: n.ID, CIDR: p.String(),
		IPVersion: 4}, region: n.Region, prefix: p, used: map[netip.Addr]bool{}, created: s.now()}
	if p.Addr().Is6() {
		sub.IPVersion = 6
	}
	switch {
	case spec.NoGateway:
	case spec.Gateway != "":
		gw, err := netip.ParseAddr(spec.Gateway)
		if err != nil || !p.Contains(gw) {
			panic("openstack fake: gateway " + spec.Gateway + " is not in " + spec.CIDR)
		}
		sub.gateway = gw
	default:
		sub.gateway = p.Addr().Next()
	}
	if sub.gateway.IsValid() {
		sub.Gateway = sub.gateway.String()
		sub.used[sub.gateway] = true
	}
	s.subnets[sub.ID] = sub
	return sub.ID
}

// Network returns a network by ID.
func (s *Server) Network(id string) (CloudNetwork, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.networks[id]
	if !ok {
		return CloudNetwork{}, false
	}
	return s.cloudNetworkLocked(n), true
}

// Networks returns every network, in every region, oldest first.
func (s *Server) Networks() []CloudNetwork {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := slices.Collect(maps.Values(s.networks))
	slices.SortFunc(ns, func(a, b *networkState) int { return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.ID, b.ID)) })
	var out []CloudNetwork
	for _, n := range ns {
		out = append(out, s.cloudNetworkLocked(n))
	}
	return out
}

func (s *Server) cloudNetworkLocked(n *networkState) CloudNetwork {
	c := n.CloudNetwork
	c.Subnets = nil
	for _, id := range n.subnets {
		c.Subnets = append(c.Subnets, s.subnets[id].CloudSubnet)
	}
	return c
}

// networkByRefLocked finds a network of a region by ID or name.
func (s *Server) networkByRefLocked(region, ref string) *networkState {
	if n := s.networks[ref]; n != nil && n.Region == region {
		return n
	}
	for _, n := range s.networks {
		if n.Name == ref && n.Region == region {
			return n
		}
	}
	return nil
}

// allocate takes an address of a subnet: ip if given (which must be
// free), else the lowest free one after the gateway's, as Neutron's
// default allocation pool starts there.
func (sub *subnetState) allocate(ip netip.Addr) (netip.Addr, error) {
	if ip.IsValid() {
		if !sub.prefix.Contains(ip) || sub.used[ip] {
			return netip.Addr{}, fmt.Errorf("address %s is not free in %s", ip, sub.CIDR)
		}
		sub.used[ip] = true
		return ip, nil
	}
	broadcast := lastAddr(sub.prefix)
	for a := sub.prefix.Addr().Next(); sub.prefix.Contains(a); a = a.Next() {
		if !sub.used[a] && !(a.Is4() && a == broadcast) {
			sub.used[a] = true
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("subnet %s is full", sub.CIDR)
}

func (s *Server) registerNetworks() {
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/networks", NetworksList, s.listNetworks)
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/networks/{id}", NetworksGet, s.getNetwork)
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/subnets", SubnetsList, s.listSubnets)
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/subnets/{id}", SubnetsGet, s.getSubnet)
}

var networkFilters = []string{"id", "name", "status", "shared", "router:external", "tenant_id", "project_id",
	"admin_state_up", "description", "mtu"}

func (s *Server) listNetworks(c *call) (int, any) {
	nq, st, body := parseNeutronQuery(c.r, networkFilters)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []neutronItem
	for _, n := range s.networks {
		if n.Region != c.region {
			continue
		}
		owner := s.networkOwnerLocked(n)
		items = append(items, neutronItem{id: n.ID, fields: map[string][]string{
			"id": {n.ID}, "name": {n.Name}, "status": {"ACTIVE"}, "shared": {strconv.FormatBool(n.Shared)},
			"router:external": {strconv.FormatBool(n.External)}, "tenant_id": {owner}, "project_id": {owner},
			"admin_state_up": {"true"}, "description": {""}, "mtu": {strconv.Itoa(n.MTU)}}})
	}
	return neutronPage(c, "networks", nq, items, func(id string) any { return s.wireNetworkLocked(s.networks[id]) },
		func(id string) (int, any) { return errNetworkNotFound(id) })
}

func errNetworkNotFound(id string) (int, any) {
	return errNeutron(http.StatusNotFound, "NetworkNotFound", "Network "+id+" could not be found.")
}

func (s *Server) getNetwork(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.networks[c.p["id"]]
	if n == nil || n.Region != c.region {
		return errNetworkNotFound(c.p["id"])
	}
	return http.StatusOK, map[string]any{"network": s.wireNetworkLocked(n)}
}

func (s *Server) networkOwnerLocked(n *networkState) string {
	if n.External {
		return adminProject
	}
	return s.account.ProjectID
}

func (s *Server) wireNetworkLocked(n *networkState) wireNetwork {
	owner := s.networkOwnerLocked(n)
	w := wireNetwork{ID: n.ID, Name: n.Name, AdminStateUp: true, Status: "ACTIVE", Subnets: slices.Clone(n.subnets),
		TenantID: owner, ProjectID: owner, Shared: n.Shared, RouterExternal: n.External, MTU: n.MTU,
		AvailabilityZoneHints: []string{}, AvailabilityZones: []string{"nova"}, PortSecurityEnabled: true,
		Tags: []string{}, CreatedAt: stamp(n.created), UpdatedAt: stamp(n.created), RevisionNumber: 1 + len(n.subnets)}
	if w.Subnets == nil {
		w.Subnets = []string{}
	}
	if n.External {
		f := false
		w.IsDefault = &f
	}
	return w
}

var subnetFilters = []string{"id", "name", "network_id", "cidr", "ip_version", "gateway_ip", "tenant_id", "project_id",
	"enable_dhcp", "description"}

func (s *Server) listSubnets(c *call) (int, any) {
	nq, st, body := parseNeutronQuery(c.r, subnetFilters)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []neutronItem
	for _, sub := range s.subnets {
		if sub.region != c.region {
			continue
		}
		owner := s.networkOwnerLocked(s.networks[sub.NetworkID])
		items = append(items, neutronItem{id: sub.ID, fields: map[string][]string{
			"id": {sub.ID}, "name": {sub.Name}, "network_id": {sub.NetworkID}, "cidr": {sub.CIDR},
			"ip_version": {strconv.Itoa(sub.IPVersion)}, "gateway_ip": {sub.Gateway}, "tenant_id": {owner},
			"project_id": {owner}, "enable_dhcp": {"true"}, "description": {""}}})
	}
	return neutronPage(c, "subnets", nq, items, func(id string) any { return s.wireSubnetLocked(s.subnets[id]) },
		func(id string) (int, any) { return errSubnetNotFound(id) })
}

func errSubnetNotFound(id string) (int, any) {
	return errNeutron(http.StatusNotFound, "SubnetNotFound", "Subnet "+id+" could not be found.")
}

func (s *Server) getSubnet(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.subnets[c.p["id"]]
	if sub == nil || sub.region != c.region {
		return errSubnetNotFound(c.p["id"])
	}
	return http.StatusOK, map[string]any{"subnet": s.wireSubnetLocked(sub)}
}

func (s *Server) wireSubnetLocked(sub *subnetState) wireSubnet {
	owner := s.networkOwnerLocked(s.networks[sub.NetworkID])
	w := wireSubnet{ID: sub.ID, Name: sub.Name, NetworkID: sub.NetworkID, TenantID: owner, ProjectID: owner,
		IPVersion: sub.IPVersion, CIDR: sub.CIDR, EnableDHCP: true, AllocationPools: poolsOf(sub),
		DNSNameservers: []string{}, HostRoutes: []any{}, ServiceTypes: []string{}, Tags: []string{},
		CreatedAt: stamp(sub.created), UpdatedAt: stamp(sub.created), RevisionNumber: 0}
	if sub.Gateway != "" {
		w.GatewayIP = strPtr(sub.Gateway)
	}
	if sub.IPVersion == 6 {
		w.IPv6AddressMode, w.IPv6RAMode = strPtr("slaac"), strPtr("slaac")
	}
	return w
}

// poolsOf is the subnet's allocation pools: every address but the
// network's own, IPv4's broadcast and the gateway, which splits the
// range in two when it lies inside it.
func poolsOf(sub *subnetState) []wireAllocationPool {
	first, last := sub.prefix.Addr().Next(), lastAddr(sub.prefix)
	if sub.prefix.Addr().Is4() {
		last = last.Prev()
	}
	gw := sub.gateway
	switch {
	case !gw.IsValid() || gw.Less(first) || last.Less(gw):
		return []wireAllocationPool{{Start: first.String(), End: last.String()}}
	case gw == first:
		return []wireAllocationPool{{Start: first.Next().String(), End: last.String()}}
	case gw == last:
		return []wireAllocationPool{{Start: first.String(), End: last.Prev().String()}}
	}
	return []wireAllocationPool{{Start: first.String(), End: gw.Prev().String()}, {Start: gw.Next().String(), End: last.String()}}
}

// lastAddr is a prefix's highest address.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
