package openstack

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
)

var ruleFilters = []string{"id", "direction", "ethertype", "protocol", "port_range_min", "port_range_max",
	"remote_ip_prefix", "remote_group_id", "security_group_id", "tenant_id", "project_id", "description",
	"revision_number"}

var ruleAttrs = neutronAttrs{
	post: []string{"direction", "ethertype", "protocol", "port_range_min", "port_range_max", "remote_ip_prefix",
		"remote_group_id", "security_group_id", "description"},
	readOnly: []string{"id", "created_at", "updated_at", "revision_number"},
	required: []string{"security_group_id", "direction"},
}

func (s *Server) listRules(c *call) (int, any) {
	nq, st, body := parseNeutronQuery(c.r, ruleFilters)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.defaultSGLocked(c.region)
	pid := s.account.ProjectID
	var items []neutronItem
	for _, r := range s.sgRules {
		if r.region != c.region {
			continue
		}
		f := map[string][]string{"id": {r.ID}, "direction": {r.direction}, "ethertype": {r.etherType},
			"security_group_id": {r.group}, "tenant_id": {pid}, "project_id": {pid}, "description": {r.description},
			"revision_number": {"0"}}
		for k, p := range map[string]*string{"protocol": r.protocol, "remote_ip_prefix": r.remoteIPPrefix,
			"remote_group_id": r.remoteGroup} {
			if p != nil {
				f[k] = []string{*p}
			}
		}
		for k, p := range map[string]*int{"port_range_min": r.portMin, "port_range_max": r.portMax} {
			if p != nil {
				f[k] = []string{strconv.Itoa(*p)}
			}
		}
		items = append(items, neutronItem{id: r.ID, fields: f})
	}
	return neutronPage(c, "security_group_rules", nq, items, func(id string) any { return s.wireRuleLocked(s.sgRules[id]) },
		func(id string) (int, any) { return errRuleNotFound(id) })
}

func errRuleNotFound(id string) (int, any) {
	return errNeutron(http.StatusNotFound, "SecurityGroupRuleNotFound", "Security group rule "+id+" does not exist")
}

func (s *Server) getRule(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.sgRules[c.p["id"]]
	if r == nil || r.region != c.region {
		return errRuleNotFound(c.p["id"])
	}
	return http.StatusOK, map[string]any{"security_group_rule": s.wireRuleLocked(r)}
}

func (s *Server) createRule(c *call) (int, any) {
	b, st, body := s.readNeutronBody(c, "security_group_rule", ruleAttrs, true)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.defaultSGLocked(c.region)
	r, st, body := s.createRuleLocked(c.region, b)
	if st != 0 {
		return st, body
	}
	return http.StatusCreated, map[string]any{"security_group_rule": s.wireRuleLocked(r)}
}

// createRuleLocked checks a rule as Neutron's securitygroups_db does, in
// its order, and adds it to its group.
func (s *Server) createRuleLocked(region string, b neutronBody) (*sgRuleState, int, any) {
	fail := func(st int, body any) (*sgRuleState, int, any) { return nil, st, body }
	bad := func(typ, msg string) (*sgRuleState, int, any) {
		st, body := errNeutron(http.StatusBadRequest, typ, msg)
		return nil, st, body
	}
	direction, _ := b.str("direction")
	if direction != "ingress" && direction != "egress" {
		return fail(neutronInvalid("direction", "'"+pyStr(b["direction"])+"' is not in ['ingress', 'egress']"))
	}
	etherType := "IPv4"
	if b.has("ethertype") {
		switch et, _ := b.str("ethertype"); {
		case et == "ipv4" || et == "IPv4" || et == "IPV4":
		case et == "ipv6" || et == "IPv6" || et == "IPV6":
			etherType = "IPv6"
		default:
			return fail(neutronInvalid("ethertype", "'"+pyStr(b["ethertype"])+"' is not in ['IPv4', 'IPv6']"))
		}
	}
	var protocol *string
	if v, ok := b["protocol"]; ok && v != nil {
		p, ok := normalizeProtocol(v)
		if !ok {
			return bad("SecurityGroupRuleInvalidProtocol", fmt.Sprintf("Security group rule protocol %s not supported. "+
				"Only protocol values %s and integer representations [0 to 255] are supported.", pyStr(v),
				pyRepr(toAnyList(sgProtocols))))
		}
		protocol = &p
	}
	portMin, st, body := b.intAttr("port_range_min")
	if st != 0 {
		return fail(st, body)
	}
	portMax, st, body := b.intAttr("port_range_max")
	if st != 0 {
		return fail(st, body)
	}
	var prefix, remoteGroup *string
	if v, _ := b.str("remote_ip_prefix"); v != "" {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, err2 := netip.ParseAddr(v)
			if err2 != nil {
				return fail(neutronInvalid("remote_ip_prefix", "'"+v+"' is not a valid IP subnet"))
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Addr().Is6() != (etherType == "IPv6") {
			return bad("SecurityGroupConflictingEtherType", fmt.Sprintf("Conflicting value ethertype %s for CIDR %s", etherType, v))
		}
		prefix = &v
	}
	if v, _ := b.str("remote_group_id"); v != "" {
		remoteGroup = &v
	}
	if prefix != nil && remoteGroup != nil {
		return bad("SecurityGroupRemoteGroupAndRemoteIpPrefix", "Only remote_ip_prefix or remote_group_id may be provided.")
	}
	if (portMin != nil || portMax != nil) && protocol == nil {
		return bad("SecurityGroupProtocolRequiredWithPorts", "Must also specify protocol if port range is given.")
	}
	if protocol != nil && slices.Contains(portProtocols, *protocol) && (portMin != nil || portMax != nil) {
		if portMin == nil || portMax == nil || *portMin > *portMax {
			return bad("SecurityGroupInvalidPortRange", "For TCP/UDP protocols, port_range_min must be <= port_range_max")
		}
		for _, p := range []int{*portMin, *portMax} {
			if p < 1 || p > 65535 {
				return bad("SecurityGroupInvalidPortValue", fmt.Sprintf("Invalid value for port %d", p))
			}
		}
	}
	gid, _ := b.str("security_group_id")
	g := s.sgs[gid]
	if g == nil || g.region != region {
		return fail(errSGNotFound(gid))
	}
	if remoteGroup != nil {
		if rg := s.sgs[*remoteGroup]; rg == nil || rg.region != region {
			return fail(errSGNotFound(*remoteGroup))
		}
	}
	desc, _ := b.str("description")
	for _, r := range s.groupRulesLocked(g.ID) {
		if r.direction == direction && r.etherType == etherType && protocolKey(r.protocol) == protocolKey(protocol) &&
			derefInt(r.portMin) == derefInt(portMin) && derefInt(r.portMax) == derefInt(portMax) &&
			prefixKey(r.remoteIPPrefix) == prefixKey(prefix) && deref(r.remoteGroup) == deref(remoteGroup) {
			return fail(errNeutron(http.StatusConflict, "SecurityGroupRuleExists",
				"Security group rule already exists. Rule id is "+r.ID+"."))
		}
	}
	r := s.addRuleLocked(g, direction, etherType, protocol, portMin, portMax, prefix, remoteGroup, desc)
	g.revision++
	g.updated = s.now()
	return r, 0, nil
}

func (s *Server) deleteRule(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.sgRules[c.p["id"]]
	if r == nil || r.region != c.region {
		return errRuleNotFound(c.p["id"])
	}
	delete(s.sgRules, r.ID)
	if g := s.sgs[r.group]; g != nil {
		g.revision++
		g.updated = s.now()
	}
	return http.StatusNoContent, nil
}
