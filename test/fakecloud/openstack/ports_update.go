package openstack

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
)

// A port's update (PUT /v2.0/ports/{id}) and its tags (the
// standard-attr-tag extension): what upstream's CCM writes on the nodes'
// ports, allowed address pairs for the pods' routes and security groups
// for load balancers, tagging the ports it touched.

// maxAddressPairs is Neutron's default [DEFAULT] max_allowed_address_pair.
const maxAddressPairs = 10

var portAttrs = neutronAttrs{
	put: []string{"name", "description", "admin_state_up", "security_groups", "device_id", "device_owner",
		"fixed_ips", "port_security_enabled"},
	readOnly: []string{"id", "network_id", "tenant_id", "project_id", "mac_address", "status", "binding:vnic_type",
		"extra_dhcp_opts", "ip_allocation", "qos_policy_id", "qos_network_policy_id", "propagate_uplink_status",
		"trunk_details", "tags", "created_at", "updated_at", "revision_number"},
}

func (s *Server) registerPortUpdates() {
	s.handle(svcNetwork, http.MethodPut, "/network/v2.0/ports/{id}", PortsUpdate, s.updatePort)
	s.handle(svcNetwork, http.MethodPut, "/network/v2.0/ports/{id}/tags", PortTagsReplace, s.replacePortTags)
	s.handle(svcNetwork, http.MethodPut, "/network/v2.0/ports/{id}/tags/{tag}", PortTagsAdd, s.addPortTag)
	s.handle(svcNetwork, http.MethodDelete, "/network/v2.0/ports/{id}/tags/{tag}", PortTagsDelete, s.deletePortTag)
}

// updatePort: PUT /v2.0/ports/{id}. allowed_address_pairs is an attribute
// only with the allowed-address-pairs extension; a port's addresses and
// port security are not modelled.
func (s *Server) updatePort(c *call) (int, any) {
	s.mu.Lock()
	attrs := portAttrs
	if s.hasExtLocked("allowed-address-pairs") {
		attrs.put = append(slices.Clone(attrs.put), "allowed_address_pairs")
	}
	s.mu.Unlock()
	b, st, body := s.readNeutronBody(c, "port", attrs, false)
	if st != 0 {
		return st, body
	}
	for _, k := range []string{"name", "description", "device_id", "device_owner"} {
		if st, body := b.checkString(k, 255); st != 0 {
			return st, body
		}
	}
	if v, ok := b["admin_state_up"]; ok {
		if _, ok := toBoolean(v); !ok {
			return errNeutron(http.StatusBadRequest, "InvalidInput",
				fmt.Sprintf("Invalid input for operation: '%s' cannot be converted to boolean.", pyStr(v)))
		}
	}
	for _, k := range []string{"fixed_ips", "port_security_enabled"} {
		if b.has(k) {
			return errNeutron(http.StatusBadRequest, webobType(http.StatusBadRequest),
				"openstack fake: changing a port's "+k+" is not modelled")
		}
	}
	groups, st, body := portGroupsIn(b)
	if st != 0 {
		return st, body
	}
	pairs, st, body := addressPairsIn(b)
	if st != 0 {
		return st, body
	}
	rev, constrained, st, body := ifMatchRevision(c.r)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.ports[c.p["id"]]
	if p == nil || p.Region != c.region || p.project == "" {
		return errPortNotFound(c.p["id"])
	}
	s.defaultSGLocked(c.region)
	for _, g := range groups {
		if sg := s.sgs[g]; sg == nil || sg.region != c.region {
			return errSGNotFound(g)
		}
	}
	if constrained && rev != p.revision {
		return errNeutron(http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
			fmt.Sprintf("Constrained to %d, but current revision is %d", rev, p.revision))
	}
	for k, dst := range map[string]*string{"name": &p.Name, "description": &p.Description, "device_id": &p.DeviceID,
		"device_owner": &p.DeviceOwner} {
		if b.has(k) {
			*dst, _ = b.str(k)
		}
	}
	if v, ok := b["admin_state_up"]; ok {
		p.AdminStateUp, _ = toBoolean(v)
	}
	if b.has("security_groups") {
		p.sgs, p.sgsSet = groups, true
	}
	if b.has("allowed_address_pairs") {
		p.AllowedAddressPairs = nil
		for _, a := range pairs {
			p.AllowedAddressPairs = append(p.AllowedAddressPairs, AddressPair{IPAddress: a.IPAddress,
				MACAddress: cmpOrStr(a.MACAddress, p.MAC)})
		}
	}
	p.revision++
	p.updated = s.now()
	return http.StatusOK, map[string]any{"port": s.wirePortLocked(p)}
}

func cmpOrStr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// portGroupsIn reads security_groups: a list of UUIDs, null for none.
func portGroupsIn(b neutronBody) ([]string, int, any) {
	v, ok := b["security_groups"]
	if !ok || v == nil {
		return []string{}, 0, nil
	}
	items, ok := v.([]any)
	if !ok {
		st, body := neutronInvalid("security_groups", "'"+pyStr(v)+"' is not a list")
		return nil, st, body
	}
	var out []string
	for _, it := range items {
		id, ok := it.(string)
		if !ok || !uuidPattern.MatchString(id) {
			st, body := neutronInvalid("security_groups", "'"+pyStr(it)+"' is not a valid UUID")
			return nil, st, body
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, 0, nil
}

// addressPairsIn reads allowed_address_pairs as neutron-lib's
// _validate_allowed_address_pairs does.
func addressPairsIn(b neutronBody) ([]AddressPair, int, any) {
	v, ok := b["allowed_address_pairs"]
	if !ok || v == nil {
		return nil, 0, nil
	}
	fail := func(typ, msg string) ([]AddressPair, int, any) {
		st, body := errNeutron(http.StatusBadRequest, typ, msg)
		return nil, st, body
	}
	items, ok := v.([]any)
	if !ok {
		return fail(webobType(http.StatusBadRequest), "Allowed address pairs must be a list.")
	}
	if len(items) > maxAddressPairs {
		return fail("AllowedAddressPairExhausted", fmt.Sprintf("The number of allowed address pair exceeds the maximum %d.", maxAddressPairs))
	}
	var out []AddressPair
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return fail(webobType(http.StatusBadRequest), "Allowed address pairs must be a list.")
		}
		var unknown []string
		for k := range m {
			if k != "ip_address" && k != "mac_address" {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			return fail(webobType(http.StatusBadRequest), fmt.Sprintf("Unrecognized attribute(s) '%s'", unknown[0]))
		}
		ip, ok := m["ip_address"].(string)
		if !ok {
			return fail("AllowedAddressPairsMissingIP", "AllowedAddressPair must contain ip_address")
		}
		if _, err := netip.ParseAddr(ip); err != nil {
			if _, err := netip.ParsePrefix(ip); err != nil {
				return fail(webobType(http.StatusBadRequest), fmt.Sprintf("Invalid input for allowed_address_pairs. "+
					"Reason: '%s' is neither a valid IP address, nor is it a valid IP subnet.", ip))
			}
		}
		mac, _ := m["mac_address"].(string)
		if mac != "" {
			if _, err := net.ParseMAC(mac); err != nil {
				return fail(webobType(http.StatusBadRequest), fmt.Sprintf("Invalid input for allowed_address_pairs. "+
					"Reason: '%s' is not a valid MAC address.", mac))
			}
		}
		pair := AddressPair{IPAddress: ip, MACAddress: mac}
		if slices.Contains(out, pair) {
			return fail("DuplicateAddressPairInRequest", fmt.Sprintf("Request contains duplicate address pair: "+
				"mac_address %s ip_address %s.", pyStr(m["mac_address"]), ip))
		}
		out = append(out, pair)
	}
	return out, 0, nil
}

func (s *Server) tagPortLocked(c *call) (*portState, int, any) {
	p := s.ports[c.p["id"]]
	if p == nil || p.Region != c.region || p.project == "" {
		st, body := errPortNotFound(c.p["id"])
		return nil, st, body
	}
	return p, 0, nil
}

func checkTag(tag string) (int, any) {
	if len(tag) > 255 {
		return errNeutron(http.StatusBadRequest, "InvalidInput",
			fmt.Sprintf("Invalid input for operation: '%s' exceeds maximum length of 255.", tag))
	}
	return 0, nil
}

// addPortTag: PUT /v2.0/ports/{id}/tags/{tag}, 201 without a body.
func (s *Server) addPortTag(c *call) (int, any) {
	tag := c.p["tag"]
	if st, body := checkTag(tag); st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, st, body := s.tagPortLocked(c)
	if st != 0 {
		return st, body
	}
	if !slices.Contains(p.Tags, tag) {
		p.Tags = append(p.Tags, tag)
		p.revision++
		p.updated = s.now()
	}
	return http.StatusCreated, nil
}

// deletePortTag: DELETE /v2.0/ports/{id}/tags/{tag}.
func (s *Server) deletePortTag(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, st, body := s.tagPortLocked(c)
	if st != 0 {
		return st, body
	}
	tag := c.p["tag"]
	if !slices.Contains(p.Tags, tag) {
		return errNeutron(http.StatusNotFound, "TagNotFound", "Tag "+tag+" could not be found for port "+p.ID+".")
	}
	p.Tags = slices.DeleteFunc(p.Tags, func(t string) bool { return t == tag })
	p.revision++
	p.updated = s.now()
	return http.StatusNoContent, nil
}

// replacePortTags: PUT /v2.0/ports/{id}/tags with {"tags": [...]}.
func (s *Server) replacePortTags(c *call) (int, any) {
	raw, _ := io.ReadAll(c.r.Body)
	var doc struct {
		Tags *[]string `json:"tags"`
	}
	if json.Unmarshal(raw, &doc) != nil || doc.Tags == nil {
		return errNeutron(http.StatusBadRequest, webobType(http.StatusBadRequest), "Invalid tags body")
	}
	for _, t := range *doc.Tags {
		if st, body := checkTag(t); st != 0 {
			return st, body
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, st, body := s.tagPortLocked(c)
	if st != 0 {
		return st, body
	}
	p.Tags = nil
	for _, t := range *doc.Tags {
		if !slices.Contains(p.Tags, t) {
			p.Tags = append(p.Tags, t)
		}
	}
	p.revision++
	p.updated = s.now()
	return http.StatusOK, map[string]any{"tags": tagsOf(p.Tags)}
}
