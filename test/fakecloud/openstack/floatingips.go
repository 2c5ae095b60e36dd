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

// Neutron's floating IPs: an address of an external network, associated
// with a fixed IPv4 address of a port when a router joins the port's
// subnet to that network (the router's gateway), as Neutron checks. The
// port's server lists the address as "floating" while associated.
// Associated floating IPs are ACTIVE at once, free ones DOWN.

// FloatingIPSpec describes a floating IP for AddFloatingIP.
type FloatingIPSpec struct {
	Network string // ID or name of an external network
	Region  string // default the first region
	// Address defaults to the next free one of the network's first IPv4
	// subnet.
	Address string
	// Port (an ID) associates the floating IP with the port's FixedIP,
	// by default its only IPv4 address. The router is not checked.
	Port        string
	FixedIP     string
	Description string
	Tags        []string
}

// CloudFloatingIP is a floating IP as the fake holds it.
type CloudFloatingIP struct {
	ID, Region, NetworkID, Address string
	PortID, FixedIP, RouterID      string // "" when not associated
	Status                         string
	Description                    string
	Tags                           []string
}

type fipState struct {
	ID, region, networkID, subnetID, address string
	portID, fixedIP, routerID                string
	description                              string
	tags                                     []string
	created, updated                         time.Time
	revision                                 int
}

func (f *fipState) status() string {
	if f.portID != "" {
		return PortActive
	}
	return PortDown
}

// AddFloatingIP allocates a floating IP, associated with spec.Port if
// given, and returns its ID. It panics on what Neutron would refuse: a
// mistake in the calling test.
func (s *Server) AddFloatingIP(spec FloatingIPSpec) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	region := s.regionLocked(spec.Region)
	n := s.networkByRefLocked(region, spec.Network)
	if n == nil || !n.External {
		panic("openstack fake: no external network " + spec.Network + " in region " + region)
	}
	f, st, body := s.newFloatingIPLocked(region, n, "", spec.Address)
	if st == 0 && spec.Port != "" {
		p := s.ports[spec.Port]
		if p == nil || p.Region != region {
			s.releaseFloatingIPLocked(f)
			panic("openstack fake: no port " + spec.Port + " in region " + region)
		}
		st, body = s.associateLocked(f, p, spec.FixedIP, false)
		if st != 0 {
			s.releaseFloatingIPLocked(f)
		}
	}
	if st != 0 {
		panic(fmt.Sprintf("openstack fake: AddFloatingIP: %d %s", st, body.(*neutronError).NeutronError.Message))
	}
	f.description, f.tags = spec.Description, tagsOf(spec.Tags)
	return f.ID
}

// FloatingIP returns a floating IP by ID.
func (s *Server) FloatingIP(id string) (CloudFloatingIP, bool) {
	s.settle() // a load balancer's deletion frees its VIP's
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.fips[id]
	if !ok {
		return CloudFloatingIP{}, false
	}
	return cloudFIP(f), true
}

// FloatingIPs returns every floating IP of every region, oldest first.
func (s *Server) FloatingIPs() []CloudFloatingIP {
	s.settle()
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := slices.Collect(maps.Values(s.fips))
	slices.SortFunc(fs, func(a, b *fipState) int { return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.ID, b.ID)) })
	var out []CloudFloatingIP
	for _, f := range fs {
		out = append(out, cloudFIP(f))
	}
	return out
}

func cloudFIP(f *fipState) CloudFloatingIP {
	return CloudFloatingIP{ID: f.ID, Region: f.region, NetworkID: f.networkID, Address: f.address, PortID: f.portID,
		FixedIP: f.fixedIP, RouterID: f.routerID, Status: f.status(), Description: f.description, Tags: slices.Clone(f.tags)}
}

// newFloatingIPLocked takes an address of the external network: address
// if given, else the next free one of subnetID, or of its first IPv4
// subnet.
func (s *Server) newFloatingIPLocked(region string, n *networkState, subnetID, address string) (*fipState, int, any) {
	fail := func(st int, body any) (*fipState, int, any) { return nil, st, body }
	var sub *subnetState
	var ip netip.Addr
	switch {
	case address != "":
		a, err := netip.ParseAddr(address)
		if err != nil {
			return fail(neutronInvalid("floating_ip_address", "'"+address+"' is not a valid IP address"))
		}
		for _, id := range n.subnets {
			if s.subnets[id].prefix.Contains(a) && (subnetID == "" || id == subnetID) {
				sub = s.subnets[id]
			}
		}
		if sub == nil {
			return fail(errNeutron(http.StatusBadRequest, "InvalidIpForNetwork", "IP address "+address+
				" is not a valid IP for any of the subnets on the specified network."))
		}
		if sub.used[a] {
			return fail(errNeutron(http.StatusConflict, "IpAddressAlreadyAllocated",
				"IP address "+a.String()+" already allocated in subnet "+sub.ID))
		}
		ip = a
	case subnetID != "":
		if !slices.Contains(n.subnets, subnetID) {
			return fail(errNeutron(http.StatusBadRequest, "BadRequest", "Bad floatingip request: Subnet "+subnetID+
				" does not belong to network "+n.ID+"."))
		}
		sub = s.subnets[subnetID]
	default:
		for _, id := range n.subnets {
			if s.subnets[id].IPVersion == 4 {
				sub = s.subnets[id]
				break
			}
		}
		if sub == nil {
			return fail(errNeutron(http.StatusBadRequest, "BadRequest", "Bad floatingip request: Network "+n.ID+
				" does not contain any IPv4 subnet."))
		}
	}
	a, err := sub.allocate(ip)
	if err != nil {
		return fail(errNeutron(http.StatusConflict, "IpAddressGenerationFailure", "No more IP addresses available on network "+n.ID+"."))
	}
	now := s.now()
	f := &fipState{ID: newUUID(), region: region, networkID: n.ID, subnetID: sub.ID, address: a.String(),
		tags: []string{}, created: now, updated: now, revision: 0}
	s.fips[f.ID] = f
	return f, 0, nil
}

func (s *Server) releaseFloatingIPLocked(f *fipState) {
	s.disassociateLocked(f)
	if sub := s.subnets[f.subnetID]; sub != nil {
		delete(sub.used, netip.MustParseAddr(f.address))
	}
	delete(s.fips, f.ID)
}

// associateLocked binds f to one of the port's fixed IPv4 addresses, as
// Neutron's _get_assoc_data does; withRouter also asks for a router
// between the port's subnet and the floating network.
func (s *Server) associateLocked(f *fipState, p *portState, fixedIP string, withRouter bool) (int, any) {
	bad := func(msg string) (int, any) {
		return errNeutron(http.StatusBadRequest, "BadRequest", "Bad floatingip request: "+msg+".")
	}
	if p.project != s.account.ProjectID {
		return bad("Cannot create floating IP and bind it to Port " + p.ID + ", since that port is owned by a different tenant")
	}
	var chosen *FixedIP
	if fixedIP != "" {
		for k, x := range p.FixedIPs {
			if x.IP == fixedIP {
				chosen = &p.FixedIPs[k]
			}
		}
		if chosen == nil {
			return bad("Port " + p.ID + " does not have fixed ip " + fixedIP)
		}
	} else {
		var v4 []FixedIP
		for _, x := range p.FixedIPs {
			if ipVersion(x.IP) == 4 {
				v4 = append(v4, x)
			}
		}
		switch len(v4) {
		case 0:
			return bad("Cannot add floating IP to port " + p.ID + " that has no fixed IPv4 addresses")
		case 1:
			chosen = &v4[0]
		default:
			return bad("Port " + p.ID + " has multiple fixed IPv4 addresses.  Must provide a specific IPv4 address " +
				"when assigning a floating IP")
		}
	}
	for _, o := range s.fips {
		if o != f && o.portID == p.ID && o.fixedIP == chosen.IP && o.networkID == f.networkID {
			return errNeutron(http.StatusConflict, "FloatingIPPortAlreadyAssociated", fmt.Sprintf("Cannot associate "+
				"floating IP %s (%s) with port %s using fixed IP %s, as that fixed IP already has a floating IP on "+
				"external network %s.", f.address, f.ID, p.ID, chosen.IP, f.networkID))
		}
	}
	router := s.fipRouterLocked(f.region, f.networkID, chosen.SubnetID)
	if router == "" && withRouter {
		return errNeutron(http.StatusNotFound, "ExternalGatewayForFloatingIPNotFound", fmt.Sprintf("External network %s "+
			"is not reachable from subnet %s.  Therefore, cannot associate Port %s with a Floating IP.",
			f.networkID, chosen.SubnetID, p.ID))
	}
	s.disassociateLocked(f)
	f.portID, f.fixedIP, f.routerID = p.ID, chosen.IP, router
	p.FloatingIP = f.address
	return 0, nil
}

// fipRouterLocked is a router of the region with an interface on subnet
// and its gateway on the external network, or "".
func (s *Server) fipRouterLocked(region, network, subnet string) string {
	var ids []string
	for _, r := range s.routers {
		if r.Region == region && r.ExternalNetworkID == network && slices.Contains(r.Subnets, subnet) {
			ids = append(ids, r.ID)
		}
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

func (s *Server) disassociateLocked(f *fipState) {
	if p := s.ports[f.portID]; p != nil && p.FloatingIP == f.address {
		p.FloatingIP = ""
	}
	f.portID, f.fixedIP, f.routerID = "", "", ""
}

// floatingForPortLocked backs a PortSpec's FloatingIP with a floating IP
// when an external network of the region has the address; else the
// address is Nova's only.
func (s *Server) floatingForPortLocked(p *portState, address string) error {
	a := netip.MustParseAddr(address)
	for _, n := range s.networks {
		if n.Region != p.Region || !n.External {
			continue
		}
		for _, id := range n.subnets {
			if s.subnets[id].prefix.Contains(a) {
				f, st, body := s.newFloatingIPLocked(p.Region, n, id, address)
				if st == 0 {
					st, body = s.associateLocked(f, p, "", false)
				}
				if st != 0 {
					if f != nil {
						s.releaseFloatingIPLocked(f)
					}
					return fmt.Errorf("floating IP %s: %s", address, body.(*neutronError).NeutronError.Message)
				}
				return nil
			}
		}
	}
	p.FloatingIP = address
	return nil
}

func (s *Server) registerFloatingIPs() {
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/floatingips", FloatingIPsList, s.listFloatingIPs)
	s.handle(svcNetwork, http.MethodPost, "/network/v2.0/floatingips", FloatingIPsCreate, s.createFloatingIP)
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/floatingips/{id}", FloatingIPsGet, s.getFloatingIP)
	s.handle(svcNetwork, http.MethodPut, "/network/v2.0/floatingips/{id}", FloatingIPsUpdate, s.updateFloatingIP)
	s.handle(svcNetwork, http.MethodDelete, "/network/v2.0/floatingips/{id}", FloatingIPsDelete, s.deleteFloatingIP)
}

var fipFilters = []string{"id", "floating_ip_address", "floating_network_id", "router_id", "port_id", "fixed_ip_address",
	"status", "tenant_id", "project_id", "description", "revision_number"}

func (s *Server) listFloatingIPs(c *call) (int, any) {
	nq, st, body := parseNeutronQuery(c.r, fipFilters)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pid := s.account.ProjectID
	var items []neutronItem
	for _, f := range s.fips {
		if f.region != c.region {
			continue
		}
		items = append(items, neutronItem{id: f.ID, tags: f.tags, fields: map[string][]string{"id": {f.ID},
			"floating_ip_address": {f.address}, "floating_network_id": {f.networkID}, "router_id": {f.routerID},
			"port_id": {f.portID}, "fixed_ip_address": {f.fixedIP}, "status": {f.status()}, "tenant_id": {pid},
			"project_id": {pid}, "description": {f.description}, "revision_number": {strconv.Itoa(f.revision)}}})
	}
	return neutronPage(c, "floatingips", nq, items, func(id string) any { return s.wireFIPLocked(s.fips[id]) },
		func(id string) (int, any) { return errFIPNotFound(id) })
}

func errFIPNotFound(id string) (int, any) {
	return errNeutron(http.StatusNotFound, "FloatingIPNotFound", "Floating IP "+id+" could not be found")
}

func (s *Server) fipLocked(c *call) *fipState {
	if f := s.fips[c.p["id"]]; f != nil && f.region == c.region {
		return f
	}
	return nil
}

func (s *Server) getFloatingIP(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fipLocked(c)
	if f == nil {
		return errFIPNotFound(c.p["id"])
	}
	return http.StatusOK, map[string]any{"floatingip": s.wireFIPLocked(f)}
}

var fipAttrs = neutronAttrs{
	post: []string{"floating_network_id", "floating_ip_address", "subnet_id", "port_id", "fixed_ip_address", "description"},
	put:  []string{"port_id", "fixed_ip_address", "description"},
	readOnly: []string{"id", "router_id", "status", "tags", "created_at", "updated_at", "revision_number",
		"floating_network_id", "floating_ip_address", "subnet_id"},
	required: []string{"floating_network_id"},
}

// createFloatingIP: POST /v2.0/floatingips.
func (s *Server) createFloatingIP(c *call) (int, any) {
	b, st, body := s.readNeutronBody(c, "floatingip", fipAttrs, true)
	if st != 0 {
		return st, body
	}
	if st, body := b.checkString("description", 255); st != 0 {
		return st, body
	}
	netID, _ := b.str("floating_network_id")
	subnetID, _ := b.str("subnet_id")
	address, _ := b.str("floating_ip_address")
	portID, _ := b.str("port_id")
	fixedIP, _ := b.str("fixed_ip_address")
	desc, _ := b.str("description")
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.networks[netID]
	if n == nil || n.Region != c.region {
		return errNetworkNotFound(netID)
	}
	if !n.External {
		return errNeutron(http.StatusBadRequest, "BadRequest", "Bad floatingip request: Network "+netID+
			" is not a valid external network.")
	}
	var p *portState
	if portID != "" {
		if p = s.ports[portID]; p == nil || p.Region != c.region || p.project == "" {
			return errPortNotFound(portID)
		}
	}
	f, st, body := s.newFloatingIPLocked(c.region, n, subnetID, address)
	if st != 0 {
		return st, body
	}
	if p != nil {
		if st, body := s.associateLocked(f, p, fixedIP, true); st != 0 {
			s.releaseFloatingIPLocked(f)
			return st, body
		}
	}
	f.description = desc
	return http.StatusCreated, map[string]any{"floatingip": s.wireFIPLocked(f)}
}

// updateFloatingIP: PUT /v2.0/floatingips/{id}: port_id associates (or,
// null, disassociates).
func (s *Server) updateFloatingIP(c *call) (int, any) {
	b, st, body := s.readNeutronBody(c, "floatingip", fipAttrs, false)
	if st != 0 {
		return st, body
	}
	if st, body := b.checkString("description", 255); st != 0 {
		return st, body
	}
	rev, constrained, st, body := ifMatchRevision(c.r)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fipLocked(c)
	if f == nil {
		return errFIPNotFound(c.p["id"])
	}
	if constrained && rev != f.revision {
		return errNeutron(http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
			fmt.Sprintf("Constrained to %d, but current revision is %d", rev, f.revision))
	}
	if b.has("port_id") {
		portID, _ := b.str("port_id")
		fixedIP, _ := b.str("fixed_ip_address")
		if portID == "" {
			s.disassociateLocked(f)
		} else {
			p := s.ports[portID]
			if p == nil || p.Region != c.region || p.project == "" {
				return errPortNotFound(portID)
			}
			if st, body := s.associateLocked(f, p, fixedIP, true); st != 0 {
				return st, body
			}
		}
	}
	if b.has("description") {
		f.description, _ = b.str("description")
	}
	f.revision++
	f.updated = s.now()
	return http.StatusOK, map[string]any{"floatingip": s.wireFIPLocked(f)}
}

func (s *Server) deleteFloatingIP(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fipLocked(c)
	if f == nil {
		return errFIPNotFound(c.p["id"])
	}
	s.releaseFloatingIPLocked(f)
	return http.StatusNoContent, nil
}

type wireFloatingIP struct {
	ID                string   `json:"id"`
	TenantID          string   `json:"tenant_id"`
	ProjectID         string   `json:"project_id"`
	FloatingNetworkID string   `json:"floating_network_id"`
	FloatingIPAddress string   `json:"floating_ip_address"`
	RouterID          *string  `json:"router_id"`
	PortID            *string  `json:"port_id"`
	FixedIPAddress    *string  `json:"fixed_ip_address"`
	Status            string   `json:"status"`
	Description       string   `json:"description"`
	Tags              []string `json:"tags"`
	CreatedAt         string   `json:"created_at"`
	UpdatedAt         string   `json:"updated_at"`
	RevisionNumber    int      `json:"revision_number"`
}

func (s *Server) wireFIPLocked(f *fipState) wireFloatingIP {
	pid := s.account.ProjectID
	w := wireFloatingIP{ID: f.ID, TenantID: pid, ProjectID: pid, FloatingNetworkID: f.networkID, FloatingIPAddress: f.address,
		Status: f.status(), Description: f.description, Tags: tagsOf(f.tags), CreatedAt: stamp(f.created),
		UpdatedAt: stamp(f.updated), RevisionNumber: f.revision}
	if f.portID != "" {
		w.PortID, w.FixedIPAddress = strPtr(f.portID), strPtr(f.fixedIP)
	}
	if f.routerID != "" {
		w.RouterID = strPtr(f.routerID)
	}
	return w
}
