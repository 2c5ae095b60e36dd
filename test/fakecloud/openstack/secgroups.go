package openstack

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Neutron's security groups and their rules. A new group gets Neutron's
// two default rules, egress to anywhere over IPv4 and IPv6; each region
// has the project's "default" group, made when first needed (listing
// groups, showing a port), with ingress from its own members too. Rules
// are unique: creating one a group has already is 409, which upstream's
// CCM counts on.

// SecurityGroupSpec describes a security group for AddSecurityGroup.
type SecurityGroupSpec struct {
	Name        string
	Description string
	Region      string // default the first region
	Tags        []string
	// Rules are added after Neutron's default egress rules.
	Rules []SecurityGroupRuleSpec
}

// SecurityGroupRuleSpec describes a rule. Zero ports are none (null).
type SecurityGroupRuleSpec struct {
	Direction      string // "ingress" or "egress"
	EtherType      string // default "IPv4"
	Protocol       string // "" for any
	PortRangeMin   int
	PortRangeMax   int
	RemoteIPPrefix string
	RemoteGroupID  string
	Description    string
}

// CloudSecurityGroup is a security group as the fake holds it.
type CloudSecurityGroup struct {
	ID, Name, Description, Region string
	Tags                          []string
	Rules                         []CloudSecurityGroupRule // in creation order
}

// CloudSecurityGroupRule is a rule as the fake holds it; zero ports are
// none.
type CloudSecurityGroupRule struct {
	ID, Direction, EtherType, Protocol string
	PortRangeMin, PortRangeMax         int
	RemoteIPPrefix, RemoteGroupID      string
	Description                        string
}

type sgState struct {
	ID, Name, Description, region string
	stateful                      bool
	tags                          []string
	created, updated              time.Time
	revision                      int
	seq                           int64
	isDefault                     bool
}

type sgRuleState struct {
	ID, group, region           string
	direction, etherType        string
	protocol                    *string
	portMin, portMax            *int
	remoteIPPrefix, remoteGroup *string
	description                 string
	created                     time.Time
	seq                         int64
}

// AddSecurityGroup creates a security group with Neutron's default egress
// rules and spec's, and returns its ID. It panics on a rule Neutron
// would refuse: a mistake in the calling test.
func (s *Server) AddSecurityGroup(spec SecurityGroupSpec) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	region := s.regionLocked(spec.Region)
	g := s.newSGLocked(region, spec.Name, spec.Description, false)
	g.tags = tagsOf(spec.Tags)
	for _, r := range spec.Rules {
		b := neutronBody{"direction": r.Direction, "ethertype": cmp.Or(r.EtherType, "IPv4"), "security_group_id": g.ID,
			"description": r.Description}
		if r.Protocol != "" {
			b["protocol"] = r.Protocol
		}
		if r.PortRangeMin != 0 || r.PortRangeMax != 0 {
			b["port_range_min"], b["port_range_max"] = float64(r.PortRangeMin), float64(r.PortRangeMax)
		}
		if r.RemoteIPPrefix != "" {
			b["remote_ip_prefix"] = r.RemoteIPPrefix
		}
		if r.RemoteGroupID != "" {
			b["remote_group_id"] = r.RemoteGroupID
		}
		if _, st, body := s.createRuleLocked(region, b); st != 0 {
			panic(fmt.Sprintf("openstack fake: AddSecurityGroup: %d %s", st, body.(*neutronError).NeutronError.Message))
		}
	}
	return g.ID
}

// SecurityGroup returns a security group by ID, with its rules.
func (s *Server) SecurityGroup(id string) (CloudSecurityGroup, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.sgs[id]
	if !ok {
		return CloudSecurityGroup{}, false
	}
	return s.cloudSGLocked(g), true
}

// SecurityGroups returns every security group of every region, oldest
// first; the default groups are there once made.
func (s *Server) SecurityGroups() []CloudSecurityGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	gs := slices.Collect(maps.Values(s.sgs))
	slices.SortFunc(gs, func(a, b *sgState) int { return cmp.Compare(a.seq, b.seq) })
	var out []CloudSecurityGroup
	for _, g := range gs {
		out = append(out, s.cloudSGLocked(g))
	}
	return out
}

// DefaultSecurityGroup returns the ID of the project's default security
// group in a region ("" for the first), making it if need be.
func (s *Server) DefaultSecurityGroup(region string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.defaultSGLocked(s.regionLocked(region))
}

func (s *Server) cloudSGLocked(g *sgState) CloudSecurityGroup {
	c := CloudSecurityGroup{ID: g.ID, Name: g.Name, Description: g.Description, Region: g.region, Tags: slices.Clone(g.tags)}
	for _, r := range s.groupRulesLocked(g.ID) {
		c.Rules = append(c.Rules, CloudSecurityGroupRule{ID: r.ID, Direction: r.direction, EtherType: r.etherType,
			Protocol: deref(r.protocol), PortRangeMin: derefInt(r.portMin), PortRangeMax: derefInt(r.portMax),
			RemoteIPPrefix: deref(r.remoteIPPrefix), RemoteGroupID: deref(r.remoteGroup), Description: r.description})
	}
	return c
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// defaultSGLocked is the region's default group, made as Neutron makes
// it: ingress from the group itself and egress anywhere, for IPv4 and
// IPv6.
func (s *Server) defaultSGLocked(region string) string {
	if id, ok := s.defaultSGs[region]; ok {
		return id
	}
	g := s.newSGLocked(region, "default", "Default security group", true)
	for _, et := range []string{"IPv4", "IPv6"} {
		s.addRuleLocked(g, "ingress", et, nil, nil, nil, nil, &g.ID, "")
	}
	s.defaultSGs[region] = g.ID
	return g.ID
}

// newSGLocked makes a group with Neutron's default egress rules (the
// default group's ingress rules are its own).
func (s *Server) newSGLocked(region, name, description string, isDefault bool) *sgState {
	s.seq++
	now := s.now()
	g := &sgState{ID: newUUID(), Name: name, Description: description, region: region, stateful: true, tags: []string{},
		created: now, updated: now, revision: 1, seq: s.seq, isDefault: isDefault}
	s.sgs[g.ID] = g
	for _, et := range []string{"IPv4", "IPv6"} {
		s.addRuleLocked(g, "egress", et, nil, nil, nil, nil, nil, "")
	}
	return g
}

func (s *Server) addRuleLocked(g *sgState, direction, etherType string, protocol *string, portMin, portMax *int,
	prefix, remoteGroup *string, description string) *sgRuleState {
	s.seq++
	r := &sgRuleState{ID: newUUID(), group: g.ID, region: g.region, direction: direction, etherType: etherType,
		protocol: protocol, portMin: portMin, portMax: portMax, remoteIPPrefix: prefix, remoteGroup: remoteGroup,
		description: description, created: s.now(), seq: s.seq}
	s.sgRules[r.ID] = r
	return r
}

func (s *Server) groupRulesLocked(group string) []*sgRuleState {
	var out []*sgRuleState
	for _, r := range s.sgRules {
		if r.group == group {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *sgRuleState) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

func (s *Server) registerSecurityGroups() {
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/security-groups", SecurityGroupsList, s.listSecurityGroups)
	s.handle(svcNetwork, http.MethodPost, "/network/v2.0/security-groups", SecurityGroupsCreate, s.createSecurityGroup)
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/security-groups/{id}", SecurityGroupsGet, s.getSecurityGroup)
	s.handle(svcNetwork, http.MethodPut, "/network/v2.0/security-groups/{id}", SecurityGroupsUpdate, s.updateSecurityGroup)
	s.handle(svcNetwork, http.MethodDelete, "/network/v2.0/security-groups/{id}", SecurityGroupsDelete, s.deleteSecurityGroup)
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/security-group-rules", SecurityGroupRulesList, s.listRules)
	s.handle(svcNetwork, http.MethodPost, "/network/v2.0/security-group-rules", SecurityGroupRulesCreate, s.createRule)
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/security-group-rules/{id}", SecurityGroupRulesGet, s.getRule)
	s.handle(svcNetwork, http.MethodDelete, "/network/v2.0/security-group-rules/{id}", SecurityGroupRulesDelete, s.deleteRule)
}

var sgFilters = []string{"id", "name", "description", "tenant_id", "project_id", "stateful", "revision_number"}

func (s *Server) listSecurityGroups(c *call) (int, any) {
	nq, st, body := parseNeutronQuery(c.r, sgFilters)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.defaultSGLocked(c.region)
	pid := s.account.ProjectID
	var items []neutronItem
	for _, g := range s.sgs {
		if g.region != c.region {
			continue
		}
		items = append(items, neutronItem{id: g.ID, tags: g.tags, fields: map[string][]string{"id": {g.ID},
			"name": {g.Name}, "description": {g.Description}, "tenant_id": {pid}, "project_id": {pid},
			"stateful": {strconv.FormatBool(g.stateful)}, "revision_number": {strconv.Itoa(g.revision)}}})
	}
	return neutronPage(c, "security_groups", nq, items, func(id string) any { return s.wireSGLocked(s.sgs[id]) },
		func(id string) (int, any) { return errSGNotFound(id) })
}

func errSGNotFound(id string) (int, any) {
	return errNeutron(http.StatusNotFound, "SecurityGroupNotFound", "Security group "+id+" does not exist")
}

func (s *Server) sgLocked(c *call, id string) *sgState {
	if g := s.sgs[id]; g != nil && g.region == c.region {
		return g
	}
	return nil
}

func (s *Server) getSecurityGroup(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.sgLocked(c, c.p["id"])
	if g == nil {
		return errSGNotFound(c.p["id"])
	}
	return http.StatusOK, map[string]any{"security_group": s.wireSGLocked(g)}
}

var sgAttrs = neutronAttrs{post: []string{"name", "description", "stateful"}, put: []string{"name", "description", "stateful"},
	readOnly: []string{"id", "security_group_rules", "tags", "created_at", "updated_at", "revision_number", "shared"}}

func (s *Server) createSecurityGroup(c *call) (int, any) {
	b, st, body := s.readNeutronBody(c, "security_group", sgAttrs, true)
	if st != 0 {
		return st, body
	}
	for _, k := range []string{"name", "description"} {
		if st, body := b.checkString(k, 255); st != 0 {
			return st, body
		}
	}
	name, _ := b.str("name")
	desc, _ := b.str("description")
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == "default" {
		return errNeutron(http.StatusConflict, "SecurityGroupDefaultAlreadyExists", "Default security group already exists.")
	}
	g := s.newSGLocked(c.region, name, desc, false)
	if v, ok := b["stateful"].(bool); ok {
		g.stateful = v
	}
	return http.StatusCreated, map[string]any{"security_group": s.wireSGLocked(g)}
}

func (s *Server) updateSecurityGroup(c *call) (int, any) {
	b, st, body := s.readNeutronBody(c, "security_group", sgAttrs, false)
	if st != 0 {
		return st, body
	}
	for _, k := range []string{"name", "description"} {
		if st, body := b.checkString(k, 255); st != 0 {
			return st, body
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.sgLocked(c, c.p["id"])
	if g == nil {
		return errSGNotFound(c.p["id"])
	}
	if name, _ := b.str("name"); b.has("name") && g.isDefault && name != "default" {
		return errNeutron(http.StatusConflict, "SecurityGroupCannotUpdateDefault", "Updating default security group not allowed.")
	}
	if b.has("name") {
		g.Name, _ = b.str("name")
	}
	if b.has("description") {
		g.Description, _ = b.str("description")
	}
	if v, ok := b["stateful"].(bool); ok {
		g.stateful = v
	}
	g.revision++
	g.updated = s.now()
	return http.StatusOK, map[string]any{"security_group": s.wireSGLocked(g)}
}

// deleteSecurityGroup refuses the default group and a group a port uses.
func (s *Server) deleteSecurityGroup(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.sgLocked(c, c.p["id"])
	if g == nil {
		return errSGNotFound(c.p["id"])
	}
	if g.isDefault {
		return errNeutron(http.StatusConflict, "SecurityGroupCannotRemoveDefault", "Insufficient rights for removing default security group.")
	}
	for _, p := range s.ports {
		if slices.Contains(s.portSecurityGroups(p), g.ID) {
			return errNeutron(http.StatusConflict, "SecurityGroupInUse", "Security Group "+g.ID+" in use.")
		}
	}
	for _, r := range s.groupRulesLocked(g.ID) {
		delete(s.sgRules, r.ID)
	}
	delete(s.sgs, g.ID)
	return http.StatusNoContent, nil
}

func (s *Server) wireSGLocked(g *sgState) wireSecurityGroup {
	pid := s.account.ProjectID
	w := wireSecurityGroup{ID: g.ID, Name: g.Name, Description: g.Description, TenantID: pid, ProjectID: pid,
		Rules: []wireSGRule{}, Stateful: g.stateful, Tags: tagsOf(g.tags), CreatedAt: stamp(g.created),
		UpdatedAt: stamp(g.updated), RevisionNumber: g.revision}
	for _, r := range s.groupRulesLocked(g.ID) {
		w.Rules = append(w.Rules, s.wireRuleLocked(r))
	}
	return w
}

type wireSecurityGroup struct {
	ID             string       `json:"id"`
	Name           string       `json:"name"`
	Description    string       `json:"description"`
	TenantID       string       `json:"tenant_id"`
	ProjectID      string       `json:"project_id"`
	Rules          []wireSGRule `json:"security_group_rules"`
	Stateful       bool         `json:"stateful"`
	Tags           []string     `json:"tags"`
	CreatedAt      string       `json:"created_at"`
	UpdatedAt      string       `json:"updated_at"`
	RevisionNumber int          `json:"revision_number"`
}

type wireSGRule struct {
	ID              string  `json:"id"`
	TenantID        string  `json:"tenant_id"`
	ProjectID       string  `json:"project_id"`
	SecurityGroupID string  `json:"security_group_id"`
	Direction       string  `json:"direction"`
	EtherType       string  `json:"ethertype"`
	Protocol        *string `json:"protocol"`
	PortRangeMin    *int    `json:"port_range_min"`
	PortRangeMax    *int    `json:"port_range_max"`
	RemoteIPPrefix  *string `json:"remote_ip_prefix"`
	RemoteGroupID   *string `json:"remote_group_id"`
	Description     string  `json:"description"`
	CreatedAt       string  `json:"created_at"`
	UpdatedAt       string  `json:"updated_at"`
	RevisionNumber  int     `json:"revision_number"`
}

func (s *Server) wireRuleLocked(r *sgRuleState) wireSGRule {
	pid := s.account.ProjectID
	return wireSGRule{ID: r.ID, TenantID: pid, ProjectID: pid, SecurityGroupID: r.group, Direction: r.direction,
		EtherType: r.etherType, Protocol: r.protocol, PortRangeMin: r.portMin, PortRangeMax: r.portMax,
		RemoteIPPrefix: r.remoteIPPrefix, RemoteGroupID: r.remoteGroup, Description: r.description,
		CreatedAt: stamp(r.created), UpdatedAt: stamp(r.created), RevisionNumber: 0}
}

// sgProtocols are the names neutron-lib knows (IP_PROTOCOL_MAP and its
// aliases); numbers 0 to 255 are taken too.
var sgProtocols = []string{"ah", "dccp", "egp", "esp", "gre", "hopopt", "icmp", "igmp", "ipip", "ipv6-encap",
	"ipv6-frag", "ipv6-icmp", "icmpv6", "ipv6-nonxt", "ipv6-opts", "ipv6-route", "ospf", "pgm", "rsvp", "sctp", "tcp",
	"udp", "udplite", "vrrp", "any"}

// portProtocols take port ranges (neutron-lib's SG_PORT_PROTO_NAMES).
var portProtocols = []string{"tcp", "udp", "dccp", "sctp", "udplite", "6", "17", "33", "132", "136"}

func normalizeProtocol(v any) (string, bool) {
	switch x := v.(type) {
	case float64:
		if x == float64(int(x)) && x >= 0 && x <= 255 {
			return strconv.Itoa(int(x)), true
		}
	case string:
		if n, err := strconv.Atoi(x); err == nil && n >= 0 && n <= 255 {
			return strconv.Itoa(n), true
		}
		if l := strings.ToLower(x); slices.Contains(sgProtocols, l) {
			return l, true
		}
	}
	return "", false
}

// protocolKey is what makes two rules' protocols the same: numbers and
// names alike.
func protocolKey(p *string) string {
	if p == nil || *p == "any" {
		return ""
	}
	for name, num := range map[string]string{"tcp": "6", "udp": "17", "icmp": "1", "ipv6-icmp": "58", "icmpv6": "58", "sctp": "132"} {
		if *p == name {
			return num
		}
	}
	return *p
}

// any prefix is no prefix, when rules are compared.
func prefixKey(p *string) string {
	if p == nil || *p == "0.0.0.0/0" || *p == "::/0" {
		return ""
	}
	if pf, err := netip.ParsePrefix(*p); err == nil {
		return pf.Masked().String()
	}
	return *p
}
