package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// routed makes the cluster network with n servers, the external network
// "public" and a router between them, and returns the router's ID.
func routed(t *testing.T, s *Server, n int) (router string, servers []string) {
	t.Helper()
	_, servers = cluster(s, n)
	s.AddNetwork(NetworkSpec{Name: "public", External: true, Subnets: []SubnetSpec{{CIDR: "203.0.113.0/24"}}})
	router = s.AddRouter(RouterSpec{Name: "r1", Subnets: []string{"private"}, ExternalNetwork: "public"})
	return router, servers
}

func netByName(s *Server, name string) CloudNetwork {
	for _, n := range s.Networks() {
		if n.Name == name {
			return n
		}
	}
	return CloudNetwork{}
}

func routeStrings(rs []routers.Route) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.DestinationCIDR+">"+r.NextHop)
	}
	return out
}

// TestRoutes follows upstream's Routes: the router by ID, its ports by
// device_id, then routes replaced with Update or edited with the
// extraroute-atomic actions.
func TestRoutes(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	id, _ := routed(t, s, 3)
	_, network := clients(t, s)

	r, err := routers.Get(ctx, network, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	pub, priv := netByName(s, "public"), netByName(s, "private")
	if r.Name != "r1" || r.Status != "ACTIVE" || !r.AdminStateUp || r.ProjectID != s.Account().ProjectID || r.Routes == nil ||
		len(r.Routes) != 0 || r.GatewayInfo.NetworkID != pub.ID || len(r.GatewayInfo.ExternalFixedIPs) != 1 ||
		r.GatewayInfo.ExternalFixedIPs[0].IPAddress != "203.0.113.2" || r.CreatedAt.IsZero() || r.RevisionNumber == 0 {
		t.Fatalf("router = %+v", r)
	}
	// The interfaces are the project's ports on the subnets' gateways;
	// the gateway port is no project's, so not listed.
	pages, err := ports.List(network, ports.ListOpts{DeviceID: id}).AllPages(ctx)
	ps, _ := ports.ExtractPorts(pages)
	var ips []string
	for _, p := range ps {
		if p.DeviceOwner != "network:router_interface" || p.NetworkID != priv.ID || p.Status != "ACTIVE" {
			t.Errorf("interface %+v", p)
		}
		ips = append(ips, p.FixedIPs[0].IPAddress)
	}
	slices.Sort(ips)
	if err != nil || fmt.Sprint(ips) != "[10.0.0.1 fd00::1]" {
		t.Errorf("router ports: %v %v", ips, err)
	}

	// Update replaces the routes.
	want := []routers.Route{{DestinationCIDR: "10.244.1.0/24", NextHop: "10.0.0.3"}, {DestinationCIDR: "10.244.0.0/24", NextHop: "10.0.0.2"}}
	r2, err := routers.Update(ctx, network, id, routers.UpdateOpts{Routes: &want}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(routeStrings(r2.Routes)); got != "[10.244.0.0/24>10.0.0.2 10.244.1.0/24>10.0.0.3]" ||
		r2.RevisionNumber != r.RevisionNumber+1 {
		t.Errorf("after update: %s rev %d", got, r2.RevisionNumber)
	}
	// The atomic actions answer the whole router.
	add := []routers.Route{{DestinationCIDR: "10.244.2.0/24", NextHop: "10.0.0.4"}, {DestinationCIDR: "10.244.0.0/24", NextHop: "10.0.0.2"}}
	r3, err := extraroutes.Add(ctx, network, id, extraroutes.Opts{Routes: &add}).Extract()
	if err != nil || len(r3.Routes) != 3 || r3.ID != id {
		t.Fatalf("add: %+v %v", r3, err)
	}
	rm := []routers.Route{{DestinationCIDR: "10.244.1.0/24", NextHop: "10.0.0.3"}, {DestinationCIDR: "10.9.9.0/24", NextHop: "10.0.0.9"}}
	r4, err := extraroutes.Remove(ctx, network, id, extraroutes.Opts{Routes: &rm}).Extract()
	if got := fmt.Sprint(routeStrings(r4.Routes)); err != nil || got != "[10.244.0.0/24>10.0.0.2 10.244.2.0/24>10.0.0.4]" {
		t.Errorf("remove: %s %v", got, err)
	}
	// The knobs read and write the same routes.
	cr, _ := s.Router(id)
	if fmt.Sprint(cr.Routes) != "[{10.244.0.0/24 10.0.0.2} {10.244.2.0/24 10.0.0.4}]" || cr.RevisionNumber != r4.RevisionNumber {
		t.Errorf("Router = %+v", cr)
	}
	if err := s.SetRouterRoutes(id, []Route{{"10.244.5.0/24", "10.0.0.5"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRouterRoutes(id, []Route{{"10.244.5.0/24", "192.0.2.1"}}); err == nil {
		t.Error("SetRouterRoutes took an unreachable next hop")
	}
	if r, _ := routers.Get(ctx, network, id).Extract(); fmt.Sprint(routeStrings(r.Routes)) != "[10.244.5.0/24>10.0.0.5]" {
		t.Errorf("after SetRouterRoutes: %v", r.Routes)
	}
	// A next hop on the external subnet is connected too.
	ext := []routers.Route{{DestinationCIDR: "0.0.0.0/0", NextHop: "203.0.113.1"}}
	if _, err := extraroutes.Add(ctx, network, id, extraroutes.Opts{Routes: &ext}).Extract(); err != nil {
		t.Errorf("external next hop: %v", err)
	}
	for _, name := range []string{RoutersGet, RoutersUpdate, RoutersAddExtraRoutes, RoutersRemoveExtraRoutes} {
		if s.Faults().CallCount(name) == 0 {
			t.Errorf("%s not counted", name)
		}
	}
	// List by name.
	s.AddRouter(RouterSpec{Name: "other"})
	pages, err = routers.List(network, routers.ListOpts{Name: "r1"}).AllPages(ctx)
	if rs, _ := routers.ExtractRouters(pages); err != nil || len(rs) != 1 || rs[0].ID != id {
		t.Errorf("list by name: %v %v", rs, err)
	}
}

func TestRouteErrors(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	id, _ := routed(t, s, 1)
	_, network := clients(t, s)
	tok := token(t, s)
	path := "/network/v2.0/routers/" + id

	// Next hops off the router's subnets, as gophercloud writes routes
	// (nexthop first), which Neutron's message shows as given.
	r, b := raw(t, s, tok, http.MethodPut, path, `{"router": {"routes": [{"nexthop": "192.168.9.9", "destination": "10.244.9.0/24"}]}}`, nil)
	if r.StatusCode != http.StatusBadRequest {
		t.Errorf("unconnected next hop: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"NeutronError": {"type": "InvalidRoutes", "message": "Invalid format for routes: [{'nexthop': '192.168.9.9', 'destination': '10.244.9.0/24'}], the nexthop is not connected with router", "detail": ""}}`)
	_, b = raw(t, s, tok, http.MethodPut, path+"/add_extraroutes", `{"router": {"routes": [{"destination": "10.244.9.0/24", "nexthop": "10.0.0.1"}]}}`, nil)
	jsonEq(t, b, `{"NeutronError": {"type": "InvalidRoutes", "message": "Invalid format for routes: [{'destination': '10.244.9.0/24', 'nexthop': '10.0.0.1'}], the nexthop is used by router", "detail": ""}}`)
	// gophercloud sees the 400.
	bad := []routers.Route{{DestinationCIDR: "10.244.9.0/24", NextHop: "172.16.0.1"}}
	if _, err := extraroutes.Add(ctx, network, id, extraroutes.Opts{Routes: &bad}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusBadRequest) {
		t.Errorf("gophercloud: %v", err)
	}
	// Destinations must be CIDRs, checked with the body.
	r, b = raw(t, s, tok, http.MethodPut, path, `{"router": {"routes": [{"destination": "10.244.9.0", "nexthop": "10.0.0.2"}]}}`, nil)
	if r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad destination: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"NeutronError": {"type": "HTTPBadRequest", "message": "Invalid input for routes. Reason: '10.244.9.0' is not a valid CIDR.", "detail": ""}}`)
	_, b = raw(t, s, tok, http.MethodPut, path, `{"router": {"routes": [{"destination": "10.244.9.1/24", "nexthop": "10.0.0.2"}]}}`, nil)
	if doc(t, b)["NeutronError"].(map[string]any)["message"] != "Invalid input for routes. Reason: '10.244.9.1/24' is not a valid CIDR." {
		t.Errorf("host bits: %s", b)
	}
	_, b = raw(t, s, tok, http.MethodPut, path, `{"router": {"colour": "blue"}}`, nil)
	jsonEq(t, b, `{"NeutronError": {"type": "HTTPBadRequest", "message": "Unrecognized attribute(s) 'colour'", "detail": ""}}`)
	// A router that is not there.
	r, b = raw(t, s, tok, http.MethodPut, "/network/v2.0/routers/nope", `{"router": {"routes": []}}`, nil)
	if r.StatusCode != http.StatusNotFound {
		t.Errorf("missing router: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"NeutronError": {"type": "RouterNotFound", "message": "Router nope could not be found", "detail": ""}}`)
	if _, err := routers.Get(ctx, network, "nope").Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("get: %v", err)
	}
	// If-Match on the revision.
	cur, _ := s.Router(id)
	routes := []routers.Route{}
	rev := cur.RevisionNumber + 5
	_, err := routers.Update(ctx, network, id, routers.UpdateOpts{Routes: &routes, RevisionNumber: &rev}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) {
		t.Errorf("stale revision: %v", err)
	}
	rev = cur.RevisionNumber
	if _, err := routers.Update(ctx, network, id, routers.UpdateOpts{Name: "renamed", RevisionNumber: &rev}).Extract(); err != nil {
		t.Errorf("current revision: %v", err)
	}
	// The route quota.
	s.SetRouteQuota(1)
	two := []routers.Route{{DestinationCIDR: "10.244.1.0/24", NextHop: "10.0.0.2"}, {DestinationCIDR: "10.244.2.0/24", NextHop: "10.0.0.2"}}
	_, err = routers.Update(ctx, network, id, routers.UpdateOpts{Routes: &two}).Extract()
	var ue gophercloud.ErrUnexpectedResponseCode
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) || !errors.As(err, &ue) {
		t.Fatalf("over quota: %v", err)
	}
	jsonEq(t, ue.Body, `{"NeutronError": {"type": "OverQuota", "message": "Quota exceeded for resources: ['router_route'].", "detail": ""}}`)
	// Injected faults count under the action's name.
	s.Faults().FailNext(RoutersAddExtraRoutes, 1, http.StatusInternalServerError)
	one := two[:1]
	if _, err := extraroutes.Add(ctx, network, id, extraroutes.Opts{Routes: &one}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusInternalServerError) {
		t.Errorf("injected: %v", err)
	}
	if got := s.Faults().Responses(RoutersAddExtraRoutes); got[500] != 1 {
		t.Errorf("responses = %v", got)
	}
}

func TestNetworkExtensions(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	id, _ := routed(t, s, 1)
	_, network := clients(t, s)
	e, err := extensions.Get(ctx, network, "extraroute").Extract()
	if err != nil || e.Alias != "extraroute" || e.Name != "Neutron Extra Route" || e.Updated != "2013-02-01T10:00:00-00:00" {
		t.Errorf("extraroute: %+v %v", e, err)
	}
	pages, err := extensions.List(network).AllPages(ctx)
	all, _ := extensions.ExtractExtensions(pages)
	var aliases []string
	for _, e := range all {
		aliases = append(aliases, e.Alias)
	}
	if err != nil || !slices.Contains(aliases, "extraroute-atomic") || !slices.Contains(aliases, "router") ||
		!slices.Contains(aliases, "allowed-address-pairs") || !slices.IsSorted(aliases) {
		t.Errorf("extensions: %v %v", aliases, err)
	}
	tok := token(t, s)
	r, b := raw(t, s, tok, http.MethodGet, "/network/v2.0/extensions/nope", "", nil)
	if r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown alias: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"NeutronError": {"type": "HTTPNotFound", "message": "Extension with alias nope does not exist", "detail": ""}}`)

	// Without extraroute-atomic, the actions are not there; Update is.
	s.SetNetworkExtensions("router", "extraroute")
	routes := []routers.Route{{DestinationCIDR: "10.244.1.0/24", NextHop: "10.0.0.2"}}
	if _, err := extraroutes.Add(ctx, network, id, extraroutes.Opts{Routes: &routes}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("add without extraroute-atomic: %v", err)
	}
	if _, err := routers.Update(ctx, network, id, routers.UpdateOpts{Routes: &routes}).Extract(); err != nil {
		t.Errorf("update: %v", err)
	}
	// Without extraroute, routers have no routes.
	s.SetNetworkExtensions("router")
	_, b = raw(t, s, tok, http.MethodGet, "/network/v2.0/routers/"+id, "", nil)
	if _, ok := doc(t, b)["router"].(map[string]any)["routes"]; ok {
		t.Errorf("routes without extraroute: %s", b)
	}
	r, b = raw(t, s, tok, http.MethodPut, "/network/v2.0/routers/"+id, `{"router": {"routes": []}}`, nil)
	if r.StatusCode != http.StatusBadRequest {
		t.Errorf("routes without extraroute: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"NeutronError": {"type": "HTTPBadRequest", "message": "Unrecognized attribute(s) 'routes'", "detail": ""}}`)
	if _, err := extensions.Get(ctx, network, "extraroute").Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("extraroute off: %v", err)
	}
}
