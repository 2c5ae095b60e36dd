package openstack

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// LoadBalancerSpec describes a load balancer for AddLoadBalancer, which
// makes it ACTIVE with its listeners, pools, members and monitors, as a
// user's would be once provisioned. Zero fields get defaults.
type LoadBalancerSpec struct {
	Name        string
	Description string
	Region      string // default the first region
	// VipNetwork (ID or name) puts the VIP on the network's first IPv4
	// subnet; VipSubnet (an ID) on that subnet; VipAddress at that
	// address. One of the first two is needed.
	VipNetwork string
	VipSubnet  string
	VipAddress string
	Provider   string // default "amphora"
	Tags       []string
	Disabled   bool // admin_state_up false
	Listeners  []ListenerSpec
	// Pools are pools no listener has as its default.
	Pools []PoolSpec
}

// ListenerSpec describes a listener of a LoadBalancerSpec.
type ListenerSpec struct {
	Name     string
	Protocol string // default "TCP"
	Port     int
	// ConnectionLimit 0 is none (Octavia's -1).
	ConnectionLimit int
	AllowedCIDRs    []string
	InsertHeaders   map[string]string
	// Timeouts in milliseconds; 0 takes Octavia's defaults.
	TimeoutClientData, TimeoutMemberConnect, TimeoutMemberData, TimeoutTCPInspect int
	Tags                                                                          []string
	DefaultPool                                                                   *PoolSpec
}

// PoolSpec describes a pool of a LoadBalancerSpec.
type PoolSpec struct {
	Name               string // default "pool-<n>"
	Protocol           string // default "TCP"
	LBAlgorithm        string // default "ROUND_ROBIN"
	SessionPersistence string // "", "SOURCE_IP", "HTTP_COOKIE" or "APP_COOKIE"
	CookieName         string
	Tags               []string
	Members            []MemberSpec
	Monitor            *MonitorSpec
}

// MemberSpec describes a pool member.
type MemberSpec struct {
	Name     string
	Address  string
	Port     int
	Weight   int    // default 1
	SubnetID string // default none
	Backup   bool
	Tags     []string
	// OperatingStatus is what the monitor reports (see
	// SetMemberOperatingStatus); default ONLINE.
	OperatingStatus string
}

// MonitorSpec describes a pool's health monitor.
type MonitorSpec struct {
	Name                                       string
	Type                                       string // default "TCP"
	Delay, Timeout, MaxRetries, MaxRetriesDown int    // defaults 5, 3, 3, 3
	HTTPMethod, URLPath, ExpectedCodes         string // HTTP(S): default GET, /, 200
	Tags                                       []string
}

// CloudLoadBalancer is a load balancer as the fake holds it.
type CloudLoadBalancer struct {
	ID, Name, Description, Region, ProjectID         string
	VipAddress, VipPortID, VipSubnetID, VipNetworkID string
	Provider, FlavorID, AvailabilityZone             string
	AdminStateUp                                     bool
	ProvisioningStatus, OperatingStatus              string
	Tags                                             []string
	Listeners                                        []CloudListener // in creation order
	Pools                                            []CloudPool
}

// CloudListener is a listener as the fake holds it.
type CloudListener struct {
	ID, Name, Protocol                      string
	Port, ConnectionLimit                   int
	DefaultPoolID                           string
	AllowedCIDRs                            []string
	InsertHeaders                           map[string]string
	TimeoutClientData, TimeoutMemberData    int
	TimeoutMemberConnect, TimeoutTCPInspect int
	AdminStateUp                            bool
	Tags                                    []string
	ProvisioningStatus, OperatingStatus     string
}

// CloudPool is a pool as the fake holds it.
type CloudPool struct {
	ID, Name, Protocol, LBAlgorithm     string
	ListenerIDs                         []string
	SessionPersistence, CookieName      string
	AdminStateUp                        bool
	Tags                                []string
	Members                             []CloudMember
	Monitor                             *CloudMonitor
	ProvisioningStatus, OperatingStatus string
}

// CloudMember is a pool member as the fake holds it.
type CloudMember struct {
	ID, Name, Address                   string
	Port, Weight                        int
	SubnetID                            string
	Backup, AdminStateUp                bool
	Tags                                []string
	ProvisioningStatus, OperatingStatus string
}

// CloudMonitor is a health monitor as the fake holds it.
type CloudMonitor struct {
	ID, Name, Type                             string
	Delay, Timeout, MaxRetries, MaxRetriesDown int
	HTTPMethod, URLPath, ExpectedCodes         string
	AdminStateUp                               bool
	Tags                                       []string
	ProvisioningStatus, OperatingStatus        string
}

// AddLoadBalancer creates an ACTIVE load balancer, with its VIP port,
// listeners, pools, members and monitors, and returns its ID. It panics
// on what Octavia would refuse (an unknown network, a taken address,
// listeners on one port...): mistakes in the calling test.
func (s *Server) AddLoadBalancer(spec LoadBalancerSpec) string {
	s.settle()
	s.mu.Lock()
	defer s.mu.Unlock()
	region := s.regionLocked(spec.Region)
	in := lbIn{name: spec.Name, description: spec.Description, adminUp: !spec.Disabled, tags: spec.Tags,
		vipSubnet: spec.VipSubnet, vipAddress: spec.VipAddress, provider: spec.Provider}
	if spec.VipNetwork != "" {
		n := s.networkByRefLocked(region, spec.VipNetwork)
		if n == nil {
			panic("openstack fake: no network " + spec.VipNetwork + " in region " + region)
		}
		in.vipNetwork = n.ID
	}
	npool := 0
	poolV := func(p PoolSpec) wsVals {
		npool++
		v := wsVals{"name": cmp.Or(p.Name, fmt.Sprintf("pool-%d", npool)), "protocol": cmp.Or(p.Protocol, "TCP"),
			"lb_algorithm": cmp.Or(p.LBAlgorithm, "ROUND_ROBIN"), "tags": p.Tags}
		if p.SessionPersistence != "" {
			sp := wsVals{"type": p.SessionPersistence}
			if p.CookieName != "" {
				sp["cookie_name"] = p.CookieName
			}
			v["session_persistence"] = sp
		}
		var ms []wsVals
		for _, m := range p.Members {
			mv := wsVals{"name": m.Name, "address": m.Address, "protocol_port": m.Port, "weight": cmp.Or(m.Weight, 1),
				"backup": m.Backup, "tags": m.Tags}
			if m.SubnetID != "" {
				mv["subnet_id"] = m.SubnetID
			}
			ms = append(ms, mv)
		}
		v["members"] = ms
		if hm := p.Monitor; hm != nil {
			hv := wsVals{"name": hm.Name, "type": cmp.Or(hm.Type, "TCP"), "delay": cmp.Or(hm.Delay, 5),
				"timeout": cmp.Or(hm.Timeout, 3), "max_retries": cmp.Or(hm.MaxRetries, 3),
				"max_retries_down": cmp.Or(hm.MaxRetriesDown, 3), "tags": hm.Tags}
			for k, x := range map[string]string{"http_method": hm.HTTPMethod, "url_path": hm.URLPath, "expected_codes": hm.ExpectedCodes} {
				if x != "" {
					hv[k] = x
				}
			}
			v["healthmonitor"] = hv
		}
		return v
	}
	for _, l := range spec.Listeners {
		v := wsVals{"name": l.Name, "protocol": cmp.Or(l.Protocol, "TCP"), "protocol_port": l.Port, "tags": l.Tags,
			"connection_limit": cmp.Or(l.ConnectionLimit, -1), "allowed_cidrs": l.AllowedCIDRs, "insert_headers": l.InsertHeaders}
		for k, t := range map[string]int{"timeout_client_data": l.TimeoutClientData, "timeout_member_connect": l.TimeoutMemberConnect,
			"timeout_member_data": l.TimeoutMemberData, "timeout_tcp_inspect": l.TimeoutTCPInspect} {
			if t != 0 {
				v[k] = t
			}
		}
		if l.DefaultPool != nil {
			v["default_pool"] = poolV(*l.DefaultPool)
		}
		in.listeners = append(in.listeners, listenerInFrom(v))
	}
	for _, p := range spec.Pools {
		in.pools = append(in.pools, poolInFrom(poolV(p)))
	}
	lb, st, body := s.createLBLocked(region, in)
	if st != 0 {
		panic(fmt.Sprintf("openstack fake: AddLoadBalancer: %d %s", st, body.(*wsmeError).FaultString))
	}
	// Members' health as the spec says, then provisioning done at once.
	s.applySpecHealthLocked(lb, spec)
	lb.prov, lb.settleAt = ProvisioningPendingCreate, s.now()
	s.finishLocked(lb)
	return lb.ID
}

// specPools lists the listeners' default pools, in order.
func specPools(ls []ListenerSpec) []PoolSpec {
	var out []PoolSpec
	for _, l := range ls {
		if l.DefaultPool != nil {
			out = append(out, *l.DefaultPool)
		}
	}
	return out
}

// applySpecHealthLocked gives members the operating status their spec
// names. Pools were created top-level first, then the listeners'.
func (s *Server) applySpecHealthLocked(lb *lbState, spec LoadBalancerSpec) {
	specs := append(slices.Clone(spec.Pools), specPools(spec.Listeners)...)
	for k, pid := range lb.pools {
		if k >= len(specs) {
			break
		}
		for j, mid := range s.oct.pools[pid].members {
			if st := specs[k].Members[j].OperatingStatus; st != "" {
				s.oct.members[mid].health = st
			}
		}
	}
}

// LoadBalancer returns a load balancer by ID, with its listeners, pools,
// members and monitors.
func (s *Server) LoadBalancer(id string) (CloudLoadBalancer, bool) {
	s.settle()
	s.mu.Lock()
	defer s.mu.Unlock()
	lb, ok := s.oct.lbs[id]
	if !ok {
		return CloudLoadBalancer{}, false
	}
	return s.cloudLBLocked(lb), true
}

// LoadBalancers returns every load balancer of every region, oldest first.
func (s *Server) LoadBalancers() []CloudLoadBalancer {
	s.settle()
	s.mu.Lock()
	defer s.mu.Unlock()
	lbs := slices.Collect(maps.Values(s.oct.lbs))
	slices.SortFunc(lbs, func(a, b *lbState) int { return cmp.Compare(a.seq, b.seq) })
	var out []CloudLoadBalancer
	for _, lb := range lbs {
		out = append(out, s.cloudLBLocked(lb))
	}
	return out
}

// DeleteLoadBalancer deletes a load balancer with everything on it and
// its VIP port at once, as an operator's cascade delete ends.
func (s *Server) DeleteLoadBalancer(id string) error {
	s.settle()
	s.mu.Lock()
	defer s.mu.Unlock()
	lb, ok := s.oct.lbs[id]
	if !ok {
		return fmt.Errorf("openstack fake: no load balancer %s", id)
	}
	s.removeLBLocked(lb)
	return nil
}

func (s *Server) cloudLBLocked(lb *lbState) CloudLoadBalancer {
	c := CloudLoadBalancer{ID: lb.ID, Name: lb.Name, Description: lb.Description, Region: lb.region, ProjectID: lb.project,
		VipAddress: lb.vipAddress, VipPortID: lb.vipPortID, VipSubnetID: lb.vipSubnetID, VipNetworkID: lb.vipNetworkID,
		Provider: lb.provider, FlavorID: lb.flavorID, AvailabilityZone: lb.az, AdminStateUp: lb.AdminUp,
		ProvisioningStatus: lb.prov, OperatingStatus: s.lbOperatingLocked(lb), Tags: slices.Clone(lb.Tags)}
	for _, id := range lb.listeners {
		l := s.oct.listeners[id]
		c.Listeners = append(c.Listeners, CloudListener{ID: l.ID, Name: l.Name, Protocol: l.protocol, Port: l.port,
			ConnectionLimit: l.connLimit, DefaultPoolID: l.defaultPool, AllowedCIDRs: slices.Clone(l.allowedCIDRs),
			InsertHeaders: maps.Clone(l.insertHeaders), TimeoutClientData: l.timeoutClientData,
			TimeoutMemberData: l.timeoutMemberData, TimeoutMemberConnect: l.timeoutMemberConnect,
			TimeoutTCPInspect: l.timeoutTCPInspect, AdminStateUp: l.AdminUp, Tags: slices.Clone(l.Tags),
			ProvisioningStatus: l.prov, OperatingStatus: s.listenerOperatingLocked(l)})
	}
	for _, id := range lb.pools {
		p := s.oct.pools[id]
		cp := CloudPool{ID: p.ID, Name: p.Name, Protocol: p.protocol, LBAlgorithm: p.algorithm,
			ListenerIDs: s.poolListenersLocked(p), AdminStateUp: p.AdminUp, Tags: slices.Clone(p.Tags),
			ProvisioningStatus: p.prov, OperatingStatus: s.poolOperatingLocked(p)}
		if sp := p.persistence; sp != nil {
			cp.SessionPersistence = sp.typ
			if sp.cookieName != nil {
				cp.CookieName = *sp.cookieName
			}
		}
		for _, mid := range p.members {
			m := s.oct.members[mid]
			cm := CloudMember{ID: m.ID, Name: m.Name, Address: m.address, Port: m.port, Weight: m.weight, Backup: m.backup,
				AdminStateUp: m.AdminUp, Tags: slices.Clone(m.Tags), ProvisioningStatus: m.prov,
				OperatingStatus: s.memberOperatingLocked(m)}
			if m.subnetID != nil {
				cm.SubnetID = *m.subnetID
			}
			cp.Members = append(cp.Members, cm)
		}
		if hm := s.oct.monitors[p.monitor]; hm != nil {
			cp.Monitor = &CloudMonitor{ID: hm.ID, Name: hm.Name, Type: hm.typ, Delay: hm.delay, Timeout: hm.timeout,
				MaxRetries: hm.maxRetries, MaxRetriesDown: hm.maxRetriesDown, HTTPMethod: deref(hm.httpMethod),
				URLPath: deref(hm.urlPath), ExpectedCodes: deref(hm.expectedCodes), AdminStateUp: hm.AdminUp,
				Tags: slices.Clone(hm.Tags), ProvisioningStatus: hm.prov, OperatingStatus: s.monitorOperatingLocked(hm)}
		}
		c.Pools = append(c.Pools, cp)
	}
	return c
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
