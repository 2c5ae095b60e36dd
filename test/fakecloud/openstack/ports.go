package openstack

import (
	"cmp"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Port statuses, as Neutron spells them.
const (
	PortActive = "ACTIVE"
	PortDown   = "DOWN"
	PortBuild  = "BUILD"
	PortError  = "ERROR"
)

// PortSpec describes one of a server's ports (a NIC), for AddServer and
// AttachPort.
type PortSpec struct {
	// Network is the ID or name of a network in the server's region.
	Network string
	// IPs are the port's fixed addresses, each in one of the network's
	// subnets. None takes, as Neutron does, an address of the first IPv4
	// subnet and one of each IPv6 subnet.
	IPs []string
	// FloatingIP is a floating address associated with the port, which
	// Nova lists among the server's addresses as "floating". When an
	// external network of the region has the address, it is a floating
	// IP of Neutron's too (see AddFloatingIP).
	FloatingIP string
	Name       string
	MAC        string // default a fresh fa:16:3e:xx:xx:xx
	// SubPorts make the port a trunk's parent: each is a port of its own
	// (device_owner "trunk:subport"), listed in the parent's
	// trunk_details. Nova does not list their addresses.
	SubPorts []SubPortSpec
}

// SubPortSpec describes a trunk's subport: a port on another network,
// reached over a VLAN of the parent.
type SubPortSpec struct {
	Network        string
	IPs            []string
	SegmentationID int // the VLAN ID
	Name           string
}

// CloudPort is a port as the fake holds it.
type CloudPort struct {
	ID          string
	Name        string
	Region      string
	NetworkID   string
	DeviceID    string // the server's ID, or the trunk's for a subport
	DeviceOwner string // "compute:<az>", or "trunk:subport"
	Status      string
	MAC         string
	FixedIPs    []FixedIP
	FloatingIP  string
	TrunkID     string // set on a trunk's parent
	SubPorts    []SubPort
	// AdminStateUp is false for ports made down, as Octavia's VIP ports.
	AdminStateUp        bool
	Description         string
	AllowedAddressPairs []AddressPair
	// SecurityGroups are the port's groups' IDs: the region's default
	// group for servers' ports until an update sets others.
	SecurityGroups []string
	Tags           []string
}

// AddressPair is one of a port's allowed address pairs: an address or
// CIDR whose traffic port security lets through, from MACAddress (the
// port's own when Neutron fills it in).
type AddressPair struct {
	IPAddress  string
	MACAddress string
}

// FixedIP is one of a port's fixed addresses.
type FixedIP struct {
	SubnetID string
	IP       string
}

// SubPort is a trunk's subport, as the parent's trunk_details lists it.
type SubPort struct {
	PortID         string
	SegmentationID int
	MAC            string
}

type portState struct {
	CloudPort
	created time.Time
	seq     int64 // creation order: a server's NICs are listed in it
	// project owns the port: the account's, or none for a router's
	// gateway port, which Neutron makes for no project and only admins
	// see.
	project  string
	sgs      []string // the groups an update set
	sgsSet   bool
	revision int
	updated  time.Time
}

// Device owners of the ports Neutron makes for routers.
const (
	deviceOwnerRouterInterface = "network:router_interface"
	deviceOwnerRouterGateway   = "network:router_gateway"
)

// portSecurityGroups are the port's groups: those an update set, else
// the region's default group for servers' ports (and Octavia's), none
// for the network's own (routers').
func (s *Server) portSecurityGroups(p *portState) []string {
	switch {
	case p.sgsSet:
		return slices.Clone(p.sgs)
	case strings.HasPrefix(p.DeviceOwner, "network:"):
		return []string{}
	}
	return []string{s.defaultSGLocked(p.Region)}
}

func (s *Server) clonePortLocked(p *portState) CloudPort {
	c := p.CloudPort
	c.FixedIPs = slices.Clone(c.FixedIPs)
	c.SubPorts = slices.Clone(c.SubPorts)
	c.AllowedAddressPairs = slices.Clone(c.AllowedAddressPairs)
	c.Tags = slices.Clone(c.Tags)
	c.SecurityGroups = s.portSecurityGroups(p)
	return c
}

// Port returns a port by ID.
func (s *Server) Port(id string) (CloudPort, bool) {
	s.settle() // a load balancer's VIP port goes with it
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.ports[id]
	if !ok {
		return CloudPort{}, false
	}
	return s.clonePortLocked(p), true
}

// ServerPorts returns a server's ports (not the subports of its trunks),
// in the order of its NICs.
func (s *Server) ServerPorts(serverID string) []CloudPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CloudPort
	for _, p := range s.serverPortsLocked(serverID) {
		out = append(out, s.clonePortLocked(p))
	}
	return out
}

func (s *Server) serverPortsLocked(serverID string) []*portState {
	var out []*portState
	for _, p := range s.ports {
		if p.DeviceID == serverID && p.DeviceOwner != deviceOwnerSubport {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *portState) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// SetPortStatus changes a port's status (PortDown for a NIC whose link is
// down). A change of its server's status sets it again.
func (s *Server) SetPortStatus(id, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.ports[id]
	if !ok {
		return fmt.Errorf("openstack fake: no port %s", id)
	}
	if !slices.Contains([]string{PortActive, PortDown, PortBuild, PortError}, status) {
		return fmt.Errorf("openstack fake: invalid port status %q", status)
	}
	p.Status = status
	return nil
}

// AttachPort adds a NIC to a server, as attaching an interface does, and
// returns the port's ID.
func (s *Server) AttachPort(serverID string, spec PortSpec) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.servers[serverID]
	if !ok {
		return "", fmt.Errorf("openstack fake: no server %s", serverID)
	}
	p, err := s.addPortLocked(sv, spec)
	if err != nil {
		return "", fmt.Errorf("openstack fake: %w", err)
	}
	sv.updated = s.now()
	return p.ID, nil
}

// DeletePort deletes a port and its subports, freeing their addresses, as
// detaching an interface Nova made does.
func (s *Server) DeletePort(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.ports[id]
	if !ok {
		return fmt.Errorf("openstack fake: no port %s", id)
	}
	s.deletePortLocked(p)
	if sv := s.servers[p.DeviceID]; sv != nil {
		sv.updated = s.now()
	}
	return nil
}

func (s *Server) deletePortLocked(p *portState) {
	for _, sp := range p.SubPorts {
		if c := s.ports[sp.PortID]; c != nil {
			s.deletePortLocked(c)
		}
	}
	// Neutron disassociates the port's floating IPs.
	for _, f := range s.fips {
		if f.portID == p.ID {
			s.disassociateLocked(f)
		}
	}
	for _, f := range p.FixedIPs {
		// A router interface holds the gateway address, which stays
		// the subnet's.
		if sub := s.subnets[f.SubnetID]; sub != nil && netip.MustParseAddr(f.IP) != sub.gateway {
			delete(sub.used, netip.MustParseAddr(f.IP))
		}
	}
	delete(s.ports, p.ID)
}

const deviceOwnerSubport = "trunk:subport"

// addPortLocked makes a server's port from a spec, with its subports.
func (s *Server) addPortLocked(sv *serverState, spec PortSpec) (*portState, error) {
	p, err := s.newPortLocked(sv.Region, spec.Network, spec.IPs, spec.Name, spec.MAC)
	if err != nil {
		return nil, err
	}
	if spec.FloatingIP != "" {
		if _, err := netip.ParseAddr(spec.FloatingIP); err != nil {
			s.deletePortLocked(p)
			return nil, fmt.Errorf("bad floating IP %q", spec.FloatingIP)
		}
		if err := s.floatingForPortLocked(p, spec.FloatingIP); err != nil {
			s.deletePortLocked(p)
			return nil, err
		}
	}
	p.DeviceID, p.DeviceOwner = sv.ID, "compute:"+sv.AvailabilityZone
	p.Status = portStatusFor(sv.Status)
	if len(spec.SubPorts) > 0 {
		p.TrunkID = newUUID()
	}
	for _, ss := range spec.SubPorts {
		c, err := s.newPortLocked(sv.Region, ss.Network, ss.IPs, ss.Name, "")
		if err != nil {
			s.deletePortLocked(p)
			return nil, err
		}
		c.DeviceID, c.DeviceOwner, c.Status = p.TrunkID, deviceOwnerSubport, p.Status
		p.SubPorts = append(p.SubPorts, SubPort{PortID: c.ID, SegmentationID: ss.SegmentationID, MAC: c.MAC})
	}
	return p, nil
}

// newPortLocked makes an unbound port on a network, allocating its
// addresses.
func (s *Server) newPortLocked(region, network string, ips []string, name, mac string) (*portState, error) {
	n := s.networkByRefLocked(region, network)
	if n == nil {
		return nil, fmt.Errorf("no network %q in region %s", network, region)
	}
	p := s.makePortLocked(region, n.ID, name, mac)
	fail := func(err error) (*portState, error) {
		s.deletePortLocked(p)
		return nil, err
	}
	if len(ips) == 0 {
		v4 := false
		for _, id := range n.subnets {
			sub := s.subnets[id]
			if sub.IPVersion == 4 && v4 {
				continue
			}
			a, err := sub.allocate(netip.Addr{})
			if err != nil {
				return fail(err)
			}
			v4 = v4 || sub.IPVersion == 4
			p.FixedIPs = append(p.FixedIPs, FixedIP{SubnetID: id, IP: a.String()})
		}
		return p, nil
	}
	for _, v := range ips {
		ip, err := netip.ParseAddr(v)
		if err != nil {
			return fail(fmt.Errorf("bad IP %q", v))
		}
		k := slices.IndexFunc(n.subnets, func(id string) bool { return s.subnets[id].prefix.Contains(ip) })
		if k < 0 {
			return fail(fmt.Errorf("IP %s is in no subnet of network %s", v, n.Name))
		}
		if _, err := s.subnets[n.subnets[k]].allocate(ip); err != nil {
			return fail(err)
		}
		p.FixedIPs = append(p.FixedIPs, FixedIP{SubnetID: n.subnets[k], IP: ip.String()})
	}
	return p, nil
}

// makePortLocked registers an unbound port without addresses: up, DOWN,
// of the project.
func (s *Server) makePortLocked(region, networkID, name, mac string) *portState {
	if mac == "" {
		s.nextMAC++
		mac = fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", s.nextMAC>>16&0xff, s.nextMAC>>8&0xff, s.nextMAC&0xff)
	}
	s.seq++
	now := s.now()
	p := &portState{CloudPort: CloudPort{ID: newUUID(), Name: name, Region: region, NetworkID: networkID, MAC: mac,
		Status: PortDown, AdminStateUp: true}, created: now, updated: now, seq: s.seq, project: s.account.ProjectID,
		revision: 1}
	s.ports[p.ID] = p
	return p
}

func (s *Server) registerPorts() {
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/ports", PortsList, s.listPorts)
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/ports/{id}", PortsGet, s.getPort)
	s.registerPortUpdates()
}

var portFilters = []string{"id", "name", "network_id", "device_id", "device_owner", "status", "mac_address",
	"tenant_id", "project_id", "admin_state_up", "description", "fixed_ips", "security_groups"}

// listPorts: GET /v2.0/ports, with the filters upstream's CCM uses
// (device_id, network_id) among Neutron's others.
func (s *Server) listPorts(c *call) (int, any) {
	nq, st, body := parseNeutronQuery(c.r, portFilters)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []neutronItem
	for _, p := range s.ports {
		if p.Region != c.region || p.project == "" {
			continue
		}
		var fixed []string
		for _, f := range p.FixedIPs {
			fixed = append(fixed, "ip_address="+f.IP, "subnet_id="+f.SubnetID)
		}
		items = append(items, neutronItem{id: p.ID, fields: map[string][]string{
			"id": {p.ID}, "name": {p.Name}, "network_id": {p.NetworkID}, "device_id": {p.DeviceID},
			"device_owner": {p.DeviceOwner}, "status": {p.Status}, "mac_address": {p.MAC}, "tenant_id": {p.project},
			"project_id": {p.project}, "admin_state_up": {strconv.FormatBool(p.AdminStateUp)}, "description": {p.Description},
			"fixed_ips": fixed, "security_groups": s.portSecurityGroups(p)}, tags: p.Tags})
	}
	return neutronPage(c, "ports", nq, items, func(id string) any { return s.wirePortLocked(s.ports[id]) },
		func(id string) (int, any) { return errPortNotFound(id) })
}

func errPortNotFound(id string) (int, any) {
	return errNeutron(http.StatusNotFound, "PortNotFound", "Port "+id+" could not be found.")
}

func (s *Server) getPort(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.ports[c.p["id"]]
	if p == nil || p.Region != c.region || p.project == "" {
		return errPortNotFound(c.p["id"])
	}
	return http.StatusOK, map[string]any{"port": s.wirePortLocked(p)}
}

func (s *Server) wirePortLocked(p *portState) wirePort {
	w := wirePort{ID: p.ID, Name: p.Name, NetworkID: p.NetworkID, TenantID: p.project, ProjectID: p.project, MACAddress: p.MAC,
		AdminStateUp: p.AdminStateUp, Status: p.Status, DeviceID: p.DeviceID, DeviceOwner: p.DeviceOwner,
		Description: p.Description, FixedIPs: []wireFixedIP{}, ExtraDHCPOpts: []any{},
		SecurityGroups: s.portSecurityGroups(p), BindingVNICType: "normal", PortSecurityEnabled: true,
		IPAllocation: "immediate", Tags: append([]string{}, p.Tags...), CreatedAt: stamp(p.created),
		UpdatedAt: stamp(p.updated), RevisionNumber: p.revision}
	if s.hasExtLocked("allowed-address-pairs") {
		pairs := []wireAddressPair{}
		for _, a := range p.AllowedAddressPairs {
			pairs = append(pairs, wireAddressPair{IPAddress: a.IPAddress, MACAddress: a.MACAddress})
		}
		w.AllowedAddressPairs = &pairs
	}
	for _, f := range p.FixedIPs {
		w.FixedIPs = append(w.FixedIPs, wireFixedIP{SubnetID: f.SubnetID, IPAddress: f.IP})
	}
	if p.TrunkID != "" {
		td := &wireTrunkDetails{TrunkID: p.TrunkID, SubPorts: []wireSubPort{}}
		for _, sp := range p.SubPorts {
			td.SubPorts = append(td.SubPorts, wireSubPort{SegmentationID: sp.SegmentationID, SegmentationType: "vlan",
				PortID: sp.PortID, MACAddress: sp.MAC})
		}
		w.TrunkDetails = td
	}
	return w
}

// portStatusFor is the status Neutron gives a bound port while its server
// is in status: DOWN while the hypervisor has no interface plugged for
// it (building, stopped, suspended, shelved, failed).
func portStatusFor(serverStatus string) string {
	switch serverStatus {
	case StatusBuild, StatusShutoff, StatusSuspended, StatusShelved, StatusShelvedOffloaded, StatusError:
		return PortDown
	}
	return PortActive
}

// setServerPortsStatusLocked follows a server's status change on its
// ports and their subports.
func (s *Server) setServerPortsStatusLocked(serverID, serverStatus string) {
	st := portStatusFor(serverStatus)
	for _, p := range s.serverPortsLocked(serverID) {
		p.Status = st
		for _, sp := range p.SubPorts {
			if c := s.ports[sp.PortID]; c != nil {
				c.Status = st
			}
		}
	}
}
