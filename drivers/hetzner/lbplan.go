package hetzner

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"slices"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// What a plan's changes are to, as the plan names them.
const (
	kindLB      = "load balancer"
	kindService = "service"
	kindTarget  = "target"
	kindNetwork = "network attachment"
	kindCert    = "certificate"
)

// observed is what a sync read of the cloud, besides the spec's inputs.
type observed struct {
	lb *hcloud.LoadBalancer // nil: there is none yet
	// lbType is the type a new load balancer gets or an existing one is
	// changed to, as the API describes it (for its target limit).
	lbType *hcloud.LoadBalancerType
	// mayCreate is false in the node sync, which makes nothing.
	mayCreate bool
}

// lbPlan is one sync's changes, and what they leave for a later sync.
type lbPlan struct {
	loadbalancers.Plan
	// waitCert says why the services were left as they are: the managed
	// certificate they use is not issued yet.
	waitCert string
	// overLimit are servers left out: the type takes no more targets.
	overLimit []int64
}

// planLB computes the changes that make obs what spec asks for, in the
// order hcloud CCM makes them (the load balancer's own settings, its
// network, its public interface, then services and targets). It makes no
// cloud call. ap gives each change its Apply; nil (tests) leaves them nil.
func planLB(spec *lbSpec, obs observed, ap *lbApplier) *lbPlan {
	p := &lbPlan{}
	ready := p.planCertificate(spec, obs, ap)
	svcs := spec.services()
	cur := obs.lb
	if cur == nil {
		cur = p.planCreate(spec, obs.lbType, svcs, ready, ap)
	}
	p.planInfo(spec, cur, ap)
	p.planSettings(spec, cur, ap)
	privateGone := p.planNetwork(spec, cur, ap)
	if spec.publicIface != nil && *spec.publicIface != cur.PublicNet.Enabled {
		var f fields
		f.set("public_net.enabled", cur.PublicNet.Enabled, *spec.publicIface)
		p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindLB, Name: cur.Name, Fields: f, Apply: ap.publicInterface(*spec.publicIface)})
	}
	if ready {
		p.planServices(cur, svcs, ap)
	}
	maxTargets := 0
	if t := cmp.Or(obs.lbType, cur.LoadBalancerType); t != nil {
		maxTargets = t.MaxTargets
	}
	p.planTargets(spec, cur, maxTargets, privateGone, ap)
	return p
}

// planCertificate plans the managed certificate's creation, and says
// whether the services' certificates are ready to use.
func (p *lbPlan) planCertificate(spec *lbSpec, obs observed, ap *lbApplier) bool {
	m := spec.managed
	switch {
	case m == nil:
		return true
	case m.have == nil && obs.mayCreate:
		var f fields
		f.set("domain_names", nil, m.domains)
		p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindCert, Name: m.name, Fields: f, Apply: ap.createCertificate(spec, m)})
		p.waitCert = fmt.Sprintf("managed certificate %s is being made", m.name)
		return false
	case m.have == nil:
		p.waitCert = fmt.Sprintf("managed certificate %s is not made yet", m.name)
		return false
	case m.have.Status != nil && m.have.Status.Issuance == hcloud.CertificateStatusTypePending:
		p.waitCert = fmt.Sprintf("managed certificate %s (%d) is being issued", m.have.Name, m.have.ID)
		return false
	}
	return true
}

// planCreate plans the load balancer's creation with as much as one
// request can carry (its services, its targets, its network when no
// private IP or subnet is asked for), and returns the load balancer the
// create will have made, which the rest of the plan builds on.
func (p *lbPlan) planCreate(spec *lbSpec, lbType *hcloud.LoadBalancerType, svcs []svcSpec, ready bool, ap *lbApplier) *hcloud.LoadBalancer {
	typ := &hcloud.LoadBalancerType{Name: cmp.Or(spec.typ, defaultLBType)}
	if lbType != nil {
		typ.MaxTargets = lbType.MaxTargets
	}
	opts := hcloud.LoadBalancerCreateOpts{
		Name:             spec.name,
		LoadBalancerType: &hcloud.LoadBalancerType{Name: typ.Name},
		Labels:           map[string]string{LabelServiceUID: spec.uid},
	}
	after := &hcloud.LoadBalancer{
		Name:             spec.name,
		Labels:           maps.Clone(opts.Labels),
		LoadBalancerType: typ,
		Algorithm:        hcloud.LoadBalancerAlgorithm{Type: hcloud.LoadBalancerAlgorithmType(cmp.Or(spec.algorithm, algorithmRoundRobin))},
		PublicNet:        hcloud.LoadBalancerPublicNet{Enabled: true},
	}
	var f fields
	f.set("load_balancer_type", nil, typ.Name)
	if spec.location != "" {
		opts.Location = &hcloud.Location{Name: spec.location}
		after.Location = opts.Location
		f.set("location", nil, spec.location)
	} else {
		opts.NetworkZone = hcloud.NetworkZone(spec.networkZone)
		after.Location = &hcloud.Location{NetworkZone: opts.NetworkZone}
		f.set("network_zone", nil, spec.networkZone)
	}
	if spec.algorithm != "" {
		opts.Algorithm = &after.Algorithm
		f.set("algorithm.type", nil, spec.algorithm)
	}
	if spec.publicIface != nil {
		opts.PublicInterface = spec.publicIface
		after.PublicNet.Enabled = *spec.publicIface
		f.set("public_interface", nil, *spec.publicIface)
	}
	withNet := spec.netID != 0 && spec.privateIP == nil && spec.ipRange == nil
	if withNet {
		opts.Network = &hcloud.Network{ID: spec.netID}
		after.PrivateNet = []hcloud.LoadBalancerPrivateNet{{Network: opts.Network}}
		f.set("network", nil, spec.netID)
	}
	if ready && len(svcs) > 0 {
		var ports []string
		for _, s := range svcs {
			opts.Services = append(opts.Services, s.createOpts())
			after.Services = append(after.Services, s.asService())
			ports = append(ports, s.describe())
		}
		f.set("services", nil, ports)
	}
	// Targets using private IPs need the network first.
	if !spec.usePrivateIP || withNet {
		ids := sorted(spec.servers)
		if typ.MaxTargets > 0 && len(ids) > typ.MaxTargets {
			ids = ids[:typ.MaxTargets]
		}
		for _, id := range ids {
			opts.Targets = append(opts.Targets, hcloud.LoadBalancerCreateOptsTarget{
				Type:         hcloud.LoadBalancerTargetTypeServer,
				Server:       hcloud.LoadBalancerCreateOptsTargetServer{Server: &hcloud.Server{ID: id}},
				UsePrivateIP: hcloud.Ptr(spec.usePrivateIP),
			})
			after.Targets = append(after.Targets, serverTarget(id, spec.usePrivateIP))
		}
		f.set("targets", nil, ids)
	}
	f.set("labels", nil, LabelServiceUID+"="+spec.uid)
	p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindLB, Name: spec.name, Fields: f, Apply: ap.create(opts)})
	return after
}

func serverTarget(id int64, private bool) hcloud.LoadBalancerTarget {
	return hcloud.LoadBalancerTarget{
		Type:         hcloud.LoadBalancerTargetTypeServer,
		Server:       &hcloud.LoadBalancerTargetServer{Server: &hcloud.Server{ID: id}},
		UsePrivateIP: private,
	}
}

// planInfo labels the load balancer as the Service's (so a load balancer
// found by name is found by label from then on, as hcloud CCM labels
// it) and renames it to the name annotation.
func (p *lbPlan) planInfo(spec *lbSpec, cur *hcloud.LoadBalancer, ap *lbApplier) {
	var f fields
	var opts hcloud.LoadBalancerUpdateOpts
	if have := cur.Labels[LabelServiceUID]; have != spec.uid {
		opts.Labels = maps.Clone(cur.Labels)
		if opts.Labels == nil {
			opts.Labels = map[string]string{}
		}
		opts.Labels[LabelServiceUID] = spec.uid
		f.set("labels."+LabelServiceUID, have, spec.uid)
	}
	if spec.rename && cur.Name != spec.name {
		opts.Name = spec.name
		f.set("name", cur.Name, spec.name)
	}
	p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindLB, Name: cur.Name, Fields: f, Apply: ap.update(opts)})
}

// planSettings: reverse DNS, algorithm and type, each its own action.
func (p *lbPlan) planSettings(spec *lbSpec, cur *hcloud.LoadBalancer, ap *lbApplier) {
	for _, r := range []struct {
		field string
		want  *string
		have  string
		v6    bool
	}{
		{"public_net.ipv4.dns_ptr", spec.rdns4, cur.PublicNet.IPv4.DNSPtr, false},
		{"public_net.ipv6.dns_ptr", spec.rdns6, cur.PublicNet.IPv6.DNSPtr, true},
	} {
		if r.want != nil && *r.want != r.have {
			var f fields
			f.set(r.field, r.have, *r.want)
			p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindLB, Name: cur.Name, Fields: f, Apply: ap.dnsPtr(r.v6, *r.want)})
		}
	}
	if spec.algorithm != "" && spec.algorithm != string(cur.Algorithm.Type) {
		var f fields
		f.set("algorithm.type", string(cur.Algorithm.Type), spec.algorithm)
		p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindLB, Name: cur.Name, Fields: f, Apply: ap.algorithm(spec.algorithm)})
	}
	have := ""
	if cur.LoadBalancerType != nil {
		have = cur.LoadBalancerType.Name
	}
	if spec.typ != "" && spec.typ != have {
		var f fields
		f.set("load_balancer_type", have, spec.typ)
		p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindLB, Name: cur.Name, Fields: f, Apply: ap.changeType(spec.typ)})
	}
}

// planNetwork keeps the load balancer in drivers.hetzner.network only, at
// the private IP asked for: like hcloud CCM, it detaches it from any other
// network (from every one when none is configured) and from this one at
// another IP, then attaches it. It reports whether the configured
// network's attachment is replaced, which takes the targets using private
// IPs with it.
func (p *lbPlan) planNetwork(spec *lbSpec, cur *hcloud.LoadBalancer, ap *lbApplier) (privateGone bool) {
	attached := false
	for _, pn := range cur.PrivateNet {
		if pn.Network == nil {
			continue
		}
		id := pn.Network.ID
		if id == spec.netID && (spec.privateIP == nil || spec.privateIP.Equal(pn.IP)) {
			attached = true
			continue
		}
		privateGone = privateGone || id == spec.netID
		var f fields
		f.set("ip", ipString(pn.IP), nil)
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindNetwork, Name: networkName(cur.Name, id), Fields: f, Apply: ap.detach(id)})
	}
	if spec.netID == 0 || attached {
		return privateGone
	}
	var f fields
	f.set("ip", nil, cmp.Or(ipString(spec.privateIP), "any"))
	if spec.ipRange != nil {
		f.set("ip_range", nil, spec.ipRange.String())
	}
	p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindNetwork, Name: networkName(cur.Name, spec.netID), Fields: f, Apply: ap.attach(spec.netID, spec.privateIP, spec.ipRange)})
	return privateGone
}

func networkName(lb string, id int64) string { return fmt.Sprintf("%s in network %d", lb, id) }

func ipString(ip net.IP) string {
	if ip == nil {
		return ""
	}
	return ip.String()
}

// planServices: one service per Service port. Services on ports the
// Service no longer has go first, so a port moving frees its slot (a type
// allows only so many services) before a new one takes it.
func (p *lbPlan) planServices(cur *hcloud.LoadBalancer, svcs []svcSpec, ap *lbApplier) {
	want := map[int]bool{}
	for _, s := range svcs {
		want[s.listen] = true
	}
	have := map[int]*hcloud.LoadBalancerService{}
	var stale []int
	for i := range cur.Services {
		s := &cur.Services[i]
		have[s.ListenPort] = s
		if !want[s.ListenPort] {
			stale = append(stale, s.ListenPort)
		}
	}
	slices.Sort(stale)
	for _, port := range stale {
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindService, Name: serviceName(cur.Name, port), Apply: ap.deleteService(port)})
	}
	for _, s := range svcs {
		name := serviceName(cur.Name, s.listen)
		if h, ok := have[s.listen]; ok {
			p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindService, Name: name, Fields: diffService(s, h), Apply: ap.updateService(s)})
			continue
		}
		var f fields
		f.set("service", nil, s.describe())
		p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindService, Name: name, Fields: f, Apply: ap.addService(s)})
	}
}

func serviceName(lb string, port int) string { return fmt.Sprintf("%s port %d", lb, port) }

// planTargets makes the server targets the Nodes' servers, each using
// private IPs or not as asked; a target the other way round is removed
// and added again, as hcloud CCM does. IP targets (Robot servers in hcloud
// CCM) are removed, as hcloud CCM removes them without Robot support;
// label selector targets are left alone. Servers past the type's limit
// are left out.
func (p *lbPlan) planTargets(spec *lbSpec, cur *hcloud.LoadBalancer, maxTargets int, privateGone bool, ap *lbApplier) {
	want := map[int64]bool{}
	for _, id := range spec.servers {
		want[id] = true
	}
	present := map[int64]bool{}
	count := len(cur.Targets)
	for _, t := range cur.Targets {
		switch t.Type {
		case hcloud.LoadBalancerTargetTypeServer:
			if t.Server == nil || t.Server.Server == nil {
				continue
			}
			id := t.Server.Server.ID
			if privateGone && t.UsePrivateIP {
				count-- // gone with the network attachment
				continue
			}
			if want[id] && t.UsePrivateIP == spec.usePrivateIP {
				present[id] = true
				continue
			}
			var f fields
			f.set("use_private_ip", t.UsePrivateIP, nil)
			p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindTarget, Name: targetName(cur.Name, fmt.Sprintf("server %d", id)), Fields: f, Apply: ap.removeServer(id)})
			count--
		case hcloud.LoadBalancerTargetTypeIP:
			if t.IP == nil {
				continue
			}
			p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindTarget, Name: targetName(cur.Name, "ip "+t.IP.IP), Apply: ap.removeIP(t.IP.IP)})
			count--
		}
	}
	for _, id := range sorted(spec.servers) {
		if present[id] {
			continue
		}
		if maxTargets > 0 && count >= maxTargets {
			p.overLimit = append(p.overLimit, id)
			continue
		}
		var f fields
		f.set("use_private_ip", nil, spec.usePrivateIP)
		p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindTarget, Name: targetName(cur.Name, fmt.Sprintf("server %d", id)), Fields: f, Apply: ap.addServer(id, spec.usePrivateIP)})
		count++
	}
}

func targetName(lb, what string) string { return what + " of " + lb }
