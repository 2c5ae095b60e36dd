package gce

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

func TestFirewallCRUD(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	ctx := context.Background()
	fw := client(t, s, compute.NewFirewallsRESTClient)

	in := firewall("k8s-fw-a")
	in.TargetTags = []string{"node"}
	in.SourceRanges = []string{"10.0.0.0/8"}
	in.Priority = proto.Int32(0) // zero is a priority, not "unset"
	in.Description = proto.String(`{"kubernetes.io/service-name":"default/web"}`)
	wait(fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: in}))
	got, err := fw.Get(ctx, &computepb.GetFirewallRequest{Project: testProject, Firewall: "k8s-fw-a"})
	if err != nil || got.GetPriority() != 0 || got.GetDirection() != "INGRESS" || !strings.HasSuffix(got.GetNetwork(), "/global/networks/default") ||
		!slices.Equal(got.GetAllowed()[0].GetPorts(), []string{"80", "443"}) || !slices.Equal(got.GetTargetTags(), []string{"node"}) {
		t.Fatalf("firewall = %v, %v", got, err)
	}
	_, err = fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: in})
	if e := apiErr(t, err, 409, "alreadyExists"); e.Message != "The resource 'projects/test-project/global/firewalls/k8s-fw-a' already exists" {
		t.Error(e.Message)
	}
	_, err = fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: &computepb.Firewall{Name: proto.String("empty")}})
	apiErr(t, err, 400, "required")
	_, err = fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: &computepb.Firewall{Name: proto.String("x"),
		Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp")}}, Network: proto.String("global/networks/nope")}})
	apiErr(t, err, 404, "notFound")

	// Patch merges; update replaces.
	wait(fw.Patch(ctx, &computepb.PatchFirewallRequest{Project: testProject, Firewall: "k8s-fw-a", FirewallResource: &computepb.Firewall{SourceRanges: []string{"192.168.0.0/16"}}}))
	f, _ := s.Firewall("k8s-fw-a")
	if !slices.Equal(f.SourceRanges, []string{"192.168.0.0/16"}) || !slices.Equal(f.TargetTags, []string{"node"}) || f.Priority != 0 {
		t.Errorf("patched = %+v", f)
	}
	wait(fw.Update(ctx, &computepb.UpdateFirewallRequest{Project: testProject, Firewall: "k8s-fw-a", FirewallResource: &computepb.Firewall{
		Name: proto.String("k8s-fw-a"), Allowed: []*computepb.Allowed{{IPProtocol: proto.String("udp"), Ports: []string{"53"}}}}}))
	f, _ = s.Firewall("k8s-fw-a")
	if f.Priority != 1000 || len(f.TargetTags) != 0 || f.Allowed[0].IPProtocol != "udp" || !slices.Equal(f.SourceRanges, []string{"0.0.0.0/0"}) {
		t.Errorf("updated = %+v", f)
	}

	wait(fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: firewall("other")}))
	var names []string
	for f, err := range fw.List(ctx, &computepb.ListFirewallsRequest{Project: testProject, Filter: proto.String(`name eq k8s-fw-.*`)}).All() {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, f.GetName())
	}
	if !slices.Equal(names, []string{"k8s-fw-a"}) {
		t.Errorf("listed %v", names)
	}
	wait(fw.Delete(ctx, &computepb.DeleteFirewallRequest{Project: testProject, Firewall: "k8s-fw-a"}))
	_, err = fw.Delete(ctx, &computepb.DeleteFirewallRequest{Project: testProject, Firewall: "k8s-fw-a"})
	apiErr(t, err, 404, "notFound")
	if st := s.Stats()["firewalls"]; st != (ResourceStats{Created: 2, Deleted: 1, Live: 1, Peak: 2}) {
		t.Errorf("stats = %+v", st)
	}
}

// TestFirewallDeniedAndPriority: a deny rule (cloud-provider-gcp's L4 deny
// firewall: denied all, priority 1000) round-trips through the real
// client; priority is 0-65535 and defaults to 1000; a rule is allow or
// deny, and a patch that gives the other list swaps it; the watcher sees
// each change when it takes effect.
func TestFirewallDeniedAndPriority(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	ctx := context.Background()
	fw := client(t, s, compute.NewFirewallsRESTClient)
	var seen [][]string
	s.WatchFirewalls(func(all []Firewall) {
		var step []string
		for _, f := range all {
			step = append(step, fmt.Sprintf("%s:%d:%d/%d", f.Name, f.Priority, len(f.Allowed), len(f.Denied)))
		}
		seen = append(seen, step)
	})

	deny := &computepb.Firewall{Name: proto.String("k8s-fw-a-deny"), SourceRanges: []string{"0.0.0.0/0"}, DestinationRanges: []string{"203.0.113.7"},
		TargetTags: []string{"node"}, Denied: []*computepb.Denied{{IPProtocol: proto.String("all")}}}
	wait(fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: deny}))
	got, err := fw.Get(ctx, &computepb.GetFirewallRequest{Project: testProject, Firewall: "k8s-fw-a-deny"})
	if err != nil || got.GetPriority() != 1000 || len(got.GetAllowed()) != 0 || len(got.GetDenied()) != 1 || got.GetDenied()[0].GetIPProtocol() != "all" ||
		!slices.Equal(got.GetDestinationRanges(), []string{"203.0.113.7"}) {
		t.Fatalf("deny rule = %v, %v", got, err)
	}

	allow := firewall("k8s-fw-a")
	allow.Priority = proto.Int32(999)
	wait(fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: allow}))
	for _, p := range []int32{-1, 65536} {
		bad := firewall(fmt.Sprintf("bad-%d", p+1))
		bad.Priority = proto.Int32(p)
		_, err := fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: bad})
		apiErr(t, err, 400, "invalid")
	}
	both := firewall("both")
	both.Denied = []*computepb.Denied{{IPProtocol: proto.String("all")}}
	_, err = fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: both})
	apiErr(t, err, 400, "invalid")
	_, err = fw.Patch(ctx, &computepb.PatchFirewallRequest{Project: testProject, Firewall: "k8s-fw-a", FirewallResource: &computepb.Firewall{Priority: proto.Int32(70000)}})
	apiErr(t, err, 400, "invalid")

	// A patch without a priority keeps it; an update (PUT) without one
	// resets it to the default, as GCE does.
	wait(fw.Patch(ctx, &computepb.PatchFirewallRequest{Project: testProject, Firewall: "k8s-fw-a", FirewallResource: &computepb.Firewall{SourceRanges: []string{"10.0.0.0/8"}}}))
	if f, _ := s.Firewall("k8s-fw-a"); f.Priority != 999 {
		t.Errorf("priority %d after a patch without one, want 999 kept", f.Priority)
	}
	wait(fw.Patch(ctx, &computepb.PatchFirewallRequest{Project: testProject, Firewall: "k8s-fw-a", FirewallResource: &computepb.Firewall{Denied: []*computepb.Denied{{IPProtocol: proto.String("tcp"), Ports: []string{"22"}}}}}))
	if f, _ := s.Firewall("k8s-fw-a"); len(f.Allowed) != 0 || len(f.Denied) != 1 || f.Denied[0].IPProtocol != "tcp" {
		t.Errorf("patched to deny = %+v", f)
	}
	wait(fw.Update(ctx, &computepb.UpdateFirewallRequest{Project: testProject, Firewall: "k8s-fw-a-deny", FirewallResource: &computepb.Firewall{
		Name: proto.String("k8s-fw-a-deny"), Denied: []*computepb.Denied{{IPProtocol: proto.String("all")}}}}))
	if f, _ := s.Firewall("k8s-fw-a-deny"); f.Priority != 1000 || len(f.DestinationRanges) != 0 {
		t.Errorf("updated = %+v", f)
	}
	wait(fw.Delete(ctx, &computepb.DeleteFirewallRequest{Project: testProject, Firewall: "k8s-fw-a-deny"}))

	want := [][]string{
		{"k8s-fw-a-deny:1000:0/1"},
		{"k8s-fw-a:999:1/0", "k8s-fw-a-deny:1000:0/1"},
		{"k8s-fw-a:999:1/0", "k8s-fw-a-deny:1000:0/1"},
		{"k8s-fw-a:999:0/1", "k8s-fw-a-deny:1000:0/1"},
		{"k8s-fw-a:999:0/1", "k8s-fw-a-deny:1000:0/1"},
		{"k8s-fw-a:999:0/1"},
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("the watcher saw\n%v\nwant\n%v", seen, want)
	}
}

func TestRoutesCRUD(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	ctx := context.Background()
	rt := client(t, s, compute.NewRoutesRESTClient)
	for _, n := range []string{"node-1", "node-2"} {
		s.AddInstance(Instance{Name: n, CanIPForward: true})
	}
	for i, n := range []string{"node-1", "node-2"} {
		wait(rt.Insert(ctx, &computepb.InsertRouteRequest{Project: testProject, RouteResource: &computepb.Route{
			Name:            proto.String("k8s-" + n),
			DestRange:       proto.String([]string{"10.64.1.0/24", "10.64.2.0/24"}[i]),
			Network:         proto.String("global/networks/default"),
			NextHopInstance: proto.String(instanceURL(s, zone, n)),
			Priority:        proto.Uint32(1000),
			Tags:            []string{"k8s"},
			Description:     proto.String("k8s-node-route"),
		}}))
	}
	wait(rt.Insert(ctx, &computepb.InsertRouteRequest{Project: testProject, RouteResource: &computepb.Route{
		Name: proto.String("default-out"), DestRange: proto.String("0.0.0.0/0"), Network: proto.String("default"),
		NextHopGateway: proto.String("global/gateways/default-internet-gateway"),
	}}))
	for _, bad := range []*computepb.Route{
		{Name: proto.String("a"), DestRange: proto.String("10.0.0.0/8"), Network: proto.String("default")},                                                                         // no next hop
		{Name: proto.String("b"), DestRange: proto.String("10.0.0.1/8"), Network: proto.String("default"), NextHopIp: proto.String("10.128.0.9")},                                  // not canonical
		{Name: proto.String("c"), DestRange: proto.String("10.0.0.0/8"), Network: proto.String("default"), NextHopIp: proto.String("10.1.1.1"), NextHopGateway: proto.String("x")}, // two hops
	} {
		_, err := rt.Insert(ctx, &computepb.InsertRouteRequest{Project: testProject, RouteResource: bad})
		apiErr(t, err, 400, "invalid")
	}
	_, err := rt.Insert(ctx, &computepb.InsertRouteRequest{Project: testProject, RouteResource: &computepb.Route{
		Name: proto.String("d"), DestRange: proto.String("10.9.0.0/24"), Network: proto.String("default"), NextHopInstance: proto.String(instanceURL(s, zone, "ghost"))}})
	apiErr(t, err, 404, "notFound")

	list := func(filter string) []string {
		req := &computepb.ListRoutesRequest{Project: testProject, MaxResults: proto.Uint32(1)}
		if filter != "" {
			req.Filter = proto.String(filter)
		}
		var out []string
		for r, err := range rt.List(ctx, req).All() {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r.GetName())
		}
		return out
	}
	if got := list(`name eq "k8s-.*"`); !slices.Equal(got, []string{"k8s-node-1", "k8s-node-2"}) {
		t.Errorf("regex prefix: %v", got)
	}
	if got := list(`name = "k8s-*" AND description = "k8s-node-route"`); len(got) != 2 {
		t.Errorf("AIP prefix: %v", got)
	}
	if got := list(""); len(got) != 3 {
		t.Errorf("all: %v", got)
	}

	// A vanished next hop shows as a warning.
	s.RemoveInstance(zone, "node-2")
	r, err := rt.Get(ctx, &computepb.GetRouteRequest{Project: testProject, Route: "k8s-node-2"})
	if err != nil || len(r.GetWarnings()) != 1 || r.GetWarnings()[0].GetCode() != "NEXT_HOP_INSTANCE_NOT_FOUND" || r.GetPriority() != 1000 {
		t.Errorf("route = %v, %v", r, err)
	}
	for _, n := range []string{"k8s-node-1", "k8s-node-2", "default-out"} {
		wait(rt.Delete(ctx, &computepb.DeleteRouteRequest{Project: testProject, Route: n}))
	}
	if len(s.Routes()) != 0 || s.Stats()["routes"].Created != 3 {
		t.Errorf("routes left %v, stats %+v", s.Routes(), s.Stats()["routes"])
	}
}

func TestZonesRegionsNetworksDisks(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	s.AddDisk(Disk{Name: "pv-1", SizeGB: 100, Type: "pd-ssd", Users: []string{"node-1"}, Labels: map[string]string{"k": "v"}})
	s.AddDisk(Disk{Name: "pv-2", Zone: "us-east1-b"})

	zones := client(t, s, compute.NewZonesRESTClient)
	var names []string
	for z, err := range zones.List(ctx, &computepb.ListZonesRequest{Project: testProject, Filter: proto.String(`region eq .*/us-east1`)}).All() {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, z.GetName())
	}
	if !slices.Equal(names, []string{"us-east1-b", "us-east1-c", "us-east1-d"}) {
		t.Errorf("zones = %v", names)
	}
	z, err := zones.Get(ctx, &computepb.GetZoneRequest{Project: testProject, Zone: "us-central1-f"})
	if err != nil || z.GetStatus() != "UP" || !strings.HasSuffix(z.GetRegion(), "/regions/us-central1") {
		t.Errorf("zone = %v, %v", z, err)
	}
	_, err = zones.Get(ctx, &computepb.GetZoneRequest{Project: testProject, Zone: "nowhere-1a"})
	apiErr(t, err, 404, "notFound")
	regions := client(t, s, compute.NewRegionsRESTClient)
	r, err := regions.Get(ctx, &computepb.GetRegionRequest{Project: testProject, Region: region})
	if err != nil || len(r.GetZones()) != 4 {
		t.Errorf("region = %v, %v", r, err)
	}
	nets := client(t, s, compute.NewNetworksRESTClient)
	n, err := nets.Get(ctx, &computepb.GetNetworkRequest{Project: testProject, Network: "default"})
	if err != nil || !n.GetAutoCreateSubnetworks() || len(n.GetSubnetworks()) != 2 {
		t.Errorf("network = %v, %v", n, err)
	}
	subs := client(t, s, compute.NewSubnetworksRESTClient)
	sn, err := subs.Get(ctx, &computepb.GetSubnetworkRequest{Project: testProject, Region: region, Subnetwork: "default"})
	if err != nil || sn.GetIpCidrRange() != "10.128.0.0/20" || sn.GetGatewayAddress() != "10.128.0.1" {
		t.Errorf("subnetwork = %v, %v", sn, err)
	}

	disks := client(t, s, compute.NewDisksRESTClient)
	d, err := disks.Get(ctx, &computepb.GetDiskRequest{Project: testProject, Zone: zone, Disk: "pv-1"})
	if err != nil || d.GetSizeGb() != 100 || !strings.HasSuffix(d.GetType(), "/diskTypes/pd-ssd") || d.GetStatus() != "READY" ||
		!strings.HasSuffix(d.GetUsers()[0], "/instances/node-1") || d.GetLabels()["k"] != "v" {
		t.Errorf("disk = %v, %v", d, err)
	}
	count := 0
	for pair, err := range disks.AggregatedList(ctx, &computepb.AggregatedListDisksRequest{Project: testProject}).All() {
		if err != nil {
			t.Fatal(err)
		}
		count += len(pair.Value.GetDisks())
	}
	if count != 2 {
		t.Errorf("aggregated %d disks", count)
	}
}
