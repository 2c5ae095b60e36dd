package openstack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// listNames pages through servers.List as upstream's CCM does, and
// returns the names page by page.
func listNames(t *testing.T, c *gophercloud.ServiceClient, opts servers.ListOpts) [][]string {
	t.Helper()
	var pages [][]string
	err := servers.List(c, opts).EachPage(context.Background(), func(_ context.Context, p pagination.Page) (bool, error) {
		svs, err := servers.ExtractServers(p)
		var names []string
		for _, sv := range svs {
			names = append(names, sv.Name)
		}
		pages = append(pages, names)
		return true, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

func TestServersPaging(t *testing.T) {
	s := start(t)
	_, ids := cluster(s, 7)
	compute, _ := clients(t, s)
	// Newest first, three at a time, each page's last ID the next marker.
	pages := listNames(t, compute, servers.ListOpts{Limit: 3})
	want := [][]string{{"node-6", "node-5", "node-4"}, {"node-3", "node-2", "node-1"}, {"node-0"}}
	if fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Errorf("pages = %v", pages)
	}
	if got := s.Faults().CallCount(ServersList); got != 3 {
		t.Errorf("list calls = %d", got)
	}
	// A last page as long as the limit still links on, to an empty one.
	s.Faults().Reset()
	pages = listNames(t, compute, servers.ListOpts{Limit: 3, Name: "^node-[1-6]$"})
	if len(pages) != 2 || s.Faults().CallCount(ServersList) != 3 {
		t.Errorf("pages = %v after %d calls", pages, s.Faults().CallCount(ServersList))
	}
	// Unlimited lists come whole.
	if pages := listNames(t, compute, servers.ListOpts{}); len(pages) != 1 || len(pages[0]) != 7 {
		t.Errorf("unlimited: %v", pages)
	}

	tok := token(t, s)
	_, b := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/detail?limit=2&status=ACTIVE", "", nil)
	jsonEq(t, mustJSON(t, doc(t, b)["servers_links"]), `[{"href": "`+s.URL()+
		`/compute/v2.1/servers/detail?limit=2&marker=`+ids[5]+`&status=ACTIVE", "rel": "next"}]`)
	r, b := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/detail?marker=nope", "", nil)
	if r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad marker: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"badRequest": {"code": 400, "message": "marker [nope] not found"}}`)
	if r, b := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/detail?limit=-1", "", nil); r.StatusCode != http.StatusBadRequest ||
		doc(t, b)["badRequest"] == nil {
		t.Errorf("limit=-1: %d %s", r.StatusCode, b)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestServerFilters(t *testing.T) {
	s := start(t)
	for _, name := range []string{"node.1", "node11", "dup", "dup"} {
		s.AddServer(ServerSpec{Name: name})
	}
	s.AddServer(ServerSpec{Name: "stopped", Status: StatusShutoff, Flavor: "m1.large"})
	compute, _ := clients(t, s)
	// As upstream's getServerByName asks: ^name$, quoted.
	byName := func(name string) []string {
		pages := listNames(t, compute, servers.ListOpts{Name: "^" + regexp.QuoteMeta(name) + "$"})
		return slices.Concat(pages...)
	}
	if got := byName("node.1"); len(got) != 1 || got[0] != "node.1" {
		t.Errorf("node.1: %v", got)
	}
	if got := byName("dup"); len(got) != 2 {
		t.Errorf("dup: %v", got)
	}
	if got := byName("nope"); len(got) != 0 {
		t.Errorf("nope: %v", got)
	}
	// Unanchored, the name matches anywhere, without regard to case.
	if got := slices.Concat(listNames(t, compute, servers.ListOpts{Name: "ODE"})...); len(got) != 2 {
		t.Errorf("ODE: %v", got)
	}
	for status, n := range map[string]int{"SHUTOFF": 1, "shutoff": 1, "ACTIVE": 4, "BOGUS": 0} {
		if got := slices.Concat(listNames(t, compute, servers.ListOpts{Status: status})...); len(got) != n {
			t.Errorf("status %s: %v", status, got)
		}
	}
	if got := slices.Concat(listNames(t, compute, servers.ListOpts{Flavor: "4"})...); len(got) != 1 || got[0] != "stopped" {
		t.Errorf("flavor 4: %v", got)
	}
	r, b := raw(t, s, token(t, s), http.MethodGet, "/compute/v2.1/servers/detail?name=(", "", nil)
	if r.StatusCode != http.StatusBadRequest || doc(t, b)["badRequest"] == nil {
		t.Errorf("bad regex: %d %s", r.StatusCode, b)
	}
}

func TestServerGet(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	s.AddNetwork(NetworkSpec{Name: "private", Subnets: []SubnetSpec{{CIDR: "10.0.0.0/24"}, {CIDR: "fd00::/64"}}})
	s.AddNetwork(NetworkSpec{Name: "vlan100", Subnets: []SubnetSpec{{CIDR: "192.168.100.0/24"}}})
	id := s.AddServer(ServerSpec{Name: "node-a", Flavor: "m1.medium", AvailabilityZone: "az-1",
		Metadata: map[string]string{"hostname": "node-a.example"}, AccessIPv4: "203.0.113.10",
		Ports: []PortSpec{{Network: "private", IPs: []string{"10.0.0.5"}, FloatingIP: "198.51.100.7",
			SubPorts: []SubPortSpec{{Network: "vlan100", SegmentationID: 100}}}}})
	compute, _ := clients(t, s)
	sv, err := servers.Get(ctx, compute, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	a := s.Account()
	if sv.ID != id || sv.Name != "node-a" || sv.Status != "ACTIVE" || sv.AvailabilityZone != "az-1" || sv.TenantID != a.ProjectID ||
		sv.UserID != a.UserID || sv.AccessIPv4 != "203.0.113.10" || sv.AccessIPv6 != "" || sv.Metadata["hostname"] != "node-a.example" ||
		sv.PowerState != servers.RUNNING || sv.VmState != "active" || sv.LaunchedAt.IsZero() || sv.HostID == "" {
		t.Errorf("server = %+v", sv)
	}
	// Addresses as upstream reads them: by network, fixed then floating;
	// the subport's network is not among them, and the port has only the
	// address it asked for.
	type address struct {
		Type    string `json:"OS-EXT-IPS:type"`
		Addr    string `json:"addr"`
		Version int    `json:"version"`
		MAC     string `json:"OS-EXT-IPS-MAC:mac_addr"`
	}
	var addrs map[string][]address
	if err := json.Unmarshal(mustJSON(t, sv.Addresses), &addrs); err != nil {
		t.Fatal(err)
	}
	port := s.ServerPorts(id)[0]
	want := map[string][]address{"private": {{"fixed", "10.0.0.5", 4, port.MAC}, {"floating", "198.51.100.7", 4, port.MAC}}}
	if fmt.Sprint(addrs) != fmt.Sprint(want) {
		t.Errorf("addresses = %v", addrs)
	}
	// Without a microversion the flavor is an ID; from 2.47 a copy.
	if sv.Flavor["id"] != "3" || sv.Flavor["original_name"] != nil {
		t.Errorf("2.1 flavor = %v", sv.Flavor)
	}
	compute.Microversion = "2.47"
	sv, err = servers.Get(ctx, compute, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if sv.Flavor["original_name"] != "m1.medium" || fmt.Sprint(sv.Flavor["vcpus"]) != "2" || fmt.Sprint(sv.Flavor["ram"]) != "4096" ||
		sv.Flavor["id"] != nil || sv.Flavor["extra_specs"] == nil {
		t.Errorf("2.47 flavor = %v", sv.Flavor)
	}

	// Raw: the not-found document and Nova's headers.
	tok := token(t, s)
	r, b := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/nope", "", nil)
	if r.StatusCode != http.StatusNotFound {
		t.Errorf("status %d", r.StatusCode)
	}
	jsonEq(t, b, `{"itemNotFound": {"code": 404, "message": "Instance nope could not be found."}}`)
	if rid := r.Header.Get("X-Openstack-Request-Id"); rid == "" || r.Header.Get("X-Compute-Request-Id") != rid ||
		r.Header.Get("OpenStack-API-Version") != "compute 2.1" || r.Header.Get("X-OpenStack-Nova-API-Version") != "2.1" {
		t.Errorf("headers %v", r.Header)
	}
	_, err = servers.Get(ctx, compute, "nope").Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("gophercloud 404: %v", err)
	}

	flavorKeys := func(hdr map[string]string) (*http.Response, []string, map[string]any) {
		r, b := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/"+id, "", hdr)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("%v: %d %s", hdr, r.StatusCode, b)
		}
		server := doc(t, b)["server"].(map[string]any)
		var keys []string
		for k := range server["flavor"].(map[string]any) {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return r, keys, server
	}
	_, keys, server := flavorKeys(nil)
	if fmt.Sprint(keys) != "[id links]" || server["locked"] != nil || server["OS-EXT-STS:task_state"] != nil {
		t.Errorf("2.1: flavor %v, server %v", keys, server)
	}
	r, keys, _ = flavorKeys(map[string]string{"X-OpenStack-Nova-API-Version": "2.47"})
	if fmt.Sprint(keys) != "[disk ephemeral extra_specs original_name ram swap vcpus]" || r.Header.Get("OpenStack-API-Version") != "compute 2.47" {
		t.Errorf("2.47: %v %v", keys, r.Header)
	}
	// The new header wins over the legacy one.
	r, _, server = flavorKeys(map[string]string{"OpenStack-API-Version": "compute 2.60", "X-OpenStack-Nova-API-Version": "2.10"})
	if r.Header.Get("X-OpenStack-Nova-API-Version") != "2.60" || server["locked"] != false || server["tags"] == nil {
		t.Errorf("2.60: %v %v", r.Header, server)
	}
	_, _, server = flavorKeys(map[string]string{"X-OpenStack-Nova-API-Version": "latest"})
	if _, ok := server["pinned_availability_zone"]; !ok {
		t.Errorf("latest: %v", server)
	}
	r, b = raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/"+id, "", map[string]string{"X-OpenStack-Nova-API-Version": "2.200"})
	if r.StatusCode != http.StatusNotAcceptable {
		t.Errorf("2.200: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"computeFault": {"code": 406, "message": "Version 2.200 is not supported by the API. Minimum is 2.1 and maximum is 2.96."}}`)
	if r, b := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/"+id, "", map[string]string{"X-OpenStack-Nova-API-Version": "2.x"}); r.StatusCode != http.StatusBadRequest ||
		doc(t, b)["badRequest"] == nil {
		t.Errorf("2.x: %d %s", r.StatusCode, b)
	}
	// A cloud older than 2.47 refuses it.
	s.SetMaxMicroversion("2.46")
	if _, err := servers.Get(ctx, compute, id).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotAcceptable) {
		t.Errorf("2.47 on a 2.46 cloud: %v", err)
	}
}

func TestServerLifecycle(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	_, ids := cluster(s, 1)
	building := s.AddServer(ServerSpec{Name: "new", Status: StatusBuild, Ports: []PortSpec{{Network: "private"}}})
	compute, _ := clients(t, s)
	get := func(id string) *servers.Server {
		t.Helper()
		sv, err := servers.Get(ctx, compute, id).Extract()
		if err != nil {
			t.Fatal(err)
		}
		return sv
	}
	if err := s.StopServer(ids[0]); err != nil {
		t.Fatal(err)
	}
	if sv := get(ids[0]); sv.Status != "SHUTOFF" || sv.PowerState != servers.SHUTDOWN || sv.VmState != "stopped" {
		t.Errorf("stopped: %s %v %s", sv.Status, sv.PowerState, sv.VmState)
	}
	if p := s.ServerPorts(ids[0])[0]; p.Status != PortDown {
		t.Errorf("port of a stopped server: %s", p.Status)
	}
	if err := s.StartServer(ids[0]); err != nil {
		t.Fatal(err)
	}
	if sv := get(ids[0]); sv.Status != "ACTIVE" || s.ServerPorts(ids[0])[0].Status != PortActive {
		t.Errorf("started: %s", sv.Status)
	}
	if sv := get(building); sv.Status != "BUILD" || sv.TaskState != "spawning" || !sv.LaunchedAt.IsZero() || sv.HostID != "" {
		t.Errorf("building: %+v", sv)
	}
	if err := s.SetServerStatus(building, StatusActive); err != nil {
		t.Fatal(err)
	}
	if sv := get(building); sv.LaunchedAt.IsZero() || sv.TaskState != "" {
		t.Errorf("built: %+v", sv)
	}
	if err := s.SetServerStatus(building, "ASLEEP"); err == nil {
		t.Error("invalid status accepted")
	}
	port := s.ServerPorts(ids[0])[0]
	if err := s.DeleteServer(ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := servers.Get(ctx, compute, ids[0]).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("deleted: %v", err)
	}
	if _, ok := s.Port(port.ID); ok {
		t.Error("the deleted server's port remains")
	}
	// Its address is free again.
	again := s.AddServer(ServerSpec{Ports: []PortSpec{{Network: "private", IPs: []string{port.FixedIPs[0].IP}}}})
	if got := s.ServerPorts(again)[0].FixedIPs[0].IP; got != port.FixedIPs[0].IP {
		t.Errorf("reused address %s", got)
	}
}

func TestFlavors(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	s.AddFlavor(Flavor{ID: "9f2b", Name: "gpu.large", VCPUs: 16, RAM: 65536, Disk: 100, Swap: 1024,
		ExtraSpecs: map[string]string{"pci_passthrough:alias": "a100:1"}, Description: "GPU"})
	compute, _ := clients(t, s)
	f, err := flavors.Get(ctx, compute, "2").Extract()
	if err != nil || f.Name != "m1.small" || f.RAM != 2048 || f.VCPUs != 1 || f.Disk != 20 || f.Swap != 0 || !f.IsPublic {
		t.Errorf("flavor 2: %+v %v", f, err)
	}
	_, err = flavors.Get(ctx, compute, "nope").Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("missing flavor: %v", err)
	}
	var got []string
	err = flavors.ListDetail(compute, flavors.ListOpts{Limit: 3}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		fs, err := flavors.ExtractFlavors(p)
		for _, f := range fs {
			got = append(got, f.ID)
		}
		return true, err
	})
	if err != nil || fmt.Sprint(got) != "[1 2 3 4 42 5 84 9f2b]" {
		t.Errorf("flavors %v %v", got, err)
	}
	tok := token(t, s)
	_, b := raw(t, s, tok, http.MethodGet, "/compute/v2.1/flavors/nope", "", nil)
	jsonEq(t, b, `{"itemNotFound": {"code": 404, "message": "Flavor nope could not be found."}}`)
	// Swap is "" when there is none, until 2.75; descriptions and extra
	// specs show from 2.55 and 2.61.
	_, b = raw(t, s, tok, http.MethodGet, "/compute/v2.1/flavors/1", "", nil)
	if fl := doc(t, b)["flavor"].(map[string]any); fl["swap"] != "" || fl["description"] != nil || fl["extra_specs"] != nil {
		t.Errorf("2.1: %v", fl)
	}
	_, b = raw(t, s, tok, http.MethodGet, "/compute/v2.1/flavors/1", "", map[string]string{"X-OpenStack-Nova-API-Version": "2.75"})
	if fl := doc(t, b)["flavor"].(map[string]any); fl["swap"] != 0.0 {
		t.Errorf("2.75: %v", fl)
	}
	compute.Microversion = "2.61"
	if f, err := flavors.Get(ctx, compute, "9f2b").Extract(); err != nil || f.Description != "GPU" || f.ExtraSpecs["pci_passthrough:alias"] != "a100:1" || f.Swap != 1024 {
		t.Errorf("2.61: %+v %v", f, err)
	}
	// A deleted flavor lives on in its servers, as upstream's CCM finds
	// it: by original_name from 2.47, by ID (then 404) before.
	id := s.AddServer(ServerSpec{Flavor: "gpu.large"})
	if err := s.DeleteFlavor("9f2b"); err != nil {
		t.Fatal(err)
	}
	compute.Microversion = "2.47"
	if sv, err := servers.Get(ctx, compute, id).Extract(); err != nil || sv.Flavor["original_name"] != "gpu.large" {
		t.Errorf("server of a deleted flavor: %v %v", sv, err)
	}
	compute.Microversion = ""
	if _, err := flavors.Get(ctx, compute, "9f2b").Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("deleted flavor: %v", err)
	}
	if n := s.Faults().CallCount(FlavorsGet); n != 7 {
		t.Errorf("flavor gets = %d", n)
	}
}
