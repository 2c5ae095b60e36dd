package openstack

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/providers"
)

func memberAddrs(t *testing.T, lbc *gophercloud.ServiceClient, pool string) []string {
	t.Helper()
	pages, err := pools.ListMembers(lbc, pool, nil).AllPages(context.Background())
	ms, _ := pools.ExtractMembers(pages)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s:%d/%d", m.Address, m.ProtocolPort, m.Weight))
	}
	slices.Sort(out)
	return out
}

// TestLoadBalancerChildren builds a load balancer piece by piece, as
// upstream's CCM does without fully populated creates: a listener with
// allowed CIDRs, its pool, members (one by one and in a batch) and a
// monitor, each change waiting for ACTIVE.
func TestLoadBalancerChildren(t *testing.T) {
	s, clock, _ := lbCloud(t, time.Second, 3)
	ctx := context.Background()
	lbc := lbClient(t, s)
	lbID := s.AddLoadBalancer(LoadBalancerSpec{Name: "lb", VipNetwork: "private"})
	settle := func() { clock.Add(time.Second) }
	limit := 1000
	l, err := listeners.Create(ctx, lbc, listeners.CreateOpts{LoadbalancerID: lbID, Name: "listener_0", Protocol: "HTTP",
		ProtocolPort: 80, ConnLimit: &limit, AllowedCIDRs: []string{"192.0.2.0/24", "10.0.0.0/8"},
		InsertHeaders: map[string]string{"X-Forwarded-For": "true"}, Tags: []string{"a"}}).Extract()
	if err != nil || l.ConnLimit != 1000 || len(l.AllowedCIDRs) != 2 || l.InsertHeaders["X-Forwarded-For"] != "true" ||
		l.Loadbalancers[0].ID != lbID || l.TimeoutMemberConnect != 5000 || l.DefaultPoolID != "" {
		t.Fatalf("listener = %+v %v", l, err)
	}
	settle()
	// Listener checks: one port per transport, CIDRs of the VIP's family.
	_, err = listeners.Create(ctx, lbc, listeners.CreateOpts{LoadbalancerID: lbID, Protocol: "TCP", ProtocolPort: 80}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("port taken: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Another Listener on this Load Balancer is already using protocol HTTP and protocol_port 80", "debuginfo": null}`)
	_, err = listeners.Create(ctx, lbc, listeners.CreateOpts{LoadbalancerID: lbID, Protocol: "UDP", ProtocolPort: 80,
		AllowedCIDRs: []string{"2001:db8::/32"}}).Extract()
	lb, _ := s.LoadBalancer(lbID)
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Validation failure: CIDR 2001:db8::/32 IP version incompatible with all VIPs ['`+lb.VipAddress+`'] IP version.", "debuginfo": null}`)
	_, err = listeners.Create(ctx, lbc, listeners.CreateOpts{LoadbalancerID: lbID, Protocol: "TCP", ProtocolPort: 443,
		InsertHeaders: map[string]string{"X-Forwarded-For": "true"}}).Extract()
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "insert-headers is not a valid option for a TCP protocol listener.", "debuginfo": null}`)

	// A pool on the listener becomes its default pool; a second one is 409.
	p, err := pools.Create(ctx, lbc, pools.CreateOpts{ListenerID: l.ID, Name: "pool_0", Protocol: "HTTP",
		LBMethod: "ROUND_ROBIN", Persistence: &pools.SessionPersistence{Type: "APP_COOKIE", CookieName: "c"}}).Extract()
	if err != nil || p.Listeners[0].ID != l.ID || p.Loadbalancers[0].ID != lbID || p.Persistence.CookieName != "c" {
		t.Fatalf("pool = %+v %v", p, err)
	}
	if got, _ := listeners.Get(ctx, lbc, l.ID).Extract(); got.DefaultPoolID != p.ID || got.ProvisioningStatus != "PENDING_UPDATE" {
		t.Fatalf("listener after pool: %+v", got)
	}
	settle()
	_, err = pools.Create(ctx, lbc, pools.CreateOpts{ListenerID: l.ID, Protocol: "HTTP", LBMethod: "ROUND_ROBIN"}).Extract()
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "This listener already has a default pool", "debuginfo": null}`)
	_, err = pools.Create(ctx, lbc, pools.CreateOpts{LoadbalancerID: lbID, Protocol: "TCP", LBMethod: "ROUND_ROBIN",
		Persistence: &pools.SessionPersistence{Type: "APP_COOKIE"}}).Extract()
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Validation failure: Field \"cookie_name\" must be specified when using the \"APP_COOKIE\" session persistence type.", "debuginfo": null}`)

	// Members one by one.
	sub := subnetOf(s, "private", 4)
	m, err := pools.CreateMember(ctx, lbc, p.ID, pools.CreateMemberOpts{Name: "node-0", Address: "10.0.0.2",
		ProtocolPort: 30080, SubnetID: sub}).Extract()
	if err != nil || m.ProvisioningStatus != "PENDING_CREATE" || m.OperatingStatus != "NO_MONITOR" || m.SubnetID != sub ||
		m.PoolID != "" || m.Weight != 1 {
		t.Fatalf("member = %+v %v", m, err)
	}
	if got, _ := pools.Get(ctx, lbc, p.ID).Extract(); got.ProvisioningStatus != "PENDING_UPDATE" {
		t.Fatalf("pool while its member is made: %s", got.ProvisioningStatus)
	}
	_, err = pools.CreateMember(ctx, lbc, p.ID, pools.CreateMemberOpts{Address: "10.0.0.3", ProtocolPort: 30080}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("member while pending: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Pool `+p.ID+` is immutable and cannot be updated.", "debuginfo": null}`)
	settle()
	_, err = pools.CreateMember(ctx, lbc, p.ID, pools.CreateMemberOpts{Address: "10.0.0.2", ProtocolPort: 30080}).Extract()
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Another member on this pool is already using ip 10.0.0.2 on protocol_port 30080", "debuginfo": null}`)
	w := 5
	if got, err := pools.UpdateMember(ctx, lbc, p.ID, m.ID, pools.UpdateMemberOpts{Weight: &w}).Extract(); err != nil ||
		got.Weight != 5 || got.ProvisioningStatus != "PENDING_UPDATE" {
		t.Fatalf("member update: %+v %v", got, err)
	}
	settle()

	// The batch update: 10.0.0.2 kept (weight back to its default, as a
	// batch gives whole members), .3 and .4 created; then what a batch
	// leaves out is deleted.
	batch := []pools.BatchUpdateMemberOpts{{Address: "10.0.0.2", ProtocolPort: 30080}, {Address: "10.0.0.3", ProtocolPort: 30080},
		{Address: "10.0.0.4", ProtocolPort: 30080}}
	if err := pools.BatchUpdateMembers(ctx, lbc, p.ID, batch).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(memberAddrs(t, lbc, p.ID)); got != "[10.0.0.2:30080/1 10.0.0.3:30080/1 10.0.0.4:30080/1]" {
		t.Fatalf("after batch: %s", got)
	}
	settle()
	if err := pools.BatchUpdateMembers(ctx, lbc, p.ID, batch[1:]).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if got, _ := pools.GetMember(ctx, lbc, p.ID, m.ID).Extract(); got.ProvisioningStatus != "PENDING_DELETE" {
		t.Fatalf("left out: %+v", got)
	}
	settle()
	if got := fmt.Sprint(memberAddrs(t, lbc, p.ID)); got != "[10.0.0.3:30080/1 10.0.0.4:30080/1]" {
		t.Fatalf("after the second batch: %s", got)
	}
	// The same members again still update them all, as Octavia's batch
	// counts every member it is given as updated.
	if err := pools.BatchUpdateMembers(ctx, lbc, p.ID, batch[1:]).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if got, _ := loadbalancers.Get(ctx, lbc, lbID).Extract(); got.ProvisioningStatus != "PENDING_UPDATE" {
		t.Fatalf("same batch: %s", got.ProvisioningStatus)
	}
	settle()

	// A monitor: members go ONLINE under it; one per pool.
	hm, err := monitors.Create(ctx, lbc, monitors.CreateOpts{PoolID: p.ID, Name: "monitor_0", Type: "HTTP", Delay: 5,
		Timeout: 3, MaxRetries: 1, MaxRetriesDown: 3}).Extract()
	if err != nil || hm.HTTPMethod != "GET" || hm.URLPath != "/" || hm.ExpectedCodes != "200" || hm.Pools[0].ID != p.ID {
		t.Fatalf("monitor = %+v %v", hm, err)
	}
	settle()
	_, err = monitors.Create(ctx, lbc, monitors.CreateOpts{PoolID: p.ID, Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 1}).Extract()
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "This pool already has a health monitor", "debuginfo": null}`)
	if got, err := monitors.Update(ctx, lbc, hm.ID, monitors.UpdateOpts{Delay: 10, URLPath: "/healthz"}).Extract(); err != nil ||
		got.Delay != 10 || got.URLPath != "/healthz" {
		t.Fatalf("monitor update: %+v %v", got, err)
	}
	settle()
	ms, _ := pools.ExtractMembers(must1(pools.ListMembers(lbc, p.ID, nil).AllPages(ctx)))
	if ms[0].OperatingStatus != "ONLINE" {
		t.Fatalf("member under a monitor: %s", ms[0].OperatingStatus)
	}
	// Health: one member down degrades the pool, listener and load
	// balancer; all down is ERROR for the pool.
	if err := s.SetMemberOperatingStatus(ms[0].ID, OperatingError); err != nil {
		t.Fatal(err)
	}
	if got, _ := loadbalancers.Get(ctx, lbc, lbID).Extract(); got.OperatingStatus != "DEGRADED" {
		t.Errorf("load balancer with a member down: %s", got.OperatingStatus)
	}
	_ = s.SetMemberOperatingStatus(ms[1].ID, OperatingError)
	if got, _ := pools.Get(ctx, lbc, p.ID).Extract(); got.OperatingStatus != "ERROR" {
		t.Errorf("pool with every member down: %s", got.OperatingStatus)
	}
	if got, _ := listeners.Get(ctx, lbc, l.ID).Extract(); got.OperatingStatus != "DEGRADED" {
		t.Errorf("listener: %s", got.OperatingStatus)
	}

	// Updates: the listener's CIDRs, its default pool unset.
	cidrs, none := []string{"198.51.100.0/24"}, ""
	got, err := listeners.Update(ctx, lbc, l.ID, listeners.UpdateOpts{AllowedCIDRs: &cidrs, DefaultPoolID: &none}).Extract()
	if err != nil || fmt.Sprint(got.AllowedCIDRs) != "[198.51.100.0/24]" || got.DefaultPoolID != "" {
		t.Fatalf("listener update: %+v %v", got, err)
	}
	settle()
	// Deletes: the monitor, then the pool with its members, the listener.
	if err := monitors.Delete(ctx, lbc, hm.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	settle()
	if _, err := monitors.Get(ctx, lbc, hm.ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("deleted monitor: %v", err)
	}
	if err := pools.Delete(ctx, lbc, p.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	settle()
	if _, err := pools.GetMember(ctx, lbc, p.ID, ms[0].ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("member of a deleted pool: %v", err)
	}
	if err := listeners.Delete(ctx, lbc, l.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	settle()
	if cl, _ := s.LoadBalancer(lbID); len(cl.Listeners)+len(cl.Pools) != 0 || cl.ProvisioningStatus != "ACTIVE" {
		t.Fatalf("after the deletes: %+v", cl)
	}
	if err := loadbalancers.Delete(ctx, lbc, lbID, nil).ExtractErr(); err != nil {
		t.Fatalf("childless delete: %v", err)
	}
	for _, name := range []string{ListenersUpdate, ListenersDelete, PoolsCreate, PoolsDelete, MembersCreate, MembersUpdate,
		MembersBatchUpdate, MembersList, HealthMonitorsCreate, HealthMonitorsUpdate, HealthMonitorsDelete} {
		if s.Faults().CallCount(name) == 0 {
			t.Errorf("%s not counted", name)
		}
	}
}

func must1[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestProvisioningErrors: an injected failure leaves the load balancer
// and the changed child in ERROR; an ERROR load balancer can be deleted
// but not changed; injected API faults count under the operation.
func TestProvisioningErrors(t *testing.T) {
	s, _, _ := lbCloud(t, 0, 0)
	ctx := context.Background()
	lbc := lbClient(t, s)
	lbID := s.AddLoadBalancer(LoadBalancerSpec{Name: "lb", VipNetwork: "private", Listeners: []ListenerSpec{{Port: 80,
		DefaultPool: &PoolSpec{Members: []MemberSpec{{Address: "10.0.0.9", Port: 30000}}}}}})
	if err := s.FailNextProvisioning(lbID); err != nil {
		t.Fatal(err)
	}
	l, err := listeners.Create(ctx, lbc, listeners.CreateOpts{LoadbalancerID: lbID, Protocol: "UDP", ProtocolPort: 53}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := loadbalancers.Get(ctx, lbc, lbID).Extract()
	gl, _ := listeners.Get(ctx, lbc, l.ID).Extract()
	if got.ProvisioningStatus != "ERROR" || gl.ProvisioningStatus != "ERROR" {
		t.Fatalf("after a failed operation: lb %s, listener %s", got.ProvisioningStatus, gl.ProvisioningStatus)
	}
	name := "x"
	if _, err := loadbalancers.Update(ctx, lbc, lbID, loadbalancers.UpdateOpts{Name: &name}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("update of an ERROR load balancer: %v", err)
	}
	// Any load balancer's next create fails too.
	if err := s.FailNextProvisioning(""); err != nil {
		t.Fatal(err)
	}
	lb2, err := loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{VipSubnetID: subnetOf(s, "private", 4)}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := loadbalancers.Get(ctx, lbc, lb2.ID).Extract(); got.ProvisioningStatus != "ERROR" || got.OperatingStatus != "OFFLINE" {
		t.Fatalf("failed create: %+v", got)
	}
	if err := loadbalancers.Delete(ctx, lbc, lbID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
		t.Fatalf("delete of an ERROR load balancer: %v", err)
	}
	if _, ok := s.LoadBalancer(lbID); ok {
		t.Error("still there")
	}
	// A status forced by a test.
	if err := s.SetLoadBalancerProvisioningStatus(lb2.ID, ProvisioningPendingUpdate); err != nil {
		t.Fatal(err)
	}
	if cl, _ := s.LoadBalancer(lb2.ID); cl.ProvisioningStatus != "ACTIVE" {
		t.Errorf("a forced PENDING_UPDATE ends like any: %s", cl.ProvisioningStatus)
	}
	// Faults by operation name.
	s.Faults().FailNext(LoadBalancersCreate, 1, http.StatusServiceUnavailable)
	_, err = loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{VipSubnetID: subnetOf(s, "private", 4)}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusServiceUnavailable) || s.Faults().Responses(LoadBalancersCreate)[503] != 1 {
		t.Fatalf("injected: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"faultcode": "Server", "faultstring": "The server is currently unavailable. Please try again at a later time.", "debuginfo": null}`)
}

// TestLoadBalancerVIPs: the VIP by network, subnet or port, and
// Octavia's refusals.
func TestLoadBalancerVIPs(t *testing.T) {
	s, _, servers := lbCloud(t, 0, 1)
	ctx := context.Background()
	lbc := lbClient(t, s)
	priv := netByName(s, "private")
	create := func(opts loadbalancers.CreateOpts) (*loadbalancers.LoadBalancer, error) {
		return loadbalancers.Create(ctx, lbc, opts).Extract()
	}
	lb, err := create(loadbalancers.CreateOpts{VipNetworkID: priv.ID, VipAddress: "fd00::50"})
	if err != nil || lb.VipAddress != "fd00::50" || lb.VipSubnetID != subnetOf(s, "private", 6) {
		t.Fatalf("by network and address: %+v %v", lb, err)
	}
	s.AddNetwork(NetworkSpec{Name: "vips", Subnets: []SubnetSpec{{CIDR: "10.9.0.0/24"}}})
	_, err = create(loadbalancers.CreateOpts{VipSubnetID: subnetOf(s, "private", 4), VipAddress: "10.0.0.2"})
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("taken address: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "IP address 10.0.0.2 already allocated in subnet `+
		subnetOf(s, "private", 4)+`", "debuginfo": null}`)
	_, err = create(loadbalancers.CreateOpts{Name: "novip"})
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.", "debuginfo": null}`)
	missing := "9b3b0b4a-4a1c-4c8e-9e57-000000000000"
	_, err = create(loadbalancers.CreateOpts{VipSubnetID: missing})
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Subnet `+missing+` not found.", "debuginfo": null}`)
	// A server's port is in use; an unbound one is taken as it is.
	nic := s.ServerPorts(servers[0])[0]
	_, err = create(loadbalancers.CreateOpts{VipPortID: nic.ID})
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Validation failure: Port `+nic.ID+` is already used by device `+
		servers[0]+` ", "debuginfo": null}`)
	region := s.Regions()[0]
	s.mu.Lock()
	free, _ := s.newPortLocked(region, "vips", nil, "mine", "")
	s.mu.Unlock()
	lb2, err := create(loadbalancers.CreateOpts{VipPortID: free.ID})
	if err != nil || lb2.VipAddress != "10.9.0.2" || lb2.VipNetworkID != free.NetworkID {
		t.Fatalf("by port: %+v %v", lb2, err)
	}
	if err := loadbalancers.Delete(ctx, lbc, lb2.ID, nil).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := loadbalancers.Get(ctx, lbc, lb2.ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatal(err)
	}
	if _, ok := s.Port(free.ID); !ok {
		t.Error("a user's VIP port went with the load balancer")
	}
	// Unknown attributes and bad values, in WSME's words.
	tok := token(t, s)
	_, b := raw(t, s, tok, http.MethodPost, "/load-balancer/v2/lbaas/loadbalancers",
		`{"loadbalancer": {"vip_subnet_id": "`+subnetOf(s, "private", 4)+`", "vip_sg_ids": [], "colour": "blue"}}`, nil)
	jsonEq(t, b, `{"faultcode": "Client", "faultstring": "Unknown attributes for argument loadbalancer: colour, vip_sg_ids", "debuginfo": null}`)
	_, b = raw(t, s, tok, http.MethodPost, "/load-balancer/v2/lbaas/listeners",
		`{"listener": {"loadbalancer_id": "`+lb.ID+`", "protocol": "FTP", "protocol_port": 21}}`, nil)
	jsonEq(t, b, `{"faultcode": "Client", "faultstring": "Invalid input for field/attribute protocol. Value: 'FTP'. Value should be one of: HTTP, HTTPS, PROMETHEUS, SCTP, TCP, TERMINATED_HTTPS, UDP", "debuginfo": null}`)
	_, b = raw(t, s, tok, http.MethodPost, "/load-balancer/v2/lbaas/listeners", `{"listener": {"loadbalancer_id": "`+lb.ID+`", "protocol": "TCP"}}`, nil)
	jsonEq(t, b, `{"faultcode": "Client", "faultstring": "Invalid input for field/attribute protocol_port. Value: 'None'. Mandatory field missing.", "debuginfo": null}`)
}

func TestProvidersAndFlavors(t *testing.T) {
	s, _, _ := lbCloud(t, 0, 0)
	ctx := context.Background()
	lbc := lbClient(t, s)
	pages, err := providers.List(lbc, nil).AllPages(ctx)
	ps, _ := providers.ExtractProviders(pages)
	if err != nil || len(ps) != 2 || ps[0].Name != "amphora" || ps[1].Description != "Deprecated alias of the Octavia Amphora driver." {
		t.Fatalf("providers: %+v %v", ps, err)
	}
	id := s.AddLoadBalancerFlavor("small", "A small one", true)
	off := s.AddLoadBalancerFlavor("off", "", false)
	pages, err = flavors.List(lbc, nil).AllPages(ctx)
	fs, _ := flavors.ExtractFlavors(pages)
	if err != nil || len(fs) != 2 || fs[0].ID != id && fs[1].ID != id {
		t.Fatalf("flavors: %+v %v", fs, err)
	}
	pages, _ = flavors.List(lbc, flavors.ListOpts{Name: "small"}).AllPages(ctx)
	if fs, _ := flavors.ExtractFlavors(pages); len(fs) != 1 || !fs[0].Enabled || fs[0].FlavorProfileId == "" {
		t.Errorf("by name: %+v", fs)
	}
	sub := subnetOf(s, "private", 4)
	lb, err := loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{VipSubnetID: sub, FlavorID: id, Provider: "octavia"}).Extract()
	if err != nil || lb.FlavorID != id || lb.Provider != "octavia" {
		t.Fatalf("with a flavor: %+v %v", lb, err)
	}
	_, err = loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{VipSubnetID: sub, FlavorID: off}).Extract()
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Validation failure: Invalid flavor_id.", "debuginfo": null}`)
	_, err = loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{VipSubnetID: sub, Provider: "ovn"}).Extract()
	jsonEq(t, errBody(t, err), `{"faultcode": "Client", "faultstring": "Provider 'ovn' is not enabled.", "debuginfo": null}`)
	s.SetLoadBalancerProviders(LoadBalancerProvider{"ovn", "The Octavia OVN driver"})
	if lb, err := loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{VipSubnetID: sub}).Extract(); err != nil || lb.Provider != "ovn" {
		t.Fatalf("default provider: %+v %v", lb, err)
	}
}

// TestAddLoadBalancer: the knob makes an ACTIVE tree, members' health as
// the spec says, and the accessors read it back.
func TestAddLoadBalancer(t *testing.T) {
	s, _, _ := lbCloud(t, time.Hour, 0)
	ctx := context.Background()
	lbc := lbClient(t, s)
	id := s.AddLoadBalancer(LoadBalancerSpec{Name: "web", VipNetwork: "private", VipAddress: "10.0.0.100",
		Tags: []string{"kube_service_c1"}, Listeners: []ListenerSpec{{Name: "http", Protocol: "HTTP", Port: 80,
			AllowedCIDRs: []string{"0.0.0.0/0"}, DefaultPool: &PoolSpec{Protocol: "HTTP", SessionPersistence: "SOURCE_IP",
				Monitor: &MonitorSpec{Type: "HTTP", URLPath: "/healthz"},
				Members: []MemberSpec{{Address: "10.0.0.11", Port: 30080}, {Address: "10.0.0.12", Port: 30080,
					OperatingStatus: OperatingError}}}}}})
	lb, ok := s.LoadBalancer(id)
	if !ok || lb.ProvisioningStatus != "ACTIVE" || lb.OperatingStatus != "DEGRADED" || lb.VipAddress != "10.0.0.100" ||
		len(lb.Listeners) != 1 || len(lb.Pools) != 1 {
		t.Fatalf("lb = %+v", lb)
	}
	p := lb.Pools[0]
	if p.Name != "pool-1" || p.SessionPersistence != "SOURCE_IP" || p.Monitor.URLPath != "/healthz" ||
		p.Monitor.HTTPMethod != "GET" || p.OperatingStatus != "DEGRADED" || p.Members[1].OperatingStatus != "ERROR" ||
		lb.Listeners[0].DefaultPoolID != p.ID || fmt.Sprint(p.ListenerIDs) != "["+lb.Listeners[0].ID+"]" {
		t.Fatalf("pool = %+v", p)
	}
	got, err := loadbalancers.Get(ctx, lbc, id).Extract()
	if err != nil || got.ProvisioningStatus != "ACTIVE" || got.VipPortID != lb.VipPortID {
		t.Fatalf("through the API: %+v %v", got, err)
	}
	if err := s.DeleteLoadBalancer(id); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Port(lb.VipPortID); ok || len(s.LoadBalancers()) != 0 {
		t.Error("DeleteLoadBalancer left something")
	}
}
