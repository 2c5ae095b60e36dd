package gce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/protobuf/proto"
)

func listNames(t *testing.T, c *compute.InstancesClient, req *computepb.ListInstancesRequest) []string {
	t.Helper()
	var names []string
	for in, err := range c.List(context.Background(), req).All() {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, in.GetName())
	}
	return names
}

func TestInstanceGetAndWireShape(t *testing.T) {
	s := start(t)
	added := s.AddInstance(Instance{Name: "node-1", Tags: []string{"k8s-node"}, Labels: map[string]string{"pool": "a"}, IPv6: "2600:1900:4000:1::", CanIPForward: true})
	c := client(t, s, compute.NewInstancesRESTClient)
	in, err := c.Get(context.Background(), &computepb.GetInstanceRequest{Project: testProject, Zone: zone, Instance: "node-1"})
	if err != nil {
		t.Fatal(err)
	}
	// Ids above 2^53 survive the trip: the fake sends them as strings.
	if in.GetId() != added.ID || added.ID < 1<<53 {
		t.Errorf("id = %d, want %d (> 2^53)", in.GetId(), added.ID)
	}
	base := s.URL() + "/compute/v1/projects/" + testProject
	nic := in.GetNetworkInterfaces()[0]
	switch {
	case in.GetSelfLink() != base+"/zones/"+zone+"/instances/node-1",
		in.GetZone() != base+"/zones/"+zone,
		in.GetMachineType() != base+"/zones/"+zone+"/machineTypes/e2-medium",
		in.GetStatus() != "RUNNING",
		!in.GetCanIpForward(),
		!slices.Equal(in.GetTags().GetItems(), []string{"k8s-node"}),
		in.GetLabels()["pool"] != "a",
		nic.GetNetwork() != base+"/global/networks/default",
		nic.GetSubnetwork() != base+"/regions/"+region+"/subnetworks/default",
		nic.GetNetworkIP() != added.NetworkIP || !strings.HasPrefix(added.NetworkIP, "10.128.0."),
		nic.GetAccessConfigs()[0].GetNatIP() != added.NatIP || nic.GetAccessConfigs()[0].GetType() != "ONE_TO_ONE_NAT",
		nic.GetIpv6AccessConfigs()[0].GetExternalIpv6() != "2600:1900:4000:1::" || nic.GetIpv6AccessConfigs()[0].GetType() != "DIRECT_IPV6",
		nic.GetStackType() != "IPV4_IPV6":
		t.Errorf("instance = %v", in)
	}

	// The wire form, read without the client.
	_, b := raw(t, s, "GET", "/compute/v1/projects/"+testProject+"/zones/"+zone+"/instances/node-1", "")
	m := decode(t, b)
	if m["kind"] != "compute#instance" || m["id"] != fmt.Sprint(added.ID) || !strings.HasSuffix(m["creationTimestamp"].(string), "-07:00") {
		t.Errorf("wire = %s", b)
	}
}

func TestInstanceNotFound(t *testing.T) {
	s := start(t)
	c := client(t, s, compute.NewInstancesRESTClient)
	_, err := c.Get(context.Background(), &computepb.GetInstanceRequest{Project: testProject, Zone: zone, Instance: "x"})
	e := apiErr(t, err, http.StatusNotFound, "notFound")
	want := "The resource 'projects/test-project/zones/us-central1-a/instances/x' was not found"
	if e.Message != want || e.Errors[0].Message != want {
		t.Errorf("error = %+v", e)
	}
	var ae *apierror.APIError
	if !errors.As(err, &ae) || ae.HTTPCode() != http.StatusNotFound {
		t.Errorf("apierror = %v", ae)
	}

	// Unknown zones and other projects fail as on the real API.
	_, err = c.Get(context.Background(), &computepb.GetInstanceRequest{Project: testProject, Zone: "mars-1a", Instance: "x"})
	if e := apiErr(t, err, 400, "invalid"); e.Message != "Invalid value for field 'zone': 'mars-1a'. Unknown zone." {
		t.Errorf("message = %q", e.Message)
	}
	_, err = c.Get(context.Background(), &computepb.GetInstanceRequest{Project: "other", Zone: zone, Instance: "x"})
	if e := apiErr(t, err, 404, "notFound"); e.Message != "The resource 'projects/other' was not found" {
		t.Errorf("message = %q", e.Message)
	}
}

func TestInstanceListFiltersAndPages(t *testing.T) {
	s := start(t)
	for i := range 7 {
		s.AddInstance(Instance{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{"env": []string{"prod", "dev"}[i%2]}})
	}
	s.AddInstance(Instance{Name: "other", Status: StatusStopped, NatIP: NoIP})
	s.AddInstance(Instance{Name: "node-b", Zone: "us-central1-b"})
	c := client(t, s, compute.NewInstancesRESTClient)
	list := func(filter string, pageSize uint32) []string {
		req := &computepb.ListInstancesRequest{Project: testProject, Zone: zone}
		if filter != "" {
			req.Filter = proto.String(filter)
		}
		if pageSize > 0 {
			req.MaxResults = proto.Uint32(pageSize)
		}
		return listNames(t, c, req)
	}

	const listKey = "GET /compute/v1/projects/{project}/zones/{zone}/instances"
	before := s.Faults().CallCount(listKey)
	if got := list("", 3); len(got) != 8 || got[0] != "node-0" || got[7] != "other" {
		t.Errorf("all = %v", got)
	}
	if pages := s.Faults().CallCount(listKey) - before; pages != 3 {
		t.Errorf("8 items in pages of 3 took %d requests", pages)
	}

	cases := []struct {
		filter string
		want   []string
	}{
		{`name = "node-1" OR name = "node-2"`, []string{"node-1", "node-2"}},
		{`(name = "node-1") OR (name = "node-5")`, []string{"node-1", "node-5"}},
		{`name eq node-[12]`, []string{"node-1", "node-2"}},
		{`name eq "(node-1|other)"`, []string{"node-1", "other"}},
		{`name ne node-.*`, []string{"other"}},
		{`(name eq node-.*) (labels.env eq dev)`, []string{"node-1", "node-3", "node-5"}},
		{`labels.env = prod AND name != node-0`, []string{"node-2", "node-4", "node-6"}},
		{`status = STOPPED`, []string{"other"}},
		{`NOT status = RUNNING`, []string{"other"}},
		{`labels.env:*`, []string{"node-0", "node-1", "node-2", "node-3", "node-4", "node-5", "node-6"}},
		{`name = "node-*" AND labels.env = dev AND name != "node-3"`, []string{"node-1", "node-5"}},
	}
	for _, tc := range cases {
		if got := list(tc.filter, 2); !slices.Equal(got, tc.want) {
			t.Errorf("filter %s: got %v, want %v", tc.filter, got, tc.want)
		}
	}

	for _, bad := range []string{`name ~ node`, `(name eq a) (name = "b")`, `name = "unterminated`, `= x`} {
		_, err := c.List(context.Background(), &computepb.ListInstancesRequest{Project: testProject, Zone: zone, Filter: proto.String(bad)}).Next()
		e := apiErr(t, err, 400, "invalid")
		if !strings.Contains(e.Message, "Invalid list filter expression") {
			t.Errorf("filter %s: %q", bad, e.Message)
		}
	}
	_, err := c.List(context.Background(), &computepb.ListInstancesRequest{Project: testProject, Zone: zone, MaxResults: proto.Uint32(501)}).Next()
	apiErr(t, err, 400, "invalid")
	_, err = c.List(context.Background(), &computepb.ListInstancesRequest{Project: testProject, Zone: zone, PageToken: proto.String("garbage")}).Next()
	apiErr(t, err, 400, "invalid")

	// Newest first.
	req := &computepb.ListInstancesRequest{Project: testProject, Zone: zone, OrderBy: proto.String("creationTimestamp desc"), MaxResults: proto.Uint32(4)}
	if got := listNames(t, c, req); len(got) != 8 || got[0] != "other" {
		t.Errorf("newest first = %v", got)
	}
}

func TestInstanceAggregatedList(t *testing.T) {
	s := start(t)
	for i := range 3 {
		s.AddInstance(Instance{Name: fmt.Sprintf("a-%d", i)})
		s.AddInstance(Instance{Name: fmt.Sprintf("c-%d", i), Zone: "us-central1-c"})
	}
	s.AddInstance(Instance{Name: "east", Zone: "us-east1-b"})
	c := client(t, s, compute.NewInstancesRESTClient)

	agg := func(filter string, pageSize uint32) (names []string, emptyScopes int) {
		req := &computepb.AggregatedListInstancesRequest{Project: testProject, MaxResults: proto.Uint32(pageSize)}
		if filter != "" {
			req.Filter = proto.String(filter)
		}
		for pair, err := range c.AggregatedList(context.Background(), req).All() {
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(pair.Key, "zones/") {
				t.Errorf("key %q", pair.Key)
			}
			if len(pair.Value.GetInstances()) == 0 {
				if pair.Value.GetWarning().GetCode() != "NO_RESULTS_ON_PAGE" {
					t.Errorf("empty scope %s without warning: %v", pair.Key, pair.Value)
				}
				emptyScopes++
			}
			for _, in := range pair.Value.GetInstances() {
				if !strings.HasSuffix(in.GetZone(), "/"+strings.TrimPrefix(pair.Key, "zones/")) {
					t.Errorf("%s listed under %s", in.GetZone(), pair.Key)
				}
				names = append(names, in.GetName())
			}
		}
		return names, emptyScopes
	}
	names, empty := agg("", 500)
	if len(names) != 7 || empty != 4 { // 7 zones, 3 with instances
		t.Errorf("names %v, %d empty scopes", names, empty)
	}
	names, _ = agg("", 2) // four pages
	slices.Sort(names)
	if want := []string{"a-0", "a-1", "a-2", "c-0", "c-1", "c-2", "east"}; !slices.Equal(names, want) {
		t.Errorf("paged = %v", names)
	}
	if got, _ := agg(`name = "a-1" OR name = "east"`, 500); !slices.Equal(got, []string{"a-1", "east"}) {
		t.Errorf("filtered = %v", got)
	}
	if got, _ := agg(`zone eq .*/us-central1-c`, 500); len(got) != 3 {
		t.Errorf("by zone = %v", got)
	}

	// The wire form: every zone keyed, with the API's warning.
	_, b := raw(t, s, "GET", "/compute/v1/projects/"+testProject+"/aggregated/instances?filter=name+%3D+east&returnPartialSuccess=true", "")
	m := decode(t, b)
	items := m["items"].(map[string]any)
	w := items["zones/us-central1-f"].(map[string]any)["warning"].(map[string]any)
	if m["kind"] != "compute#instanceAggregatedList" || len(items) != 7 ||
		w["message"] != "There are no results for scope 'zones/us-central1-f' on this page." {
		t.Errorf("wire = %s", b)
	}
}

func TestInstanceHelpers(t *testing.T) {
	s := start(t)
	s.AddInstance(Instance{Name: "n"})
	if err := s.SetInstanceStatus(zone, "n", StatusTerminated); err != nil {
		t.Fatal(err)
	}
	if in, ok := s.Instance(zone, "n"); !ok || in.Status != StatusTerminated {
		t.Errorf("instance = %+v", in)
	}
	if err := s.SetInstanceStatus(zone, "n", "ASLEEP"); err == nil {
		t.Error("invalid status accepted")
	}
	if !s.RemoveInstance(zone, "n") || s.RemoveInstance(zone, "n") {
		t.Error("RemoveInstance")
	}
	if st := s.Stats()["instances"]; st != (ResourceStats{Created: 1, Deleted: 1, Live: 0, Peak: 1}) {
		t.Errorf("stats = %+v", st)
	}
}

func TestInstanceAliasIPRanges(t *testing.T) {
	s := start(t)
	s.AddSubnetwork(Subnetwork{Name: "nodes", Region: region, IPCidrRange: "10.10.0.0/24",
		SecondaryRanges: []SecondaryRange{{RangeName: "pods", IPCidrRange: "10.4.0.0/14"}}})
	added := s.AddInstance(Instance{Name: "n", Subnetwork: "nodes", InternalIPv6: "fd20:1:2:3::",
		AliasIPRanges: []AliasIPRange{{IPCidrRange: "10.4.1.0/24", SubnetworkRangeName: "pods"}, {IPCidrRange: "10.10.0.128/28"}}})
	c := client(t, s, compute.NewInstancesRESTClient)
	in, err := c.Get(context.Background(), getReq("n"))
	if err != nil {
		t.Fatal(err)
	}
	nic := in.GetNetworkInterfaces()[0]
	ar := nic.GetAliasIpRanges()
	if len(ar) != 2 || ar[0].GetIpCidrRange() != "10.4.1.0/24" || ar[0].GetSubnetworkRangeName() != "pods" ||
		ar[1].GetIpCidrRange() != "10.10.0.128/28" || ar[1].SubnetworkRangeName != nil ||
		nic.GetIpv6Address() != "fd20:1:2:3::" || nic.GetStackType() != "IPV4_IPV6" || nic.GetIpv6AccessType() != "INTERNAL" {
		t.Errorf("nic = %v", nic)
	}

	// The wire names, read without the client.
	_, b := raw(t, s, "GET", "/compute/v1/projects/"+testProject+"/zones/"+zone+"/instances/n", "")
	var doc struct {
		NetworkInterfaces []struct {
			IPv6Address   string `json:"ipv6Address"`
			Fingerprint   string `json:"fingerprint"`
			AliasIPRanges []struct {
				IPCidrRange         string `json:"ipCidrRange"`
				SubnetworkRangeName string `json:"subnetworkRangeName"`
			} `json:"aliasIpRanges"`
		} `json:"networkInterfaces"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	w := doc.NetworkInterfaces[0]
	if len(w.AliasIPRanges) != 2 || w.AliasIPRanges[0].IPCidrRange != "10.4.1.0/24" || w.AliasIPRanges[0].SubnetworkRangeName != "pods" || w.IPv6Address != "fd20:1:2:3::" {
		t.Errorf("wire = %s", b)
	}

	// Helpers copy, UpdateInstance changes them (and the nic's
	// fingerprint), and bad ranges are refused.
	added.AliasIPRanges[0].IPCidrRange = "10.4.9.0/24"
	if got, _ := s.Instance(zone, "n"); got.AliasIPRanges[0].IPCidrRange != "10.4.1.0/24" {
		t.Errorf("stored ranges changed through the returned copy: %v", got.AliasIPRanges)
	}
	if err := s.UpdateInstance(zone, "n", func(in *Instance) { in.AliasIPRanges = in.AliasIPRanges[:1] }); err != nil {
		t.Fatal(err)
	}
	in, _ = c.Get(context.Background(), getReq("n"))
	if nic := in.GetNetworkInterfaces()[0]; len(nic.GetAliasIpRanges()) != 1 || nic.GetFingerprint() == w.Fingerprint {
		t.Errorf("after update nic = %v", nic)
	}
	for _, bad := range [][]AliasIPRange{
		{{IPCidrRange: "10.4.1.0/24", SubnetworkRangeName: "services"}},
		{{IPCidrRange: "10.9.0.0/24", SubnetworkRangeName: "pods"}},
		{{IPCidrRange: "10.4.0.0/12", SubnetworkRangeName: "pods"}},
		{{IPCidrRange: "10.10.1.0/28"}},
		{{IPCidrRange: "10.4.1.1/24"}},
	} {
		if err := s.UpdateInstance(zone, "n", func(in *Instance) { in.AliasIPRanges = bad }); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("AddInstance accepted an unknown secondary range")
			}
		}()
		s.AddInstance(Instance{Name: "m", AliasIPRanges: []AliasIPRange{{IPCidrRange: "10.4.1.0/24", SubnetworkRangeName: "pods"}}})
	}()
}
