package openstack

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/trunk_details"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// portWithTrunkDetails is upstream's PortWithTrunkDetails.
type portWithTrunkDetails struct {
	ports.Port
	trunk_details.TrunkDetailsExt
}

// TestServerPorts follows upstream's InstanceMetadata: the server's ports
// by device_id, then each trunk subport and its network by ID.
func TestServerPorts(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	private := s.AddNetwork(NetworkSpec{Name: "private", Subnets: []SubnetSpec{{Name: "v4", CIDR: "10.0.0.0/24"}, {CIDR: "fd00::/64"}}})
	vlan := s.AddNetwork(NetworkSpec{Name: "vlan100", Subnets: []SubnetSpec{{CIDR: "192.168.100.0/24"}}})
	id := s.AddServer(ServerSpec{Name: "node-a", Ports: []PortSpec{
		{Network: "private", SubPorts: []SubPortSpec{{Network: "vlan100", IPs: []string{"192.168.100.20"}, SegmentationID: 100}}},
		{Network: private, Name: "second"},
	}})
	s.AddServer(ServerSpec{Name: "other", Ports: []PortSpec{{Network: "private"}}})
	_, network := clients(t, s)

	pages, err := ports.List(network, ports.ListOpts{DeviceID: id}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []portWithTrunkDetails
	if err := ports.ExtractPortsInto(pages, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("ports = %+v", got)
	}
	var parent, second portWithTrunkDetails
	for _, p := range got {
		if p.Name == "second" {
			second = p
		} else {
			parent = p
		}
	}
	net, _ := s.Network(private)
	if parent.Status != "ACTIVE" || parent.DeviceOwner != "compute:nova" || parent.NetworkID != private || parent.ProjectID != s.Account().ProjectID ||
		len(parent.FixedIPs) != 2 || parent.FixedIPs[0].IPAddress != "10.0.0.2" || parent.FixedIPs[0].SubnetID != net.Subnets[0].ID ||
		parent.FixedIPs[1].IPAddress != "fd00::2" || parent.CreatedAt.IsZero() || len(parent.SecurityGroups) != 1 {
		t.Errorf("parent = %+v", parent)
	}
	if second.FixedIPs[0].IPAddress != "10.0.0.3" || second.TrunkDetails.TrunkID != "" {
		t.Errorf("second = %+v", second)
	}
	sps := parent.TrunkDetails.SubPorts
	if parent.TrunkDetails.TrunkID == "" || len(sps) != 1 || sps[0].SegmentationID != 100 || sps[0].SegmentationType != "vlan" || sps[0].MACAddress == "" {
		t.Fatalf("trunk_details = %+v", parent.TrunkDetails)
	}
	sub, err := ports.Get(ctx, network, sps[0].PortID).Extract()
	if err != nil || sub.NetworkID != vlan || sub.FixedIPs[0].IPAddress != "192.168.100.20" || sub.DeviceOwner != "trunk:subport" ||
		sub.DeviceID != parent.TrunkDetails.TrunkID {
		t.Fatalf("subport = %+v %v", sub, err)
	}
	n, err := networks.Get(ctx, network, sub.NetworkID).Extract()
	if err != nil || n.Name != "vlan100" || n.Status != "ACTIVE" || len(n.Subnets) != 1 {
		t.Errorf("network = %+v %v", n, err)
	}
	// network_id and fixed_ips filters.
	pages, err = ports.List(network, ports.ListOpts{NetworkID: vlan}).AllPages(ctx)
	if all, _ := ports.ExtractPorts(pages); err != nil || len(all) != 1 || all[0].ID != sub.ID {
		t.Errorf("network_id: %v %v", all, err)
	}
	pages, err = ports.List(network, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: "10.0.0.3"}}}).AllPages(ctx)
	if all, _ := ports.ExtractPorts(pages); err != nil || len(all) != 1 || all[0].Name != "second" {
		t.Errorf("fixed_ips: %v %v", all, err)
	}
	// A stopped server's ports go DOWN.
	if err := s.StopServer(id); err != nil {
		t.Fatal(err)
	}
	if p, _ := ports.Get(ctx, network, parent.ID).Extract(); p.Status != "DOWN" {
		t.Errorf("port of a stopped server: %s", p.Status)
	}
}

func TestPortsPaging(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	net, _ := cluster(s, 5)
	_, network := clients(t, s)
	var seen []string
	calls := 0
	err := ports.List(network, ports.ListOpts{NetworkID: net, Limit: 2}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		calls++
		ps, err := ports.ExtractPorts(p)
		for _, p := range ps {
			seen = append(seen, p.ID)
		}
		return true, err
	})
	if err != nil || len(seen) != 5 || calls != 3 {
		t.Fatalf("%d ports in %d pages: %v", len(seen), calls, err)
	}
	for k := 1; k < len(seen); k++ {
		if seen[k-1] >= seen[k] {
			t.Errorf("not sorted by id: %v", seen)
		}
	}
	// Raw: next and previous links, as Neutron writes them.
	tok := token(t, s)
	_, b := raw(t, s, tok, http.MethodGet, "/network/v2.0/ports?limit=2", "", nil)
	links := doc(t, b)["ports_links"].([]any)
	if len(links) != 2 {
		t.Fatalf("links %v", links)
	}
	next, prev := links[0].(map[string]any), links[1].(map[string]any)
	nu, _ := url.Parse(next["href"].(string))
	pu, _ := url.Parse(prev["href"].(string))
	if next["rel"] != "next" || nu.Path != "/network/v2.0/ports" || nu.Query().Get("marker") != seen[1] || nu.Query().Get("limit") != "2" ||
		prev["rel"] != "previous" || pu.Query().Get("marker") != seen[0] || pu.Query().Get("page_reverse") != "True" {
		t.Errorf("links %v", links)
	}
	// page_reverse: the page before the marker, still ascending.
	_, b = raw(t, s, tok, http.MethodGet, "/network/v2.0/ports?limit=2&page_reverse=True&marker="+seen[4], "", nil)
	if ps := doc(t, b)["ports"].([]any); len(ps) != 2 || ps[0].(map[string]any)["id"] != seen[2] || ps[1].(map[string]any)["id"] != seen[3] {
		t.Errorf("reverse page %s", b)
	}
	// Unlimited lists have no links.
	if _, b := raw(t, s, tok, http.MethodGet, "/network/v2.0/ports", "", nil); doc(t, b)["ports_links"] != nil {
		t.Errorf("unlimited: %s", b)
	}
}

func TestNeutronErrors(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	_, network := clients(t, s)
	if _, err := ports.Get(ctx, network, "nope").Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("port: %v", err)
	}
	if _, err := networks.Get(ctx, network, "nope").Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("network: %v", err)
	}
	tok := token(t, s)
	r, b := raw(t, s, tok, http.MethodGet, "/network/v2.0/ports/nope", "", nil)
	if r.StatusCode != http.StatusNotFound || r.Header.Get("X-Openstack-Request-Id") == "" {
		t.Errorf("%d %v", r.StatusCode, r.Header)
	}
	jsonEq(t, b, `{"NeutronError": {"type": "PortNotFound", "message": "Port nope could not be found.", "detail": ""}}`)
	_, b = raw(t, s, tok, http.MethodGet, "/network/v2.0/networks/nope", "", nil)
	jsonEq(t, b, `{"NeutronError": {"type": "NetworkNotFound", "message": "Network nope could not be found.", "detail": ""}}`)
	r, b = raw(t, s, tok, http.MethodGet, "/network/v2.0/ports?colour=blue", "", nil)
	if r.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown filter: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"NeutronError": {"type": "HTTPBadRequest", "message": "['colour'] is invalid attribute for filtering", "detail": ""}}`)
	r, b = raw(t, s, tok, http.MethodGet, "/network/v2.0/ports?limit=x", "", nil)
	if r.StatusCode != http.StatusBadRequest || doc(t, b)["NeutronError"].(map[string]any)["type"] != "BadRequest" {
		t.Errorf("bad limit: %d %s", r.StatusCode, b)
	}
	r, b = raw(t, s, tok, http.MethodGet, "/network/v2.0/qos/policies", "", nil)
	if r.StatusCode != http.StatusNotFound || doc(t, b)["code"] != "404 Not Found" {
		t.Errorf("unknown path: %d %s", r.StatusCode, b)
	}
}

func TestNetworks(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	private, _ := cluster(s, 0)
	public := s.AddNetwork(NetworkSpec{Name: "public", External: true, Subnets: []SubnetSpec{{CIDR: "203.0.113.0/24", Gateway: "203.0.113.254"}}})
	_, network := clients(t, s)
	pages, err := networks.List(network, networks.ListOpts{Name: "private"}).AllPages(ctx)
	ns, _ := networks.ExtractNetworks(pages)
	if err != nil || len(ns) != 1 || ns[0].ID != private || len(ns[0].Subnets) != 2 || ns[0].ProjectID != s.Account().ProjectID {
		t.Errorf("private: %+v %v", ns, err)
	}
	tok := token(t, s)
	_, b := raw(t, s, tok, http.MethodGet, "/network/v2.0/networks?router:external=True", "", nil)
	nets := doc(t, b)["networks"].([]any)
	if len(nets) != 1 || nets[0].(map[string]any)["id"] != public || nets[0].(map[string]any)["is_default"] != false {
		t.Errorf("external: %s", b)
	}
	pages, err = subnets.List(network, subnets.ListOpts{NetworkID: public}).AllPages(ctx)
	ss, _ := subnets.ExtractSubnets(pages)
	if err != nil || len(ss) != 1 || ss[0].GatewayIP != "203.0.113.254" || ss[0].CIDR != "203.0.113.0/24" || ss[0].IPVersion != 4 ||
		len(ss[0].AllocationPools) != 1 || ss[0].AllocationPools[0].Start != "203.0.113.1" || ss[0].AllocationPools[0].End != "203.0.113.253" {
		t.Errorf("subnets: %+v %v", ss, err)
	}
	if sub, err := subnets.Get(ctx, network, ss[0].ID).Extract(); err != nil || sub.NetworkID != public {
		t.Errorf("subnet: %+v %v", sub, err)
	}
}
