package openstack

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

type memberState struct {
	octBase
	pool           string
	address        string
	port, weight   int
	backup         bool
	subnetID       *string
	monitorAddress *string
	monitorPort    *int
	health         string // what the monitor reports once ACTIVE: SetMemberOperatingStatus
}

// memberIn is a member to create, or one of a batch update.
type memberIn struct {
	v       wsVals
	name    string
	adminUp bool
	tags    []string
	address string
	port    int
	weight  int
}

var (
	memberSingle = wsType{"name": str(255), "admin_state_up": wsBoolAttr, "address": must(wsIPAttr),
		"protocol_port": must(intIn(1, 65535)), "weight": intIn(0, 256), "backup": wsBoolAttr, "subnet_id": wsUUIDAttr,
		"monitor_port": intIn(1, 65535), "monitor_address": wsIPAttr, "tags": wsTagsAttr}
	memberPOST = memberSingle.with(wsType{"project_id": str(36), "tenant_id": str(36)})
	memberPUT  = wsType{"name": str(255), "admin_state_up": wsBoolAttr, "weight": intIn(0, 256), "backup": wsBoolAttr,
		"monitor_port": intIn(1, 65535), "monitor_address": wsIPAttr, "tags": wsTagsAttr}
)

var memberFilters = []string{"id", "name", "provisioning_status", "operating_status", "admin_state_up",
	"project_id", "address", "protocol_port", "weight", "backup", "subnet_id", "monitor_address", "monitor_port"}

func memberInFrom(v wsVals) memberIn {
	return memberIn{v: v, name: v.str("name"), adminUp: v.boolOr("admin_state_up", true), tags: v.list("tags"),
		address: v.str("address"), port: v.intOr("protocol_port", 0), weight: v.intOr("weight", 1)}
}

// key is what makes a member unique in its pool: its address (as
// Octavia stores it) and port.
func (in memberIn) key() string { return memberKey(in.address, in.port) }

func memberKey(address string, port int) string {
	return fmt.Sprintf("%s:%d", netip.MustParseAddr(address).String(), port)
}

// checkMemberIn checks a new member against the pool's others and the
// reserved addresses ([networking] reserved_ips).
func checkMemberIn(in memberIn, others []memberIn) (int, any) {
	if netip.MustParseAddr(in.address) == netip.MustParseAddr("169.254.169.254") {
		return errInvalidOption(strings.ToUpper(netip.MustParseAddr(in.address).String()), "member address")
	}
	if slices.ContainsFunc(others, func(o memberIn) bool { return o.key() == in.key() }) {
		return errDuplicateMember(in.address, in.port)
	}
	return 0, nil
}

func errDuplicateMember(address string, port int) (int, any) {
	return errWSME(http.StatusConflict, fmt.Sprintf("Another member on this pool is already using ip %s on "+
		"protocol_port %d", address, port))
}

func (s *Server) newMemberLocked(p *poolState, in memberIn) *memberState {
	m := &memberState{octBase: s.newBaseLocked(in.name, "", in.adminUp, in.tags), pool: p.ID,
		address: netip.MustParseAddr(in.address).String(), port: in.port, health: OperatingOnline}
	s.applyMemberLocked(m, in.v)
	m.weight = in.weight
	s.oct.members[m.ID] = m
	p.members = append(p.members, m.ID)
	return m
}

func (s *Server) applyMemberLocked(m *memberState, v wsVals) {
	if v.has("weight") {
		m.weight = v.intOr("weight", 1)
	}
	if v.has("backup") {
		m.backup = v.boolOr("backup", false)
	}
	if v.has("subnet_id") {
		m.subnetID = v.strPtr("subnet_id")
	}
	if v.has("monitor_address") {
		m.monitorAddress = v.strPtr("monitor_address")
	}
	if v.has("monitor_port") {
		m.monitorPort = v.intPtr("monitor_port")
	}
}

// SetMemberOperatingStatus sets what the pool's health monitor reports
// of a member once it is ACTIVE: OperatingOnline (the default),
// OperatingError, OperatingDraining or OperatingOffline. Without a
// monitor members show NO_MONITOR whatever this says.
func (s *Server) SetMemberOperatingStatus(id, status string) error {
	s.settle()
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.oct.members[id]
	if !ok {
		return fmt.Errorf("openstack fake: no member %s", id)
	}
	if !slices.Contains([]string{OperatingOnline, OperatingError, OperatingDraining, OperatingOffline}, status) {
		return fmt.Errorf("openstack fake: invalid member operating status %q", status)
	}
	m.health = status
	return nil
}

// memberPoolLocked finds the pool of a member route.
func (s *Server) memberPoolLocked(c *call) (*poolState, int, any) {
	p := s.poolLocked(c, c.p["pool"])
	if p == nil {
		st, body := errOctaviaNotFound("Pool", c.p["pool"])
		return nil, st, body
	}
	return p, 0, nil
}

func (s *Server) memberLocked(c *call) (*poolState, *memberState, int, any) {
	p, st, body := s.memberPoolLocked(c)
	if st != 0 {
		return nil, nil, st, body
	}
	m := s.oct.members[c.p["id"]]
	if m == nil || m.pool != p.ID {
		st, body := errOctaviaNotFound("Member", c.p["id"])
		return nil, nil, st, body
	}
	return p, m, 0, nil
}

func (s *Server) listMembers(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, st, body := s.memberPoolLocked(c)
	if st != 0 {
		return st, body
	}
	project := s.oct.lbs[p.lb].project
	var items []octItem
	for _, id := range p.members {
		m := s.oct.members[id]
		f := baseFields(&m.octBase, project)
		f["operating_status"], f["address"], f["protocol_port"] = s.memberOperatingLocked(m), m.address, itoa(m.port)
		f["weight"], f["backup"] = itoa(m.weight), boolText(m.backup)
		if m.subnetID != nil {
			f["subnet_id"] = *m.subnetID
		}
		if m.monitorAddress != nil {
			f["monitor_address"] = *m.monitorAddress
		}
		if m.monitorPort != nil {
			f["monitor_port"] = itoa(*m.monitorPort)
		}
		items = append(items, octItem{id: m.ID, created: m.created, fields: f, tags: m.Tags,
			render: func() any { return s.wireMemberLocked(m) }})
	}
	return octaviaPage(c, "members", memberFilters, items)
}

func (s *Server) getMember(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, m, st, body := s.memberLocked(c)
	if st != 0 {
		return st, body
	}
	return http.StatusOK, map[string]any{"member": s.wireMemberLocked(m)}
}

// checkMemberSubnetLocked checks a member's subnet_id, as validate.subnet_exists
// does before a create (404 here: the member controller raises NotFound).
func (s *Server) checkMemberSubnetLocked(c *call, v wsVals) (int, any) {
	id := v.str("subnet_id")
	if id == "" {
		return 0, nil
	}
	if sub := s.subnets[id]; sub == nil || sub.region != c.region {
		return errOctaviaNotFound("Subnet", id)
	}
	return 0, nil
}

// createMember: POST /v2/lbaas/pools/{pool}/members.
func (s *Server) createMember(c *call) (int, any) {
	v, st, body := readOctaviaBody(c, "member", memberPOST)
	if st != 0 {
		return st, body
	}
	in := memberInFrom(v.obj("member"))
	s.mu.Lock()
	defer s.mu.Unlock()
	p, st, body := s.memberPoolLocked(c)
	if st != 0 {
		return st, body
	}
	if st, body := s.checkMemberSubnetLocked(c, in.v); st != 0 {
		return st, body
	}
	if st, body := s.checkPoolMutableLocked(p); st != 0 {
		return st, body
	}
	if st, body := checkMemberIn(in, s.poolMemberInsLocked(p)); st != 0 {
		return st, body
	}
	m := s.newMemberLocked(p, in)
	s.markPoolChangeLocked(p, &m.octBase, ProvisioningPendingCreate)
	return http.StatusCreated, map[string]any{"member": s.wireMemberLocked(m)}
}

// poolMemberInsLocked are the pool's members, as inputs to compare with.
func (s *Server) poolMemberInsLocked(p *poolState) []memberIn {
	var out []memberIn
	for _, id := range p.members {
		m := s.oct.members[id]
		out = append(out, memberIn{address: m.address, port: m.port})
	}
	return out
}

// updateMember: PUT /v2/lbaas/pools/{pool}/members/{id}.
func (s *Server) updateMember(c *call) (int, any) {
	v, st, body := readOctaviaBody(c, "member", memberPUT)
	if st != 0 {
		return st, body
	}
	u := v.obj("member")
	s.mu.Lock()
	defer s.mu.Unlock()
	p, m, st, body := s.memberLocked(c)
	if st != 0 {
		return st, body
	}
	if st, body := s.checkPoolMutableLocked(p); st != 0 {
		return st, body
	}
	applyBase(&m.octBase, u)
	s.applyMemberLocked(m, u)
	s.markPoolChangeLocked(p, &m.octBase, ProvisioningPendingUpdate)
	return http.StatusOK, map[string]any{"member": s.wireMemberLocked(m)}
}

// deleteMember: DELETE /v2/lbaas/pools/{pool}/members/{id}.
func (s *Server) deleteMember(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, m, st, body := s.memberLocked(c)
	if st != 0 {
		return st, body
	}
	if st, body := s.checkPoolMutableLocked(p); st != 0 {
		return st, body
	}
	s.markPoolChangeLocked(p, &m.octBase, ProvisioningPendingDelete)
	return http.StatusNoContent, nil
}

// batchUpdateMembers: PUT /v2/lbaas/pools/{pool}/members, the pool's
// whole set of members: those given by address and port are updated
// (their unset attributes back to the defaults, as the batch takes whole
// members), the new ones created, the others deleted, unless
// ?additive_only=true. 202 without a body. Every member given counts as
// updated, so only an empty batch on an empty pool changes no status.
func (s *Server) batchUpdateMembers(c *call) (int, any) {
	v, st, body := readOctaviaBody(c, "members", memberPOST)
	if st != 0 {
		return st, body
	}
	var ins []memberIn
	for _, m := range v.objs("members") {
		ins = append(ins, memberInFrom(m))
	}
	additive := boolFromString(c.r.URL.Query().Get("additive_only"))
	s.mu.Lock()
	defer s.mu.Unlock()
	p, st, body := s.memberPoolLocked(c)
	if st != 0 {
		return st, body
	}
	if st, body := s.checkPoolMutableLocked(p); st != 0 {
		return st, body
	}
	old := map[string]*memberState{}
	for _, id := range p.members {
		m := s.oct.members[id]
		old[memberKey(m.address, m.port)] = m
	}
	var created []memberIn
	updated := map[string]memberIn{}
	for _, in := range ins {
		k := in.key()
		if _, ok := old[k]; !ok {
			if st, body := checkMemberIn(in, created); st != 0 {
				return st, body
			}
			created = append(created, in)
			continue
		}
		if _, dup := updated[k]; dup {
			return errOctaviaValidation("Member must be updated only once in the same request.")
		}
		updated[k] = in
	}
	var deleted []*memberState
	if !additive {
		for k, m := range old {
			if _, ok := updated[k]; !ok {
				deleted = append(deleted, m)
			}
		}
	}
	if len(created)+len(updated)+len(deleted) == 0 {
		return http.StatusAccepted, nil
	}
	for _, in := range created {
		if st, body := s.checkMemberSubnetLocked(c, in.v); st != 0 {
			return st, body
		}
	}
	for _, in := range created {
		s.newMemberLocked(p, in)
	}
	for k, in := range updated {
		m := old[k]
		m.Name, m.AdminUp, m.Tags, m.weight = in.name, in.adminUp, append([]string{}, in.tags...), in.weight
		m.backup, m.monitorAddress, m.monitorPort = in.v.boolOr("backup", false), in.v.strPtr("monitor_address"), in.v.intPtr("monitor_port")
		s.mark(&m.octBase, ProvisioningPendingUpdate)
	}
	for _, m := range deleted {
		s.mark(&m.octBase, ProvisioningPendingDelete)
	}
	s.markPoolChangeLocked(p, &p.octBase, ProvisioningPendingUpdate)
	return http.StatusAccepted, nil
}
