package openstack

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
)

func fipAddrs(t *testing.T, network *gophercloud.ServiceClient, opts floatingips.ListOpts) []string {
	t.Helper()
	pages, err := floatingips.List(network, opts).AllPages(context.Background())
	fs, _ := floatingips.ExtractFloatingIPs(pages)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.FloatingIP)
	}
	return out
}

// TestFloatingIPs allocates, associates, lists, disassociates and frees
// floating IPs through gophercloud, with Neutron's refusals.
func TestFloatingIPs(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	router, srvs := routed(t, s, 2)
	compute, network := clients(t, s)
	pub := netByName(s, "public")
	fip, err := floatingips.Create(ctx, network, floatingips.CreateOpts{FloatingNetworkID: pub.ID, Description: "mine"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	// 203.0.113.2 is the router's gateway.
	if fip.FloatingIP != "203.0.113.3" || fip.Status != "DOWN" || fip.PortID != "" || fip.RouterID != "" ||
		fip.ProjectID != s.Account().ProjectID || fip.Description != "mine" || fip.CreatedAt.IsZero() {
		t.Fatalf("created = %+v", fip)
	}
	nic := s.ServerPorts(srvs[0])[0]
	up, err := floatingips.Update(ctx, network, fip.ID, floatingips.UpdateOpts{PortID: &nic.ID}).Extract()
	if err != nil || up.PortID != nic.ID || up.FixedIP != "10.0.0.2" || up.RouterID != router || up.Status != "ACTIVE" ||
		up.RevisionNumber != fip.RevisionNumber+1 {
		t.Fatalf("associated = %+v %v", up, err)
	}
	// Nova lists it among the server's addresses.
	sv, err := servers.Get(ctx, compute, srvs[0]).Extract()
	if err != nil {
		t.Fatal(err)
	}
	floating := false
	for _, a := range sv.Addresses["private"].([]any) {
		if m := a.(map[string]any); m["OS-EXT-IPS:type"] == "floating" && m["addr"] == "203.0.113.3" {
			floating = true
		}
	}
	if !floating {
		t.Errorf("server addresses: %v", sv.Addresses)
	}
	// A chosen address, with a port, in one request.
	nic1 := s.ServerPorts(srvs[1])[0]
	fip2, err := floatingips.Create(ctx, network, floatingips.CreateOpts{FloatingNetworkID: pub.ID, FloatingIP: "203.0.113.50",
		PortID: nic1.ID}).Extract()
	if err != nil || fip2.FixedIP != "10.0.0.3" || fip2.Status != "ACTIVE" {
		t.Fatalf("with a port: %+v %v", fip2, err)
	}
	s.AddFloatingIP(FloatingIPSpec{Network: "public", Tags: []string{"spare"}, Description: "spare"})
	for _, tc := range []struct {
		opts floatingips.ListOpts
		want string
	}{
		{floatingips.ListOpts{PortID: nic.ID}, "[203.0.113.3]"},
		{floatingips.ListOpts{FloatingIP: "203.0.113.50"}, "[203.0.113.50]"},
		{floatingips.ListOpts{FloatingNetworkID: pub.ID, Description: "spare"}, "[203.0.113.4]"},
		{floatingips.ListOpts{Tags: "spare"}, "[203.0.113.4]"},
		{floatingips.ListOpts{Status: "ACTIVE", FixedIP: "10.0.0.3"}, "[203.0.113.50]"},
	} {
		if got := fmt.Sprint(fipAddrs(t, network, tc.opts)); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.opts, got, tc.want)
		}
	}

	// Refusals.
	_, err = floatingips.Create(ctx, network, floatingips.CreateOpts{FloatingNetworkID: pub.ID, FloatingIP: "203.0.113.50"}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("taken: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "IpAddressAlreadyAllocated", "message": "IP address 203.0.113.50 already allocated in subnet `+
		pub.Subnets[0].ID+`", "detail": ""}}`)
	priv := netByName(s, "private")
	_, err = floatingips.Create(ctx, network, floatingips.CreateOpts{FloatingNetworkID: priv.ID}).Extract()
	jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "BadRequest", "message": "Bad floatingip request: Network `+priv.ID+
		` is not a valid external network.", "detail": ""}}`)
	_, err = floatingips.Update(ctx, network, fip2.ID, floatingips.UpdateOpts{PortID: &nic.ID}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("fixed IP with a floating IP already: %v", err)
	}
	// A network no router joins to the external one.
	s.AddNetwork(NetworkSpec{Name: "isolated", Subnets: []SubnetSpec{{CIDR: "10.7.0.0/24"}}})
	lone := s.AddServer(ServerSpec{Name: "lone", Ports: []PortSpec{{Network: "isolated"}}})
	loneNIC := s.ServerPorts(lone)[0]
	_, err = floatingips.Create(ctx, network, floatingips.CreateOpts{FloatingNetworkID: pub.ID, PortID: loneNIC.ID}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("unreachable: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "ExternalGatewayForFloatingIPNotFound", "message": "External network `+
		pub.ID+` is not reachable from subnet `+loneNIC.FixedIPs[0].SubnetID+`.  Therefore, cannot associate Port `+loneNIC.ID+
		` with a Floating IP.", "detail": ""}}`)
	// A port of two IPv4 addresses needs fixed_ip_address.
	two := s.AddServer(ServerSpec{Name: "two", Ports: []PortSpec{{Network: "private", IPs: []string{"10.0.0.40", "10.0.0.41"}}}})
	twoNIC := s.ServerPorts(two)[0]
	_, err = floatingips.Update(ctx, network, fip.ID, floatingips.UpdateOpts{PortID: &twoNIC.ID}).Extract()
	jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "BadRequest", "message": "Bad floatingip request: Port `+twoNIC.ID+
		` has multiple fixed IPv4 addresses.  Must provide a specific IPv4 address when assigning a floating IP.", "detail": ""}}`)
	if up, err := floatingips.Update(ctx, network, fip.ID, floatingips.UpdateOpts{PortID: &twoNIC.ID, FixedIP: "10.0.0.41"}).Extract(); err != nil ||
		up.FixedIP != "10.0.0.41" {
		t.Fatalf("with fixed_ip_address: %+v %v", up, err)
	}
	if _, err := floatingips.Get(ctx, network, "nope").Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatal(err)
	} else {
		jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "FloatingIPNotFound", "message": "Floating IP nope could not be found", "detail": ""}}`)
	}

	// Disassociate (port_id null), delete, and the address is free again.
	empty := ""
	down, err := floatingips.Update(ctx, network, fip.ID, floatingips.UpdateOpts{PortID: &empty}).Extract()
	if err != nil || down.PortID != "" || down.FixedIP != "" || down.RouterID != "" || down.Status != "DOWN" {
		t.Fatalf("disassociated = %+v %v", down, err)
	}
	if p, _ := s.Port(twoNIC.ID); p.FloatingIP != "" {
		t.Errorf("port keeps %s", p.FloatingIP)
	}
	if err := floatingips.Delete(ctx, network, fip.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := floatingips.Get(ctx, network, fip.ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("deleted: %v", err)
	}
	if _, err := floatingips.Create(ctx, network, floatingips.CreateOpts{FloatingNetworkID: pub.ID, FloatingIP: "203.0.113.3"}).Extract(); err != nil {
		t.Fatalf("freed address: %v", err)
	}
	// Deleting the server disassociates its floating IP.
	if err := s.DeleteServer(srvs[1]); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.FloatingIP(fip2.ID); f.PortID != "" || f.Status != "DOWN" {
		t.Errorf("after the port went: %+v", f)
	}
	for _, name := range []string{FloatingIPsList, FloatingIPsCreate, FloatingIPsGet, FloatingIPsUpdate, FloatingIPsDelete} {
		if s.Faults().CallCount(name) == 0 {
			t.Errorf("%s not counted", name)
		}
	}
}

// TestFloatingIPOnVIP is upstream's Service of type LoadBalancer: a
// floating IP on the load balancer's VIP port, freed from it when the
// load balancer goes.
func TestFloatingIPOnVIP(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	s.SetLoadBalancerProvisioningDelay(0)
	routed(t, s, 1)
	_, network := clients(t, s)
	lbc := lbClient(t, s)
	lb, err := loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{VipSubnetID: subnetOf(s, "private", 4)}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	pub := netByName(s, "public")
	fip, err := floatingips.Create(ctx, network, floatingips.CreateOpts{FloatingNetworkID: pub.ID, PortID: lb.VipPortID,
		Description: "Floating IP for Kubernetes external service default/web from cluster c1"}).Extract()
	if err != nil || fip.FixedIP != lb.VipAddress || fip.Status != "ACTIVE" {
		t.Fatalf("on the VIP: %+v %v", fip, err)
	}
	if got := fipAddrs(t, network, floatingips.ListOpts{PortID: lb.VipPortID}); len(got) != 1 {
		t.Fatalf("by port: %v", got)
	}
	if err := loadbalancers.Delete(ctx, lbc, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := loadbalancers.Get(ctx, lbc, lb.ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatal(err)
	}
	if f, _ := floatingips.Get(ctx, network, fip.ID).Extract(); f.PortID != "" || f.Status != "DOWN" {
		t.Errorf("after the load balancer: %+v", f)
	}
	// A PortSpec's floating address on an external network is one of
	// Neutron's floating IPs.
	id := s.AddServer(ServerSpec{Name: "edge", Ports: []PortSpec{{Network: "private", FloatingIP: "203.0.113.77"}}})
	got := fipAddrs(t, network, floatingips.ListOpts{PortID: s.ServerPorts(id)[0].ID})
	if fmt.Sprint(got) != "[203.0.113.77]" {
		t.Errorf("PortSpec floating IP: %v", got)
	}
}
