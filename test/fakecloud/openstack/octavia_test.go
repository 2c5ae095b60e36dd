package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// testClock is a clock tests move by hand, for Octavia's provisioning
// time without sleeping.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *testClock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// lbCloud is a fake with the cluster network (10.0.0.0/24, fd00::/64)
// and its servers, on a clock of the test's, provisioning taking delay.
func lbCloud(t *testing.T, delay time.Duration, nodes int) (*Server, *testClock, []string) {
	t.Helper()
	s := start(t)
	clock := &testClock{now: time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)}
	s.SetClock(clock.Now)
	s.SetLoadBalancerProvisioningDelay(delay)
	_, servers := cluster(s, nodes)
	return s, clock, servers
}

// lbClient is gophercloud's Octavia client, found in the catalog as
// upstream's CCM finds it.
func lbClient(t *testing.T, s *Server) *gophercloud.ServiceClient {
	t.Helper()
	c, err := gos.NewLoadBalancerV2(provider(t, s), gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func subnetOf(s *Server, network string, version int) string {
	for _, sub := range netByName(s, network).Subnets {
		if sub.IPVersion == version {
			return sub.ID
		}
	}
	return ""
}

// errBody is the body of gophercloud's error for an unexpected status.
func errBody(t *testing.T, err error) []byte {
	t.Helper()
	var ue gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ue) {
		t.Fatalf("not a response error: %v", err)
	}
	return ue.Body
}

// TestLoadBalancerStateMachine follows upstream's create-then-wait: the
// load balancer is PENDING_CREATE for the provisioning time, then ACTIVE;
// every change refuses while it is PENDING_*.
func TestLoadBalancerStateMachine(t *testing.T) {
	s, clock, _ := lbCloud(t, 5*time.Second, 0)
	ctx := context.Background()
	lbc := lbClient(t, s)
	_, network := clients(t, s)
	v4 := subnetOf(s, "private", 4)

	lb, err := loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{Name: "kube_service_c1_default_web",
		Description: "Kubernetes external service default/web", VipSubnetID: v4, Tags: []string{"kube_service_c1"}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if lb.ProvisioningStatus != "PENDING_CREATE" || lb.OperatingStatus != "OFFLINE" || lb.VipSubnetID != v4 ||
		lb.VipAddress != "10.0.0.2" || lb.Provider != "amphora" || !lb.AdminStateUp || lb.ProjectID != s.Account().ProjectID ||
		lb.CreatedAt.IsZero() || !lb.UpdatedAt.IsZero() || len(lb.Listeners) != 0 || fmt.Sprint(lb.Tags) != "[kube_service_c1]" {
		t.Fatalf("created = %+v", lb)
	}
	// The VIP is a real port of the subnet, Octavia's.
	vip, err := ports.Get(ctx, network, lb.VipPortID).Extract()
	if err != nil || vip.Name != "octavia-lb-"+lb.ID || vip.DeviceOwner != "Octavia" || vip.DeviceID != "lb-"+lb.ID ||
		vip.AdminStateUp || vip.NetworkID != netByName(s, "private").ID || vip.FixedIPs[0].IPAddress != lb.VipAddress {
		t.Fatalf("VIP port = %+v %v", vip, err)
	}
	// Pending: a listener, an update, a delete are refused.
	_, err = listeners.Create(ctx, lbc, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: "TCP", ProtocolPort: 80}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("listener while pending: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Load Balancer `+lb.ID+
		` is immutable and cannot be updated.", "debuginfo": null}`)
	name := "renamed"
	_, err = loadbalancers.Update(ctx, lbc, lb.ID, loadbalancers.UpdateOpts{Name: &name}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("update while pending: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Invalid state PENDING_CREATE of loadbalancer resource `+
		lb.ID+`", "debuginfo": null}`)
	// Still pending a moment before the time; ACTIVE and ONLINE at it.
	clock.Add(4 * time.Second)
	if got, _ := loadbalancers.Get(ctx, lbc, lb.ID).Extract(); got.ProvisioningStatus != "PENDING_CREATE" {
		t.Fatalf("after 4s: %s", got.ProvisioningStatus)
	}
	clock.Add(time.Second)
	got, err := loadbalancers.Get(ctx, lbc, lb.ID).Extract()
	if err != nil || got.ProvisioningStatus != "ACTIVE" || got.OperatingStatus != "ONLINE" || got.UpdatedAt.IsZero() {
		t.Fatalf("after 5s: %+v %v", got, err)
	}

	// An update answers with the new values, PENDING_UPDATE; children
	// wait for ACTIVE again.
	tags := []string{"kube_service_c1", "extra"}
	up, err := loadbalancers.Update(ctx, lbc, lb.ID, loadbalancers.UpdateOpts{Name: &name, Tags: &tags}).Extract()
	if err != nil || up.Name != "renamed" || up.ProvisioningStatus != "PENDING_UPDATE" || len(up.Tags) != 2 {
		t.Fatalf("update: %+v %v", up, err)
	}
	_, err = pools.Create(ctx, lbc, pools.CreateOpts{LoadbalancerID: lb.ID, Protocol: "TCP", LBMethod: "ROUND_ROBIN"}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("pool while PENDING_UPDATE: %v", err)
	}
	clock.Add(5 * time.Second)
	l, err := listeners.Create(ctx, lbc, listeners.CreateOpts{LoadbalancerID: lb.ID, Name: "listener_0", Protocol: "TCP",
		ProtocolPort: 80}).Extract()
	if err != nil || l.ProvisioningStatus != "PENDING_CREATE" || l.OperatingStatus != "OFFLINE" {
		t.Fatalf("listener: %+v %v", l, err)
	}
	if cl, _ := s.LoadBalancer(lb.ID); cl.ProvisioningStatus != "PENDING_UPDATE" || cl.Listeners[0].ProvisioningStatus != "PENDING_CREATE" {
		t.Fatalf("knob while pending: %+v", cl)
	}
	clock.Add(5 * time.Second)
	if cl, _ := s.LoadBalancer(lb.ID); cl.ProvisioningStatus != "ACTIVE" || cl.Listeners[0].OperatingStatus != "ONLINE" {
		t.Fatalf("knob after: %+v", cl)
	}

	// Delete: refused with children, cascade takes them, then 404.
	err = loadbalancers.Delete(ctx, lbc, lb.ID, nil).ExtractErr()
	if !gophercloud.ResponseCodeIs(err, http.StatusBadRequest) {
		t.Fatalf("delete with children: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Validation failure: Cannot delete Load Balancer `+
		lb.ID+` - it has children", "debuginfo": null}`)
	if err := loadbalancers.Delete(ctx, lbc, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if got, _ := loadbalancers.Get(ctx, lbc, lb.ID).Extract(); got.ProvisioningStatus != "PENDING_DELETE" {
		t.Fatalf("deleting: %+v", got)
	}
	clock.Add(5 * time.Second)
	_, err = loadbalancers.Get(ctx, lbc, lb.ID).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("deleted: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Load Balancer `+lb.ID+` not found.", "debuginfo": null}`)
	if _, ok := s.Port(lb.VipPortID); ok {
		t.Error("the VIP port outlived its load balancer")
	}
	if _, err := listeners.Get(ctx, lbc, l.ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("cascaded listener: %v", err)
	}
	for _, name := range []string{LoadBalancersCreate, LoadBalancersGet, LoadBalancersUpdate, LoadBalancersDelete, ListenersCreate} {
		if s.Faults().CallCount(name) == 0 {
			t.Errorf("%s not counted", name)
		}
	}
}

// TestLoadBalancerFullyPopulated creates a load balancer with its
// listeners, pools, members and monitors in one request, as upstream's
// CCM does when the cloud allows it.
func TestLoadBalancerFullyPopulated(t *testing.T) {
	s, _, _ := lbCloud(t, 0, 2)
	ctx := context.Background()
	lbc := lbClient(t, s)
	member := func(ip string) pools.CreateMemberOpts {
		return pools.CreateMemberOpts{Name: "node", Address: ip, ProtocolPort: 31000, SubnetID: subnetOf(s, "private", 4)}
	}
	opts := loadbalancers.CreateOpts{Name: "full", VipNetworkID: netByName(s, "private").ID, Tags: []string{"t1"},
		Listeners: []listeners.CreateOpts{{Name: "listener_0", Protocol: "TCP", ProtocolPort: 80,
			AllowedCIDRs: []string{"192.0.2.0/24"}, DefaultPool: &pools.CreateOpts{Name: "pool_0", Protocol: "TCP",
				LBMethod: "ROUND_ROBIN", Members: []pools.CreateMemberOpts{member("10.0.0.3"), member("10.0.0.4")},
				Monitor: monitors.CreateOpts{Name: "monitor_0", Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 1}}},
			{Name: "listener_1", Protocol: "UDP", ProtocolPort: 80, DefaultPool: &pools.CreateOpts{Name: "pool_1",
				Protocol: "UDP", LBMethod: "SOURCE_IP_PORT"}}},
		Pools: []pools.CreateOpts{{Name: "pool_2", Protocol: "HTTP", LBMethod: "LEAST_CONNECTIONS"}}}
	lb, err := loadbalancers.Create(ctx, lbc, opts).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if lb.ProvisioningStatus != "PENDING_CREATE" || len(lb.Listeners) != 2 || len(lb.Pools) != 3 ||
		lb.VipSubnetID != subnetOf(s, "private", 4) {
		t.Fatalf("lb = %+v", lb)
	}
	byName := map[string]pools.Pool{}
	for _, p := range lb.Pools {
		byName[p.Name] = p
	}
	p0 := byName["pool_0"]
	if len(p0.Members) != 2 || p0.Members[0].OperatingStatus != "OFFLINE" || p0.Monitor.Name != "monitor_0" ||
		p0.Monitor.ProvisioningStatus != "PENDING_CREATE" || byName["pool_1"].LBMethod != "SOURCE_IP_PORT" {
		t.Fatalf("pools = %+v", lb.Pools)
	}
	if lb.Listeners[0].DefaultPoolID != p0.ID || lb.Listeners[1].DefaultPoolID != byName["pool_1"].ID ||
		fmt.Sprint(lb.Listeners[0].AllowedCIDRs) != "[192.0.2.0/24]" || lb.Listeners[0].TimeoutClientData != 50000 {
		t.Fatalf("listeners = %+v", lb.Listeners)
	}
	// The status tree, once ACTIVE: listeners hold their pools.
	tree, err := loadbalancers.GetStatuses(ctx, lbc, lb.ID).Extract()
	if err != nil || tree.Loadbalancer.ProvisioningStatus != "ACTIVE" || tree.Loadbalancer.OperatingStatus != "ONLINE" ||
		len(tree.Loadbalancer.Listeners) != 2 {
		t.Fatalf("status tree = %+v %v", tree, err)
	}
	tl := tree.Loadbalancer.Listeners[0]
	if tl.Name != "listener_0" || len(tl.Pools) != 1 || len(tl.Pools[0].Members) != 2 ||
		tl.Pools[0].Members[0].OperatingStatus != "ONLINE" || tl.Pools[0].Members[0].ProvisioningStatus != "ACTIVE" {
		t.Fatalf("listener status = %+v", tl)
	}
	// Upstream's lookups: listeners by load balancer, pools, members.
	pages, err := listeners.List(lbc, listeners.ListOpts{LoadbalancerID: lb.ID, Name: "listener_1"}).AllPages(ctx)
	ls, _ := listeners.ExtractListeners(pages)
	if err != nil || len(ls) != 1 || ls[0].Protocol != "UDP" || ls[0].Loadbalancers[0].ID != lb.ID {
		t.Fatalf("listeners by name: %+v %v", ls, err)
	}
	pages, err = pools.List(lbc, pools.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
	ps, _ := pools.ExtractPools(pages)
	if err != nil || len(ps) != 3 || len(byName["pool_2"].Listeners) != 0 {
		t.Fatalf("pools: %+v %v", ps, err)
	}
	pages, err = pools.ListMembers(lbc, p0.ID, pools.ListMembersOpts{}).AllPages(ctx)
	ms, _ := pools.ExtractMembers(pages)
	// Made in the same second, they come by ID, as Octavia's database
	// sorts them.
	if err != nil || len(ms) != 2 || ms[0].ID > ms[1].ID || ms[1].OperatingStatus != "ONLINE" || ms[1].Weight != 1 ||
		fmt.Sprint(memberAddrs(t, lbc, p0.ID)) != "[10.0.0.3:31000/1 10.0.0.4:31000/1]" {
		t.Fatalf("members: %+v %v", ms, err)
	}
	if cl, _ := s.LoadBalancer(lb.ID); cl.Pools[1].Monitor == nil || cl.Pools[1].Monitor.Type != "TCP" || cl.Pools[2].ListenerIDs[0] != ls[0].ID {
		t.Fatalf("knob: %+v", cl)
	}

	// Graph errors, in Octavia's words.
	bad := opts
	bad.Listeners = []listeners.CreateOpts{{Protocol: "TCP", ProtocolPort: 80, DefaultPool: &pools.CreateOpts{Protocol: "TCP", LBMethod: "ROUND_ROBIN"}}}
	bad.Pools = nil
	_, err = loadbalancers.Create(ctx, lbc, bad).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusBadRequest) {
		t.Fatalf("unnamed pool: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Validation failure: Pools must be named when creating a fully populated loadbalancer.", "debuginfo": null}`)
	bad.Listeners = []listeners.CreateOpts{{Protocol: "TCP", ProtocolPort: 80, DefaultPool: &pools.CreateOpts{Name: "x",
		Protocol: "UDP", LBMethod: "ROUND_ROBIN"}}}
	_, err = loadbalancers.Create(ctx, lbc, bad).Extract()
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Validation failure: The pool protocol 'UDP' is invalid while the listener protocol is 'TCP'.", "debuginfo": null}`)
	bad.Listeners = []listeners.CreateOpts{{Protocol: "TCP", ProtocolPort: 80}, {Protocol: "HTTP", ProtocolPort: 80}}
	_, err = loadbalancers.Create(ctx, lbc, bad).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("two listeners on one port: %v", err)
	}
	// A refused graph leaves no VIP port behind.
	if got := len(s.LoadBalancers()); got != 1 {
		t.Errorf("%d load balancers", got)
	}
	pages, _ = ports.List(clientsNetwork(t, s), ports.ListOpts{DeviceOwner: "Octavia"}).AllPages(ctx)
	if vips, _ := ports.ExtractPorts(pages); len(vips) != 1 {
		t.Errorf("VIP ports: %d", len(vips))
	}
}

func clientsNetwork(t *testing.T, s *Server) *gophercloud.ServiceClient {
	t.Helper()
	_, network := clients(t, s)
	return network
}

// TestLoadBalancerListing pages and filters as Octavia does: by
// created_at then id, limit and marker, loadbalancers_links with only the
// limit and marker.
func TestLoadBalancerListing(t *testing.T) {
	s, clock, _ := lbCloud(t, 0, 0)
	ctx := context.Background()
	lbc := lbClient(t, s)
	var ids []string
	for i := range 5 {
		tags := []string{"cluster=c1"}
		if i%2 == 0 {
			tags = append(tags, "even")
		}
		ids = append(ids, s.AddLoadBalancer(LoadBalancerSpec{Name: fmt.Sprintf("lb-%d", i), VipNetwork: "private", Tags: tags}))
		clock.Add(time.Second)
	}
	var pagesSeen [][]string
	err := loadbalancers.List(lbc, loadbalancers.ListOpts{Limit: 2}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		lbs, err := loadbalancers.ExtractLoadBalancers(p)
		var names []string
		for _, lb := range lbs {
			names = append(names, lb.Name)
		}
		pagesSeen = append(pagesSeen, names)
		return true, err
	})
	if err != nil || fmt.Sprint(pagesSeen) != "[[lb-0 lb-1] [lb-2 lb-3] [lb-4]]" {
		t.Fatalf("pages = %v %v", pagesSeen, err)
	}
	// Filters: name, tags (all), tags-any, vip_address, vip_port_id.
	list := func(opts loadbalancers.ListOpts) []string {
		t.Helper()
		pages, err := loadbalancers.List(lbc, opts).AllPages(ctx)
		lbs, _ := loadbalancers.ExtractLoadBalancers(pages)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, lb := range lbs {
			names = append(names, lb.Name)
		}
		return names
	}
	lb3, _ := s.LoadBalancer(ids[3])
	for _, tc := range []struct {
		opts loadbalancers.ListOpts
		want string
	}{
		{loadbalancers.ListOpts{Name: "lb-2"}, "[lb-2]"},
		{loadbalancers.ListOpts{Tags: []string{"cluster=c1", "even"}}, "[lb-0 lb-2 lb-4]"},
		{loadbalancers.ListOpts{TagsAny: []string{"even", "nope"}}, "[lb-0 lb-2 lb-4]"},
		{loadbalancers.ListOpts{TagsNot: []string{"even"}}, "[lb-1 lb-3]"},
		{loadbalancers.ListOpts{VipAddress: lb3.VipAddress}, "[lb-3]"},
		{loadbalancers.ListOpts{VipPortID: lb3.VipPortID}, "[lb-3]"},
		{loadbalancers.ListOpts{ProvisioningStatus: "ACTIVE", Name: "lb-1"}, "[lb-1]"},
	} {
		if got := fmt.Sprint(list(tc.opts)); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.opts, got, tc.want)
		}
	}
	// Raw: the links carry limit and marker only, as Octavia writes them.
	tok := token(t, s)
	_, b := raw(t, s, tok, http.MethodGet, "/load-balancer/v2/lbaas/loadbalancers?limit=2&name=lb-1", "", nil)
	d := doc(t, b)
	if links := d["loadbalancers_links"].([]any); len(links) != 0 || len(d["loadbalancers"].([]any)) != 1 {
		t.Errorf("short page: %s", b)
	}
	_, b = raw(t, s, tok, http.MethodGet, "/load-balancer/v2/lbaas/loadbalancers?limit=2&tags=even", "", nil)
	links := doc(t, b)["loadbalancers_links"].([]any)
	next, _ := url.Parse(links[0].(map[string]any)["href"].(string))
	if len(links) != 1 || links[0].(map[string]any)["rel"] != "next" || next.Path != "/load-balancer/v2/lbaas/loadbalancers" ||
		next.RawQuery != "limit=2&marker="+ids[2] {
		t.Errorf("links %v", links)
	}
	_, b = raw(t, s, tok, http.MethodGet, "/load-balancer/v2/lbaas/loadbalancers?limit=2&marker="+ids[1], "", nil)
	links = doc(t, b)["loadbalancers_links"].([]any)
	if len(links) != 2 || links[0].(map[string]any)["rel"] != "previous" ||
		links[0].(map[string]any)["href"] != s.URL()+"/load-balancer/v2/lbaas/loadbalancers?limit=2&marker="+ids[2]+"&page_reverse=True" {
		t.Errorf("links after a marker: %v", links)
	}
	r, b := raw(t, s, tok, http.MethodGet, "/load-balancer/v2/lbaas/loadbalancers?marker=nope", "", nil)
	if r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad marker: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"faultcode": "Client", "faultstring": "Supplied pagination marker 'nope' is not valid.", "debuginfo": null}`)
	_, b = raw(t, s, tok, http.MethodGet, "/load-balancer/v2/lbaas/loadbalancers?colour=blue", "", nil)
	jsonEq(t, b, `{"faultcode": "Client", "faultstring": "One or more arguments are either duplicate or invalid", "debuginfo": null}`)
	_, b = raw(t, s, tok, http.MethodGet, "/load-balancer/v2/lbaas/loadbalancers?limit=x", "", nil)
	jsonEq(t, b, `{"faultcode": "Client", "faultstring": "Supplied pagination limit 'x' is not valid.", "debuginfo": null}`)
	// sort_key and sort_dir.
	_, b = raw(t, s, tok, http.MethodGet, "/load-balancer/v2/lbaas/loadbalancers?sort_key=name&sort_dir=desc&limit=1", "", nil)
	if lbs := doc(t, b)["loadbalancers"].([]any); lbs[0].(map[string]any)["name"] != "lb-4" {
		t.Errorf("sorted: %s", b)
	}
	if !slices.Equal(ids, func() []string {
		var out []string
		for _, lb := range s.LoadBalancers() {
			out = append(out, lb.ID)
		}
		return out
	}()) {
		t.Error("LoadBalancers is not oldest first")
	}
}
