package openstack

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

type lbState struct {
	octBase
	region, project                                  string
	vipAddress, vipPortID, vipSubnetID, vipNetworkID string
	vipOwned                                         bool      // Octavia made the VIP port, and deletes it with the load balancer
	additional                                       []FixedIP // additional VIPs, on the VIP port
	provider, flavorID, az                           string
	listeners, pools                                 []string // in creation order
	settleAt                                         time.Time
	fail                                             bool
}

// lbIn is a load balancer to create, from a request or a LoadBalancerSpec.
type lbIn struct {
	name, description                          string
	adminUp                                    bool
	tags                                       []string
	vipPort, vipNetwork, vipSubnet, vipAddress string
	additional                                 []FixedIP // additional_vips: a subnet, and maybe an address
	provider, flavorID, az, qos                string
	listeners                                  []listenerIn
	pools                                      []poolIn
}

var lbPOST = wsType{
	"name": str(255), "description": str(255), "admin_state_up": wsBoolAttr, "vip_address": wsIPAttr,
	"vip_port_id": wsUUIDAttr, "vip_subnet_id": wsUUIDAttr, "vip_network_id": wsUUIDAttr, "vip_qos_policy_id": wsUUIDAttr,
	"additional_vips": {kind: wsObjectList, sub: wsType{"subnet_id": must(wsUUIDAttr), "ip_address": wsIPAttr}},
	"project_id":      str(36), "tenant_id": str(36), "listeners": {kind: wsObjectList, sub: listenerSingle},
	"pools": {kind: wsObjectList, sub: poolSingle}, "provider": str(64), "tags": wsTagsAttr, "flavor_id": wsUUIDAttr,
	"availability_zone": str(255),
}

var lbPUT = wsType{"name": str(255), "description": str(255), "vip_qos_policy_id": wsUUIDAttr,
	"admin_state_up": wsBoolAttr, "tags": wsTagsAttr}

var lbFilters = []string{"id", "name", "description", "provisioning_status", "operating_status", "admin_state_up",
	"project_id", "vip_address", "vip_port_id", "vip_subnet_id", "vip_network_id", "vip_qos_policy_id", "provider",
	"flavor_id", "availability_zone"}

func lbInFrom(v wsVals) lbIn {
	in := lbIn{name: v.str("name"), description: v.str("description"), adminUp: v.boolOr("admin_state_up", true),
		tags: v.list("tags"), vipPort: v.str("vip_port_id"), vipNetwork: v.str("vip_network_id"),
		vipSubnet: v.str("vip_subnet_id"), vipAddress: v.str("vip_address"), provider: v.str("provider"),
		flavorID: v.str("flavor_id"), az: v.str("availability_zone"), qos: v.str("vip_qos_policy_id")}
	for _, a := range v.objs("additional_vips") {
		in.additional = append(in.additional, FixedIP{SubnetID: a.str("subnet_id"), IP: a.str("ip_address")})
	}
	for _, l := range v.objs("listeners") {
		in.listeners = append(in.listeners, listenerInFrom(l))
	}
	for _, p := range v.objs("pools") {
		in.pools = append(in.pools, poolInFrom(p))
	}
	return in
}

// lbLocked finds a load balancer of the call's region.
func (s *Server) lbLocked(c *call, id string) *lbState {
	lb := s.oct.lbs[id]
	if lb == nil || lb.region != c.region {
		return nil
	}
	return lb
}

func (s *Server) listLoadBalancers(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []octItem
	for _, lb := range s.oct.lbs {
		if lb.region != c.region {
			continue
		}
		f := baseFields(&lb.octBase, lb.project)
		f["operating_status"] = s.lbOperatingLocked(lb)
		f["vip_address"], f["vip_port_id"], f["vip_subnet_id"] = lb.vipAddress, lb.vipPortID, lb.vipSubnetID
		f["vip_network_id"], f["provider"], f["flavor_id"], f["availability_zone"] = lb.vipNetworkID, lb.provider, lb.flavorID, lb.az
		items = append(items, octItem{id: lb.ID, created: lb.created, fields: f, tags: lb.Tags,
			render: func() any { return s.wireLBLocked(lb, false) }})
	}
	return octaviaPage(c, "loadbalancers", lbFilters, items)
}

func (s *Server) getLoadBalancer(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := s.lbLocked(c, c.p["id"])
	if lb == nil {
		return errOctaviaNotFound("Load Balancer", c.p["id"])
	}
	return http.StatusOK, map[string]any{"loadbalancer": s.wireLBLocked(lb, false)}
}

// createLoadBalancer: POST /v2/lbaas/loadbalancers, with its listeners and
// pools when given (a "fully populated" load balancer). The answer is the
// whole tree, PENDING_CREATE and OFFLINE.
func (s *Server) createLoadBalancer(c *call) (int, any) {
	v, st, body := readOctaviaBody(c, "loadbalancer", lbPOST)
	if st != 0 {
		return st, body
	}
	in := lbInFrom(v.obj("loadbalancer"))
	s.mu.Lock()
	defer s.mu.Unlock()
	lb, st, body := s.createLBLocked(c.region, in)
	if st != 0 {
		return st, body
	}
	s.beginLocked(lb, ProvisioningPendingCreate)
	lb.updated = time.Time{}
	return http.StatusCreated, map[string]any{"loadbalancer": s.wireLBLocked(lb, true)}
}

// createLBLocked validates and creates a load balancer and its graph, in
// PENDING_CREATE, with its VIP port; the caller starts the operation.
func (s *Server) createLBLocked(region string, in lbIn) (*lbState, int, any) {
	plan, st, body := s.planVIPLocked(region, in)
	if st != 0 {
		return nil, st, body
	}
	if in.qos != "" {
		st, body := errOctaviaValidation("VIP QoS policy is not allowed in this deployment.")
		return nil, st, body
	}
	if in.flavorID != "" {
		if f := s.flavorLocked(in.flavorID); f == nil || !f.enabled {
			st, body := errOctaviaValidation("Invalid flavor_id.")
			return nil, st, body
		}
	}
	provider := in.provider
	if provider == "" {
		provider = s.defaultProviderLocked()
	} else if !slices.ContainsFunc(s.oct.providers, func(p LoadBalancerProvider) bool { return p.Name == provider }) {
		st, body := errWSME(http.StatusBadRequest, "Provider '"+provider+"' is not enabled.")
		return nil, st, body
	}
	lb := &lbState{octBase: s.newBaseLocked(in.name, in.description, in.adminUp, in.tags), region: region,
		project: s.account.ProjectID, provider: provider, flavorID: in.flavorID, az: in.az}
	lb.vipNetworkID = plan.network.ID
	if plan.port != nil {
		lb.vipPortID, lb.vipSubnetID, lb.vipAddress = plan.port.ID, plan.subnet.ID, plan.address.String()
		lb.additional = slices.Clone(plan.additional)
	} else {
		p, st, body := s.allocateVIPLocked(lb, plan)
		if st != 0 {
			return nil, st, body
		}
		lb.vipPortID, lb.vipSubnetID, lb.vipAddress, lb.vipOwned = p.ID, plan.subnet.ID, p.FixedIPs[0].IP, true
		lb.additional = slices.Clone(p.FixedIPs[1:])
	}
	graph, st, body := s.planGraphLocked(lb, in.listeners, in.pools)
	if st != 0 {
		if p := s.ports[lb.vipPortID]; p != nil && lb.vipOwned {
			s.deletePortLocked(p)
		}
		return nil, st, body
	}
	s.oct.lbs[lb.ID] = lb
	s.buildGraphLocked(lb, graph)
	return lb, 0, nil
}

// vipPlan is where a VIP goes: an existing port, or a new one on subnet
// (at address, if given).
type vipPlan struct {
	port    *portState
	network *networkState
	subnet  *subnetState
	address netip.Addr
	// additional are the additional VIPs' subnets and addresses (if
	// given), on the VIP network.
	additional []FixedIP
}

// planVIPLocked checks the VIP as _validate_vip_request_object does:
// a port, else a network (and maybe a subnet or address of it), else a
// subnet.
func (s *Server) planVIPLocked(region string, in lbIn) (vipPlan, int, any) {
	var plan vipPlan
	fail := func(st int, body any) (vipPlan, int, any) { return vipPlan{}, st, body }
	if in.vipAddress != "" {
		plan.address = netip.MustParseAddr(in.vipAddress)
	}
	subnetOf := func(id string) *subnetState {
		if sub := s.subnets[id]; sub != nil && sub.region == region {
			return sub
		}
		return nil
	}
	switch {
	case in.vipPort != "":
		p := s.ports[in.vipPort]
		if p == nil || p.Region != region || p.project == "" {
			return fail(errInvalidSubresource("Port", in.vipPort))
		}
		if p.DeviceID != "" {
			return fail(errOctaviaValidation(fmt.Sprintf("Port %s is already used by device %s ", p.ID, p.DeviceID)))
		}
		plan.port, plan.network = p, s.networks[p.NetworkID]
		var found *FixedIP
		for k, f := range p.FixedIPs {
			switch {
			case in.vipSubnet != "" && f.SubnetID == in.vipSubnet,
				in.vipSubnet == "" && plan.address.IsValid() && netip.MustParseAddr(f.IP) == plan.address,
				in.vipSubnet == "" && !plan.address.IsValid() && len(p.FixedIPs) == 1:
				found = &p.FixedIPs[k]
			}
			if found != nil {
				break
			}
		}
		switch {
		case in.vipSubnet != "" && subnetOf(in.vipSubnet) == nil:
			return fail(errInvalidSubresource("Subnet", in.vipSubnet))
		case found == nil && in.vipSubnet != "":
			return fail(errOctaviaValidation("No VIP address found on the specified VIP port within the specified subnet."))
		case found == nil && plan.address.IsValid():
			return fail(errOctaviaValidation("Specified VIP address not found on the specified VIP port."))
		case found == nil:
			return fail(errOctaviaValidation("VIP port's subnet could not be determined. Please specify either a VIP subnet or address."))
		}
		plan.subnet, plan.address = s.subnets[found.SubnetID], netip.MustParseAddr(found.IP)
	case in.vipNetwork != "":
		n := s.networks[in.vipNetwork]
		if n == nil || n.Region != region {
			return fail(errInvalidSubresource("Network", in.vipNetwork))
		}
		plan.network = n
		switch {
		case in.vipSubnet != "":
			if !slices.Contains(n.subnets, in.vipSubnet) {
				return fail(errInvalidSubresource("Subnet", in.vipSubnet))
			}
			plan.subnet = s.subnets[in.vipSubnet]
		case plan.address.IsValid():
			for _, id := range n.subnets {
				if s.subnets[id].prefix.Contains(plan.address) {
					plan.subnet = s.subnets[id]
					break
				}
			}
			if plan.subnet == nil {
				return fail(errOctaviaValidation("Supplied network does not contain a subnet for VIP address specified."))
			}
		default:
			if len(n.subnets) == 0 {
				return fail(errOctaviaValidation("Supplied network does not contain a subnet."))
			}
			// The first subnet with room for the VIP and an amphora's
			// port, preferring IPv4.
			for _, id := range n.subnets {
				sub := s.subnets[id]
				if freeAddrs(sub, 2) < 2 {
					continue
				}
				if plan.subnet == nil || plan.subnet.IPVersion != 4 && sub.IPVersion == 4 {
					plan.subnet = sub
				}
			}
			if plan.subnet == nil {
				return fail(errOctaviaValidation("Subnet(s) in the supplied network do not contain enough available IPs."))
			}
		}
	case in.vipSubnet != "":
		sub := subnetOf(in.vipSubnet)
		if sub == nil {
			return fail(errInvalidSubresource("Subnet", in.vipSubnet))
		}
		plan.subnet, plan.network = sub, s.networks[sub.NetworkID]
	default:
		return fail(errOctaviaValidation("VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id."))
	}
	seen := map[string]bool{plan.subnet.ID: true}
	for _, a := range in.additional {
		if seen[a.SubnetID] {
			return fail(errOctaviaValidation("Duplicate VIP subnet(s) specified. Only one IP can be bound per subnet."))
		}
		seen[a.SubnetID] = true
		sub := subnetOf(a.SubnetID)
		if sub == nil {
			return fail(errOctaviaValidation("Subnet " + a.SubnetID + " not found"))
		}
		if sub.NetworkID != plan.network.ID {
			return fail(errOctaviaValidation("All VIP subnets must belong to the same network."))
		}
	}
	plan.additional = in.additional
	return plan, 0, nil
}

// freeAddrs counts a subnet's free addresses, up to enough.
func freeAddrs(sub *subnetState, enough int) int {
	n := 0
	broadcast := lastAddr(sub.prefix)
	for a := sub.prefix.Addr().Next(); sub.prefix.Contains(a) && n < enough; a = a.Next() {
		if !sub.used[a] && !(a.Is4() && a == broadcast) {
			n++
		}
	}
	return n
}

// allocateVIPLocked makes the VIP port as Octavia's network driver does:
// "octavia-lb-<id>", owned by "Octavia", down, on the VIP subnet. Neutron's
// refusals come back in Neutron's words, with its status.
func (s *Server) allocateVIPLocked(lb *lbState, plan vipPlan) (*portState, int, any) {
	wanted := append([]FixedIP{{SubnetID: plan.subnet.ID}}, plan.additional...)
	if plan.address.IsValid() {
		wanted[0].IP = plan.address.String()
	}
	var got []FixedIP
	release := func() {
		for _, f := range got {
			delete(s.subnets[f.SubnetID].used, netip.MustParseAddr(f.IP))
		}
	}
	for _, w := range wanted {
		sub := s.subnets[w.SubnetID]
		var ip netip.Addr
		if w.IP != "" {
			ip = netip.MustParseAddr(w.IP)
			if !sub.prefix.Contains(ip) {
				release()
				st, body := errWSME(http.StatusBadRequest, "IP address "+w.IP+" is not a valid IP for the specified subnet.")
				return nil, st, body
			}
			if sub.used[ip] {
				release()
				st, body := errWSME(http.StatusConflict, "IP address "+w.IP+" already allocated in subnet "+sub.ID)
				return nil, st, body
			}
		}
		a, err := sub.allocate(ip)
		if err != nil {
			release()
			st, body := errWSME(http.StatusConflict, "No more IP addresses available on network "+plan.network.ID+".")
			return nil, st, body
		}
		got = append(got, FixedIP{SubnetID: sub.ID, IP: a.String()})
	}
	p := s.makePortLocked(lb.region, plan.network.ID, "octavia-lb-"+lb.ID, "")
	p.FixedIPs = got
	p.DeviceID, p.DeviceOwner, p.AdminStateUp = "lb-"+lb.ID, deviceOwnerOctavia, false
	return p, 0, nil
}

const deviceOwnerOctavia = "Octavia"

// updateLoadBalancer: PUT /v2/lbaas/loadbalancers/{id}: the new values at
// once, and PENDING_UPDATE.
func (s *Server) updateLoadBalancer(c *call) (int, any) {
	v, st, body := readOctaviaBody(c, "loadbalancer", lbPUT)
	if st != 0 {
		return st, body
	}
	u := v.obj("loadbalancer")
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := s.lbLocked(c, c.p["id"])
	if lb == nil {
		return errOctaviaNotFound("Load Balancer", c.p["id"])
	}
	if u.has("vip_qos_policy_id") {
		return errOctaviaValidation("VIP QoS policy is not allowed in this deployment.")
	}
	if lb.prov != ProvisioningActive {
		return errLBPendingState(lb.prov, lb.ID)
	}
	applyBase(&lb.octBase, u)
	s.beginLocked(lb, ProvisioningPendingUpdate)
	return http.StatusOK, map[string]any{"loadbalancer": s.wireLBLocked(lb, false)}
}

// applyBase sets the attributes every object's PUT takes; null clears.
func applyBase(b *octBase, u wsVals) {
	if u.has("name") {
		b.Name = u.str("name")
	}
	if u.has("description") {
		b.Description = u.str("description")
	}
	if u.has("admin_state_up") {
		b.AdminUp = u.boolOr("admin_state_up", b.AdminUp)
	}
	if u.has("tags") {
		b.Tags = append([]string{}, u.list("tags")...)
	}
}

// deleteLoadBalancer: DELETE /v2/lbaas/loadbalancers/{id}[?cascade=true].
// Without cascade a load balancer with listeners or pools is refused.
func (s *Server) deleteLoadBalancer(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := s.lbLocked(c, c.p["id"])
	if lb == nil {
		return errOctaviaNotFound("Load Balancer", c.p["id"])
	}
	cascade := boolFromString(c.r.URL.Query().Get("cascade"))
	if (len(lb.listeners) > 0 || len(lb.pools) > 0) && !cascade {
		return errOctaviaValidation("Cannot delete Load Balancer " + lb.ID + " - it has children")
	}
	if lb.prov != ProvisioningActive && lb.prov != ProvisioningError {
		return errLBPendingState(lb.prov, lb.ID)
	}
	s.beginLocked(lb, ProvisioningPendingDelete)
	return http.StatusNoContent, nil
}

// loadBalancerStatus: GET /v2/lbaas/loadbalancers/{id}/status, the
// status tree.
func (s *Server) loadBalancerStatus(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := s.lbLocked(c, c.p["id"])
	if lb == nil {
		return errOctaviaNotFound("Load Balancer", c.p["id"])
	}
	w := wireStatusLB{ID: lb.ID, Name: lb.Name, OperatingStatus: s.lbOperatingLocked(lb), ProvisioningStatus: lb.prov,
		Listeners: []wireStatusListener{}}
	for _, lid := range lb.listeners {
		l := s.oct.listeners[lid]
		wl := wireStatusListener{ID: l.ID, Name: l.Name, OperatingStatus: s.listenerOperatingLocked(l),
			ProvisioningStatus: l.prov, Pools: []wireStatusPool{}}
		if p := s.oct.pools[l.defaultPool]; p != nil {
			wp := wireStatusPool{ID: p.ID, Name: p.Name, ProvisioningStatus: p.prov,
				OperatingStatus: s.poolOperatingLocked(p), Members: []wireStatusMember{}}
			if hm := s.oct.monitors[p.monitor]; hm != nil {
				wp.HealthMonitor = &wireStatusMonitor{ID: hm.ID, Name: hm.Name, Type: hm.typ,
					ProvisioningStatus: hm.prov, OperatingStatus: s.monitorOperatingLocked(hm)}
			}
			for _, mid := range p.members {
				m := s.oct.members[mid]
				wp.Members = append(wp.Members, wireStatusMember{ID: m.ID, Name: m.Name,
					OperatingStatus: s.memberOperatingLocked(m), ProvisioningStatus: m.prov, Address: m.address,
					ProtocolPort: m.port})
			}
			wl.Pools = append(wl.Pools, wp)
		}
		w.Listeners = append(w.Listeners, wl)
	}
	return http.StatusOK, map[string]any{"statuses": map[string]any{"loadbalancer": w}}
}

// checkLBMutableLocked refuses a change of a child while the load
// balancer is not ACTIVE.
func checkLBMutableLocked(lb *lbState) (int, any) {
	if lb.prov != ProvisioningActive {
		return errImmutable("Load Balancer", lb.ID)
	}
	return 0, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
