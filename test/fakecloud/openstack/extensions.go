package openstack

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// netExtension is a Neutron API extension, as neutron-lib defines it.
type netExtension struct {
	alias, name, description, updated string
}

// networkExtensions are the extensions the fake knows, from neutron-lib's
// API definitions: those whose attributes its documents carry or whose
// behaviour it models.
var networkExtensions = []netExtension{
	{"address-scope", "Address scope", "Address scopes extension.", "2015-07-26T10:00:00-00:00"},
	{"allowed-address-pairs", "Allowed Address Pairs", "Provides allowed address pairs", "2013-07-23T10:00:00-00:00"},
	{"binding", "Port Binding", "Expose port bindings of a virtual port to external application", "2014-02-03T10:00:00-00:00"},
	{"external-net", "Neutron external network", "Adds external network attribute to network resource.", "2013-01-14T10:00:00-00:00"},
	{"ext-gw-mode", "Neutron L3 Configurable external gateway mode",
		"Extension of the router abstraction for specifying whether SNAT should occur on the external gateway", "2013-03-28T10:00:00-00:00"},
	{"extra_dhcp_opt", "Neutron Extra DHCP options", "Extra options configuration for DHCP. For example PXE boot options to " +
		"DHCP clients can be specified (e.g. tftp-server, server-ip-address, bootfile-name)", "2013-03-17T12:00:00-00:00"},
	{"extraroute", "Neutron Extra Route", "Extra routes configuration for L3 router", "2013-02-01T10:00:00-00:00"},
	{"extraroute-atomic", "Atomically add/remove extra routes",
		"Edit extra routes of a router on server side by atomically adding/removing extra routes", "2019-07-10T00:00:00+00:00"},
	{"filter-validation", "Filter parameters validation", "Provides validation on filter parameters.", "2018-07-04T10:00:00-00:00"},
	{"ip_allocation", "IP Allocation", "IP allocation extension.", "2016-06-10T23:00:00-00:00"},
	{"l2_adjacency", "L2 Adjacency", "Display L2 Adjacency for Neutron Networks.", "2016-04-12T16:00:00-00:00"},
	{"net-mtu", "Network MTU", "Provides MTU attribute for a network resource.", "2015-03-25T10:00:00-00:00"},
	{"network_availability_zone", "Network Availability Zone", "Availability zone support for network.", "2015-01-01T10:00:00-00:00"},
	{"pagination", "Pagination support", "Extension that indicates that pagination is enabled.", "2016-06-12T00:00:00-00:00"},
	{"port-security", "Port Security", "Provides port security", "2012-07-23T10:00:00-00:00"},
	{"project-id", "project_id field enabled", "Extension that indicates that project_id field is enabled.", "2016-09-09T09:09:09-09:09"},
	{"revision-if-match", "If-Match constraints based on revision_number",
		"Extension indicating that If-Match based on revision_number is supported.", "2016-12-11T00:00:00-00:00"},
	{"router", "Neutron L3 Router", "Router abstraction for basic L3 forwarding between L2 Neutron networks and access to " +
		"external networks via a NAT gateway.", "2012-07-20T10:00:00-00:00"},
	{"router_availability_zone", "Router Availability Zone", "Availability zone support for router.", "2015-01-01T10:00:00-00:00"},
	{"security-group", "security-group", "The security groups extension.", "2012-10-05T10:00:00-00:00"},
	{"stateful-security-group", "Stateful security group", "Indicates if the security group is stateful or not",
		"2019-11-26T09:00:00-00:00"},
	{"standard-attr-description", "standard-attr-description", "Extension to add descriptions to standard attributes",
		"2016-02-10T10:00:00-00:00"},
	{"standard-attr-revisions", "Resource revision numbers", "This extension will display the revision number of neutron resources.",
		"2016-04-11T10:00:00-00:00"},
	{"standard-attr-tag", "Tag support for resources with standard attribute: subnet, trunk, router, network, policy, " +
		"subnetpool, port, security_group, floatingip", "Enables to set tag on resources with standard attribute.", "2017-01-01T00:00:00-00:00"},
	{"standard-attr-timestamp", "Resource timestamps",
		"Adds created_at and updated_at fields to all Neutron resources that have Neutron standard attributes.", "2016-09-12T10:00:00-00:00"},
	{"trunk", "Trunk Extension", "Provides support for trunk ports", "2016-01-01T10:00:00-00:00"},
	{"trunk-details", "Trunk port details", "Expose trunk port details", "2016-01-01T10:00:00-00:00"},
}

// defaultNetworkExtensions are the extensions offered until
// SetNetworkExtensions: every one the fake knows.
var defaultNetworkExtensions = func() []string {
	var out []string
	for _, e := range networkExtensions {
		out = append(out, e.alias)
	}
	return out
}()

// SetNetworkExtensions sets the Neutron extensions the cloud offers, by
// alias, in place of the default (every extension the fake knows).
// Without "extraroute-atomic" the add_extraroutes and remove_extraroutes
// actions are not found; without "extraroute" routers have no routes
// attribute; without "allowed-address-pairs" ports have no
// allowed_address_pairs, and an update setting them is refused, as on
// such a Neutron. It panics on an alias the fake does not know: a
// mistake in the calling test.
func (s *Server) SetNetworkExtensions(aliases ...string) {
	for _, a := range aliases {
		if !slices.ContainsFunc(networkExtensions, func(e netExtension) bool { return e.alias == a }) {
			panic(fmt.Sprintf("openstack fake: unknown network extension %q", a))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.netExts = slices.Clone(aliases)
}

// NetworkExtensions lists the aliases of the Neutron extensions offered.
func (s *Server) NetworkExtensions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.netExts)
}

func (s *Server) hasExtLocked(alias string) bool { return slices.Contains(s.netExts, alias) }

func (s *Server) registerExtensions() {
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/extensions", ExtensionsList, s.listExtensions)
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/extensions/{alias}", ExtensionsGet, s.getExtension)
}

func wireExt(e netExtension) wireExtension {
	return wireExtension{Name: e.name, Alias: e.alias, Description: e.description, Updated: e.updated, Links: []any{}}
}

// listExtensions: GET /v2.0/extensions, one page, by alias.
func (s *Server) listExtensions(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []wireExtension{}
	for _, e := range networkExtensions {
		if s.hasExtLocked(e.alias) {
			out = append(out, wireExt(e))
		}
	}
	slices.SortFunc(out, func(a, b wireExtension) int { return strings.Compare(a.Alias, b.Alias) })
	return http.StatusOK, map[string]any{"extensions": out}
}

// getExtension: GET /v2.0/extensions/{alias}; pecan's abort(404) of an
// unknown alias, in Neutron's error document.
func (s *Server) getExtension(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	alias := c.p["alias"]
	k := slices.IndexFunc(networkExtensions, func(e netExtension) bool { return e.alias == alias })
	if k < 0 || !s.hasExtLocked(alias) {
		return errNeutron(http.StatusNotFound, webobType(http.StatusNotFound), "Extension with alias "+alias+" does not exist")
	}
	return http.StatusOK, map[string]any{"extension": wireExt(networkExtensions[k])}
}
