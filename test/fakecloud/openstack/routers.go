package openstack

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultRouteQuota is Neutron's default quota_router_route: the most
// extra routes a router may have.
const DefaultRouteQuota = 30

// Route is one of a router's extra routes: packets for Destination (a
// CIDR) go to NextHop.
type Route struct {
	Destination string
	NextHop     string
}

// RouterSpec describes a router for AddRouter; zero fields get defaults.
type RouterSpec struct {
	Name   string // default "router-<n>"; names may repeat, as in Neutron
	Region string // default the first region
	// Subnets are the router's interfaces: each a subnet ID, or a
	// network's ID or name, whose every subnet is attached. The router
	// takes each subnet's gateway address, on a port of the project
	// (device_owner "network:router_interface"), as Neutron's
	// add_router_interface does.
	Subnets []string
	// ExternalNetwork (ID or name) of an external network gives the
	// router a gateway, with an address of the network's first IPv4
	// subnet and of each IPv6 one, on a port of no project.
	ExternalNetwork string
	// Routes are the router's extra routes; each next hop must be in one
	// of its subnets, as Neutron checks.
	Routes []Route
}

// CloudRouter is a router as the fake holds it.
type CloudRouter struct {
	ID                string
	Name              string
	Description       string
	Region            string
	AdminStateUp      bool
	Subnets           []string // the attached subnets' IDs, in order
	ExternalNetworkID string   // "" for none
	Routes            []Route  // in Neutron's order: by destination, then next hop
	RevisionNumber    int
}

type routerState struct {
	CloudRouter
	ports   []string // interface ports, in order
	gwPort  string
	created time.Time
	updated time.Time
}

func (r *routerState) clone() CloudRouter {
	c := r.CloudRouter
	c.Subnets = slices.Clone(c.Subnets)
	c.Routes = slices.Clone(c.Routes)
	return c
}

// AddRouter creates a router with its interfaces, gateway and routes, as
// the project would, and returns its ID. It panics on an unknown network
// or subnet, a subnet without a gateway or whose gateway another router
// holds, a network that is not external for the gateway, or invalid
// routes: mistakes in the calling test.
func (s *Server) AddRouter(spec RouterSpec) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	region := s.regionLocked(spec.Region)
	now := s.now()
	r := &routerState{CloudRouter: CloudRouter{ID: newUUID(), Name: cmp.Or(spec.Name, fmt.Sprintf("router-%d", len(s.routers)+1)),
		Region: region, AdminStateUp: true, RevisionNumber: 1}, created: now, updated: now}
	s.routers[r.ID] = r
	fail := func(err error) {
		s.deleteRouterLocked(r)
		panic("openstack fake: " + err.Error())
	}
	if spec.ExternalNetwork != "" {
		n := s.networkByRefLocked(region, spec.ExternalNetwork)
		if n == nil || !n.External {
			fail(fmt.Errorf("no external network %q in region %s", spec.ExternalNetwork, region))
		}
		p, err := s.newPortLocked(region, n.ID, nil, "", "")
		if err != nil {
			fail(err)
		}
		p.DeviceID, p.DeviceOwner, p.Status, p.project = r.ID, deviceOwnerRouterGateway, PortActive, ""
		r.gwPort, r.ExternalNetworkID = p.ID, n.ID
		r.RevisionNumber++
	}
	for _, ref := range spec.Subnets {
		var subs []string
		if sub := s.subnets[ref]; sub != nil && sub.region == region {
			subs = []string{ref}
		} else if n := s.networkByRefLocked(region, ref); n != nil {
			subs = n.subnets
		} else {
			fail(fmt.Errorf("no subnet or network %q in region %s", ref, region))
		}
		for _, id := range subs {
			if err := s.addInterfaceLocked(r, s.subnets[id]); err != nil {
				fail(err)
			}
		}
	}
	if len(spec.Routes) > 0 {
		if err := s.setRoutesLocked(r, spec.Routes); err != nil {
			fail(err)
		}
	}
	return r.ID
}

// addInterfaceLocked attaches a subnet to a router at its gateway
// address: on a port of its own, but for an IPv6 subnet of a network the
// router has an IPv6 port on already, which takes the address too, as
// Neutron does.
func (s *Server) addInterfaceLocked(r *routerState, sub *subnetState) error {
	if !sub.gateway.IsValid() {
		return fmt.Errorf("subnet %s has no gateway IP", sub.ID)
	}
	if slices.Contains(r.Subnets, sub.ID) {
		return fmt.Errorf("router %s is already on subnet %s", r.ID, sub.ID)
	}
	for _, p := range s.ports {
		if slices.Contains(p.FixedIPs, FixedIP{SubnetID: sub.ID, IP: sub.Gateway}) {
			return fmt.Errorf("the gateway %s of subnet %s is taken", sub.Gateway, sub.ID)
		}
	}
	fixed := FixedIP{SubnetID: sub.ID, IP: sub.Gateway}
	r.Subnets = append(r.Subnets, sub.ID)
	r.RevisionNumber++
	if sub.IPVersion == 6 {
		for _, id := range r.ports {
			p := s.ports[id]
			if p.NetworkID == sub.NetworkID && ipVersion(p.FixedIPs[0].IP) == 6 {
				p.FixedIPs = append(p.FixedIPs, fixed)
				return nil
			}
		}
	}
	p := s.makePortLocked(r.Region, sub.NetworkID, "", "")
	p.DeviceID, p.DeviceOwner, p.Status, p.FixedIPs = r.ID, deviceOwnerRouterInterface, PortActive, []FixedIP{fixed}
	r.ports = append(r.ports, p.ID)
	return nil
}

// Router returns a router by ID.
func (s *Server) Router(id string) (CloudRouter, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.routers[id]
	if !ok {
		return CloudRouter{}, false
	}
	return r.clone(), true
}

// Routers returns every router of every region, oldest first.
func (s *Server) Routers() []CloudRouter {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := slices.Collect(maps.Values(s.routers))
	slices.SortFunc(rs, func(a, b *routerState) int { return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.ID, b.ID)) })
	var out []CloudRouter
	for _, r := range rs {
		out = append(out, r.clone())
	}
	return out
}

// SetRouterRoutes replaces a router's extra routes, as another client's
// update would, checked as Neutron checks them (but for the quota).
func (s *Server) SetRouterRoutes(id string, routes []Route) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.routers[id]
	if !ok {
		return fmt.Errorf("openstack fake: no router %s", id)
	}
	if err := s.setRoutesLocked(r, routes); err != nil {
		return fmt.Errorf("openstack fake: %w", err)
	}
	return nil
}

// DeleteRouter deletes a router with its interface and gateway ports.
func (s *Server) DeleteRouter(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.routers[id]
	if !ok {
		return fmt.Errorf("openstack fake: no router %s", id)
	}
	s.deleteRouterLocked(r)
	return nil
}

func (s *Server) deleteRouterLocked(r *routerState) {
	for _, id := range append(slices.Clone(r.ports), r.gwPort) {
		if p := s.ports[id]; p != nil {
			s.deletePortLocked(p)
		}
	}
	delete(s.routers, r.ID)
}

// SetRouteQuota sets Neutron's quota_router_route, the most extra routes
// a router may have (DefaultRouteQuota); a negative quota is none.
func (s *Server) SetRouteQuota(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routeQuota = n
}

// setRoutesLocked checks routes as a knob's and sets them.
func (s *Server) setRoutesLocked(r *routerState, routes []Route) error {
	in := make([]routeIn, 0, len(routes))
	for _, rt := range routes {
		in = append(in, routeIn{keys: []string{"destination", "nexthop"},
			vals: map[string]any{"destination": rt.Destination, "nexthop": rt.NextHop}})
	}
	if msg := validateHostRoutes(in); msg != "" {
		return fmt.Errorf("invalid routes: %s", msg)
	}
	if st, body := s.checkRoutesLocked(r, in); st != 0 {
		return fmt.Errorf("invalid routes: %s", body.(*neutronError).NeutronError.Message)
	}
	if s.applyRoutesLocked(r, in) {
		s.bumpLocked(r)
	}
	return nil
}

// bumpLocked records a change of the router: a new revision, updated now.
func (s *Server) bumpLocked(r *routerState) {
	r.RevisionNumber++
	r.updated = s.now()
}

// routeIn is a route as a request gives it: its keys in their order
// (Neutron's messages show the dictionaries as Python writes them) and
// their values, whatever JSON they are.
type routeIn struct {
	keys []string
	vals map[string]any
}

func (ri routeIn) dest() string    { s, _ := ri.vals["destination"].(string); return s }
func (ri routeIn) nexthop() string { s, _ := ri.vals["nexthop"].(string); return s }

// pyRepr writes the route as Python's str() of its dictionary.
func (ri routeIn) pyRepr() string {
	var parts []string
	for _, k := range ri.keys {
		parts = append(parts, pyRepr(k)+": "+pyRepr(ri.vals[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func routesRepr(routes []routeIn) string {
	var parts []string
	for _, r := range routes {
		parts = append(parts, r.pyRepr())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// pyRepr writes a decoded JSON value as Python's repr() does.
func pyRepr(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	case string:
		if strings.Contains(v, "'") && !strings.Contains(v, `"`) {
			return `"` + v + `"`
		}
		return "'" + strings.ReplaceAll(v, "'", `\'`) + "'"
	case json.Number:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []any:
		var parts []string
		for _, e := range v {
			parts = append(parts, pyRepr(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, pyRepr(k)+": "+pyRepr(v[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case routeIn:
		return v.pyRepr()
	}
	return fmt.Sprint(v)
}

// pyStr writes a value as Python's str() does: strings bare.
func pyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return pyRepr(v)
}

// validateHostRoutes is neutron-lib's validate_hostroutes: a list of
// dictionaries of exactly destination (a CIDR with no host bits, not
// loopback) and nexthop (an IP address), none twice. It returns the
// reason a list is invalid, or "".
func validateHostRoutes(routes []routeIn) string {
	for k, r := range routes {
		if len(r.keys) != 2 || !slices.Contains(r.keys, "destination") || !slices.Contains(r.keys, "nexthop") {
			provided := "set()"
			if len(r.keys) > 0 {
				var keys []string
				for _, k := range slices.Sorted(slices.Values(r.keys)) {
					keys = append(keys, pyRepr(k))
				}
				provided = "{" + strings.Join(keys, ", ") + "}"
			}
			return "Validation of dictionary's keys failed. Expected keys: {'destination', 'nexthop'} Provided keys: " + provided
		}
		dst, ok := r.vals["destination"].(string)
		if !ok {
			return "'" + pyStr(r.vals["destination"]) + "' is not a valid CIDR"
		}
		p, err := netip.ParsePrefix(dst)
		if err != nil || p != p.Masked() || p.Addr().Zone() != "" {
			return "'" + dst + "' is not a valid CIDR"
		}
		if p.Addr().IsLoopback() {
			return "'" + dst + "' is not a routable CIDR"
		}
		nh, ok := r.vals["nexthop"].(string)
		if a, err := netip.ParseAddr(nh); !ok || err != nil || a.Zone() != "" {
			return "'" + pyStr(r.vals["nexthop"]) + "' is not a valid IP address"
		}
		for _, prev := range routes[:k] {
			if prev.dest() == dst && prev.nexthop() == nh {
				return "Duplicate hostroute '" + r.pyRepr() + "'"
			}
		}
	}
	return ""
}

// checkRoutesLocked is Neutron's extraroute check of a router's whole
// set of routes: each next hop in a subnet of one of the router's ports
// (interfaces and gateway) but none of their addresses, and no more
// routes than the quota allows.
func (s *Server) checkRoutesLocked(r *routerState, routes []routeIn) (int, any) {
	var cidrs []netip.Prefix
	var ips []netip.Addr
	for _, id := range append(slices.Clone(r.ports), r.gwPort) {
		p := s.ports[id]
		if p == nil {
			continue
		}
		for _, f := range p.FixedIPs {
			cidrs = append(cidrs, s.subnets[f.SubnetID].prefix)
			ips = append(ips, netip.MustParseAddr(f.IP))
		}
	}
	for _, rt := range routes {
		nh := netip.MustParseAddr(rt.nexthop())
		reason := ""
		switch {
		case !slices.ContainsFunc(cidrs, func(p netip.Prefix) bool { return p.Contains(nh) }):
			reason = "the nexthop is not connected with router"
		case slices.Contains(ips, nh):
			reason = "the nexthop is used by router"
		}
		if reason != "" {
			return errNeutron(http.StatusBadRequest, "InvalidRoutes",
				"Invalid format for routes: "+routesRepr(routes)+", "+reason)
		}
	}
	if s.routeQuota >= 0 && len(routes) > s.routeQuota {
		return errNeutron(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['router_route'].")
	}
	return 0, nil
}

// applyRoutesLocked stores routes as Neutron does, in canonical form and
// each once, and says whether they changed (the caller bumps the
// revision).
func (s *Server) applyRoutesLocked(r *routerState, routes []routeIn) bool {
	out := []Route{}
	for _, rt := range routes {
		c := Route{Destination: netip.MustParsePrefix(rt.dest()).String(), NextHop: netip.MustParseAddr(rt.nexthop()).String()}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Route) int {
		return cmp.Or(strings.Compare(a.Destination, b.Destination), strings.Compare(a.NextHop, b.NextHop))
	})
	if slices.Equal(out, r.Routes) || len(out) == 0 && len(r.Routes) == 0 {
		return false
	}
	r.Routes = out
	return true
}

func (s *Server) registerRouters() {
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/routers", RoutersList, s.listRouters)
	s.handle(svcNetwork, http.MethodGet, "/network/v2.0/routers/{id}", RoutersGet, s.getRouter)
	s.handle(svcNetwork, http.MethodPut, "/network/v2.0/routers/{id}", RoutersUpdate, s.updateRouter)
	s.handle(svcNetwork, http.MethodPut, "/network/v2.0/routers/{id}/add_extraroutes", RoutersAddExtraRoutes,
		func(c *call) (int, any) { return s.editExtraRoutes(c, true) })
	s.handle(svcNetwork, http.MethodPut, "/network/v2.0/routers/{id}/remove_extraroutes", RoutersRemoveExtraRoutes,
		func(c *call) (int, any) { return s.editExtraRoutes(c, false) })
}

var routerFilters = []string{"id", "name", "admin_state_up", "tenant_id", "project_id", "description", "revision_number"}

func (s *Server) listRouters(c *call) (int, any) {
	nq, st, body := parseNeutronQuery(c.r, routerFilters)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []neutronItem
	pid := s.account.ProjectID
	for _, r := range s.routers {
		if r.Region != c.region {
			continue
		}
		items = append(items, neutronItem{id: r.ID, fields: map[string][]string{
			"id": {r.ID}, "name": {r.Name}, "admin_state_up": {strconv.FormatBool(r.AdminStateUp)}, "tenant_id": {pid},
			"project_id": {pid}, "description": {r.Description}, "revision_number": {strconv.Itoa(r.RevisionNumber)}}})
	}
	return neutronPage(c, "routers", nq, items, func(id string) any { return s.wireRouterLocked(s.routers[id]) },
		func(id string) (int, any) { return errRouterNotFound(id) })
}

func errRouterNotFound(id string) (int, any) {
	return errNeutron(http.StatusNotFound, "RouterNotFound", "Router "+id+" could not be found")
}

func (s *Server) routerLocked(c *call) *routerState {
	r := s.routers[c.p["id"]]
	if r == nil || r.Region != c.region {
		return nil
	}
	return r
}

func (s *Server) getRouter(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.routerLocked(c)
	if r == nil {
		return errRouterNotFound(c.p["id"])
	}
	return http.StatusOK, map[string]any{"router": s.wireRouterLocked(r)}
}

func (s *Server) wireRouterLocked(r *routerState) wireRouter {
	pid := s.account.ProjectID
	w := wireRouter{ID: r.ID, Name: r.Name, Status: "ACTIVE", AdminStateUp: r.AdminStateUp, TenantID: pid, ProjectID: pid,
		Description: r.Description, AvailabilityZoneHints: []string{}, AvailabilityZones: []string{"nova"}, Tags: []string{},
		CreatedAt: stamp(r.created), UpdatedAt: stamp(r.updated), RevisionNumber: r.RevisionNumber}
	if p := s.ports[r.gwPort]; p != nil {
		gw := &wireGatewayInfo{NetworkID: p.NetworkID, ExternalFixedIPs: []wireFixedIP{}, EnableSNAT: true}
		for _, f := range p.FixedIPs {
			gw.ExternalFixedIPs = append(gw.ExternalFixedIPs, wireFixedIP{SubnetID: f.SubnetID, IPAddress: f.IP})
		}
		w.ExternalGatewayInfo = gw
	}
	if s.hasExtLocked("extraroute") {
		routes := []wireRoute{}
		for _, rt := range r.Routes {
			routes = append(routes, wireRoute{Destination: rt.Destination, NextHop: rt.NextHop})
		}
		w.Routes = &routes
	}
	return w
}

// The router attributes a PUT may set, and those it may not, after
// Neutron's l3 definition and the extensions the fake offers ("routes"
// with extraroute).
var (
	routerPutAttrs      = []string{"name", "admin_state_up", "external_gateway_info", "description"}
	routerReadOnlyAttrs = []string{"id", "status", "tenant_id", "project_id", "availability_zone_hints",
		"availability_zones", "tags", "created_at", "updated_at", "revision_number"}
)

// routerBody is a router document of a PUT, after Neutron's body
// validation (prepare_request_body and the attributes' validators).
type routerBody struct {
	attrs  map[string]json.RawMessage
	routes []routeIn
	hasRts bool
}

// readRouterBody validates a PUT's {"router": {...}} as Neutron's body
// validation hook does, in its order and words.
func (s *Server) readRouterBody(c *call) (routerBody, int, any) {
	bad := func(msg string) (routerBody, int, any) {
		st, body := errNeutron(http.StatusBadRequest, webobType(http.StatusBadRequest), msg)
		return routerBody{}, st, body
	}
	raw, err := io.ReadAll(c.r.Body)
	if err != nil || len(bytes.TrimSpace(raw)) == 0 {
		return bad("Resource body required")
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		return bad("Body contains invalid data")
	}
	if _, ok := doc["routers"]; ok {
		return bad("Bulk operation not supported")
	}
	res, ok := doc["router"]
	if !ok || string(bytes.TrimSpace(res)) == "null" {
		return bad("Unable to find 'router' in request body")
	}
	var rb routerBody
	if err := json.Unmarshal(res, &rb.attrs); err != nil || rb.attrs == nil {
		return bad("Object 'router' contains invalid data")
	}
	s.mu.Lock()
	put := slices.Clone(routerPutAttrs)
	if s.hasExtLocked("extraroute") {
		put = append(put, "routes")
	}
	pid := s.account.ProjectID
	s.mu.Unlock()
	for _, k := range []string{"project_id", "tenant_id"} {
		if v, ok := rb.attrs[k]; ok {
			var p string
			if json.Unmarshal(v, &p) != nil || p != pid {
				return bad("Specifying 'project_id' or 'tenant_id' other than the authenticated project in request requires admin privileges")
			}
		}
	}
	var unknown []string
	for k := range rb.attrs {
		if !slices.Contains(put, k) && !slices.Contains(routerReadOnlyAttrs, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return bad("Unrecognized attribute(s) '" + strings.Join(unknown, ", ") + "'")
	}
	for _, k := range routerReadOnlyAttrs {
		if _, ok := rb.attrs[k]; ok {
			return bad("Cannot update read-only attribute " + k)
		}
	}
	for _, k := range []string{"name", "description"} {
		v, ok := rb.attrs[k]
		if !ok {
			continue
		}
		var val any
		_ = json.Unmarshal(v, &val)
		str, isStr := val.(string)
		switch {
		case !isStr:
			return bad(fmt.Sprintf("Invalid input for %s. Reason: '%s' is not a valid string.", k, pyStr(val)))
		case len(str) > 255:
			return bad(fmt.Sprintf("Invalid input for %s. Reason: '%s' exceeds maximum length of 255.", k, str))
		}
	}
	if v, ok := rb.attrs["admin_state_up"]; ok {
		var val any
		_ = json.Unmarshal(v, &val)
		if _, ok := toBoolean(val); !ok {
			st, body := errNeutron(http.StatusBadRequest, "InvalidInput",
				fmt.Sprintf("Invalid input for operation: '%s' cannot be converted to boolean.", pyStr(val)))
			return routerBody{}, st, body
		}
	}
	if v, ok := rb.attrs["routes"]; ok {
		rb.hasRts = true
		routes, msg := decodeRoutes(v)
		if msg == "" {
			msg = validateHostRoutes(routes)
		}
		if msg != "" {
			return bad("Invalid input for routes. Reason: " + msg + ".")
		}
		rb.routes = routes
	}
	return rb, 0, nil
}

// toBoolean is neutron-lib's convert_to_boolean.
func toBoolean(v any) (bool, bool) {
	switch v := v.(type) {
	case bool:
		return v, true
	case float64:
		return v == 1, v == 0 || v == 1
	case string:
		switch strings.ToLower(v) {
		case "true", "1":
			return true, true
		case "false", "0":
			return false, true
		}
	}
	return false, false
}

// decodeRoutes reads a routes attribute, keeping each dictionary's keys
// in their order. null is no routes (convert_none_to_empty_list).
func decodeRoutes(raw json.RawMessage) ([]routeIn, string) {
	var val any
	_ = json.Unmarshal(raw, &val)
	if val == nil {
		return nil, ""
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, "Invalid data format for hostroute: '" + pyStr(val) + "'"
	}
	var out []routeIn
	for k, item := range items {
		m, ok := val.([]any)[k].(map[string]any)
		if !ok {
			return nil, "Invalid input. '" + pyStr(val.([]any)[k]) +
				"' must be a dictionary with keys: ['destination', 'nexthop']"
		}
		out = append(out, routeIn{keys: jsonKeys(item), vals: m})
	}
	return out, ""
}

// jsonKeys lists a JSON object's keys in their order.
func jsonKeys(raw json.RawMessage) []string {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return keys
		}
		if k, ok := t.(string); ok && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// ifMatchRevision reads an If-Match: revision_number=N constraint, as
// Neutron's check_request_for_revision_constraint does.
func ifMatchRevision(r *http.Request) (int, bool, int, any) {
	rev, found := 0, false
	for _, h := range r.Header.Values("If-Match") {
		for _, tag := range strings.Split(h, ",") {
			tag = strings.Trim(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(tag), "W/")), `"`)
			v, ok := strings.CutPrefix(tag, "revision_number=")
			if !ok {
				continue
			}
			if found {
				st, body := errNeutron(http.StatusBadRequest, "BadRequest",
					"Bad if-match request: Multiple revision_number etags are not supported.")
				return 0, false, st, body
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				st, body := errNeutron(http.StatusBadRequest, "BadRequest",
					"Bad if-match request: Revision number etag must be in the format of revision_number=<int>.")
				return 0, false, st, body
			}
			rev, found = n, true
		}
	}
	return rev, found, 0, nil
}

// updateRouter: PUT /v2.0/routers/{id}. The body is validated first,
// then the router looked up, then its routes checked against its ports
// and the quota, then an If-Match revision, as Neutron does in turn.
// external_gateway_info is not modelled: the fake refuses to change it.
func (s *Server) updateRouter(c *call) (int, any) {
	rb, st, body := s.readRouterBody(c)
	if st != 0 {
		return st, body
	}
	rev, constrained, st, body := ifMatchRevision(c.r)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.routerLocked(c)
	if r == nil {
		return errRouterNotFound(c.p["id"])
	}
	if _, ok := rb.attrs["external_gateway_info"]; ok {
		return errNeutron(http.StatusBadRequest, webobType(http.StatusBadRequest),
			"openstack fake: changing a router's external_gateway_info is not modelled")
	}
	if rb.hasRts {
		if st, body := s.checkRoutesLocked(r, rb.routes); st != 0 {
			return st, body
		}
	}
	if constrained && rev != r.RevisionNumber {
		return errNeutron(http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
			fmt.Sprintf("Constrained to %d, but current revision is %d", rev, r.RevisionNumber))
	}
	changed := false
	if rb.hasRts {
		changed = s.applyRoutesLocked(r, rb.routes)
	}
	var name, desc string
	var up any
	if v, ok := rb.attrs["name"]; ok && json.Unmarshal(v, &name) == nil && name != r.Name {
		r.Name, changed = name, true
	}
	if v, ok := rb.attrs["description"]; ok && json.Unmarshal(v, &desc) == nil && desc != r.Description {
		r.Description, changed = desc, true
	}
	if v, ok := rb.attrs["admin_state_up"]; ok && json.Unmarshal(v, &up) == nil {
		if b, _ := toBoolean(up); b != r.AdminStateUp {
			r.AdminStateUp, changed = b, true
		}
	}
	if changed {
		s.bumpLocked(r)
	}
	return http.StatusOK, map[string]any{"router": s.wireRouterLocked(r)}
}

// editExtraRoutes: PUT /v2.0/routers/{id}/add_extraroutes and
// remove_extraroutes (extraroute-atomic), which merge the routes given
// into the router's, or take them out of them (routes it does not have
// are no error), and check the whole set as an update does. They answer
// the whole router.
func (s *Server) editExtraRoutes(c *call, add bool) (int, any) {
	s.mu.Lock()
	atomic := s.hasExtLocked("extraroute-atomic") && s.hasExtLocked("extraroute")
	s.mu.Unlock()
	if !atomic {
		return errNoRoute(svcNetwork, nil)
	}
	rb, st, body := s.readRouterBody(c)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.routerLocked(c)
	if r == nil {
		return errRouterNotFound(c.p["id"])
	}
	if !rb.hasRts {
		// The plugin reads body['router']['routes'] unchecked.
		return errStatus(svcNetwork, http.StatusInternalServerError)
	}
	routes := mergeRoutes(r.Routes, rb.routes, add)
	if st, body := s.checkRoutesLocked(r, routes); st != 0 {
		return st, body
	}
	if s.applyRoutesLocked(r, routes) {
		s.bumpLocked(r)
	}
	return http.StatusOK, map[string]any{"router": s.wireRouterLocked(r)}
}

// mergeRoutes is extraroute_db's _add_extra_routes or
// _remove_extra_routes: routes grouped by destination, in the order
// destinations first appear, each next hop once.
func mergeRoutes(old []Route, change []routeIn, add bool) []routeIn {
	var dsts []string
	hops := map[string][]string{}
	put := func(d, n string) {
		if _, ok := hops[d]; !ok {
			dsts = append(dsts, d)
		}
		if !slices.Contains(hops[d], n) {
			hops[d] = append(hops[d], n)
		}
	}
	for _, r := range old {
		put(r.Destination, r.NextHop)
	}
	for _, r := range change {
		if add {
			put(r.dest(), r.nexthop())
		} else if hs, ok := hops[r.dest()]; ok {
			hops[r.dest()] = slices.DeleteFunc(hs, func(h string) bool { return h == r.nexthop() })
		}
	}
	out := []routeIn{}
	for _, d := range dsts {
		for _, n := range hops[d] {
			out = append(out, routeIn{keys: []string{"destination", "nexthop"}, vals: map[string]any{"destination": d, "nexthop": n}})
		}
	}
	return out
}
