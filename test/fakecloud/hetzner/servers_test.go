package hetzner

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

func TestServersPaging(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	var ids []int64
	for i := range 120 {
		role := map[bool]string{true: "worker", false: "cp"}[i%2 == 0]
		ids = append(ids, s.AddServer(ServerSpec{Name: fmt.Sprintf("node-%03d", i), Labels: map[string]string{"role": role}}))
	}
	all, err := c.Server.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 120 || all[0].ID != ids[0] || all[119].ID != ids[119] {
		t.Fatalf("All: %d servers, first %d last %d", len(all), all[0].ID, all[len(all)-1].ID)
	}
	page, resp, err := c.Server.List(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{Page: 3, PerPage: 50}})
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Meta.Pagination
	if len(page) != 20 || p.Page != 3 || p.PerPage != 50 || p.PreviousPage != 2 || p.NextPage != 0 || p.LastPage != 3 || p.TotalEntries != 120 {
		t.Errorf("page 3: %d servers, pagination %+v", len(page), *p)
	}
	// The default page is 25; more than 50 is cut to 50.
	_, resp, _ = c.Server.List(ctx, hcloud.ServerListOpts{})
	if resp.Meta.Pagination.PerPage != 25 || resp.Meta.Pagination.LastPage != 5 {
		t.Errorf("default page: %+v", *resp.Meta.Pagination)
	}
	r, b := raw(t, s, "GET", "/v1/servers?per_page=100&page=2", "")
	m := doc(t, b)["meta"].(map[string]any)["pagination"].(map[string]any)
	if m["per_page"] != 50.0 || len(doc(t, b)["servers"].([]any)) != 50 {
		t.Errorf("per_page=100: %v", m)
	}
	if link := r.Header.Get("Link"); !containsAll(link, `page=1`, `rel="prev"`, `page=3`, `rel="next"`, `rel="last"`) {
		t.Errorf("Link = %q", link)
	}
	r, b = raw(t, s, "GET", "/v1/servers?page=0", "")
	if r.StatusCode != http.StatusBadRequest || doc(t, b)["error"].(map[string]any)["code"] != "invalid_input" {
		t.Errorf("page=0: %d %s", r.StatusCode, b)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestServerFilters(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	a := s.AddServer(ServerSpec{Name: "a", Labels: map[string]string{"role": "worker", "env": "prod"}})
	b := s.AddServer(ServerSpec{Name: "b", Labels: map[string]string{"role": "cp"}})
	d := s.AddServer(ServerSpec{Name: "d", Status: StatusOff})
	cases := []struct {
		opts hcloud.ServerListOpts
		want []int64
	}{
		{hcloud.ServerListOpts{Name: "b"}, []int64{b}},
		{hcloud.ServerListOpts{Name: "nope"}, nil},
		{hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role=worker"}}, []int64{a}},
		{hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role==cp"}}, []int64{b}},
		{hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role"}}, []int64{a, b}},
		{hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "!role"}}, []int64{d}},
		{hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role!=cp"}}, []int64{a, d}},
		{hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role in (cp,worker),env"}}, []int64{a}},
		{hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role notin (cp)"}}, []int64{a, d}},
		{hcloud.ServerListOpts{Status: []hcloud.ServerStatus{hcloud.ServerStatusOff}}, []int64{d}},
		{hcloud.ServerListOpts{Status: []hcloud.ServerStatus{hcloud.ServerStatusRunning, hcloud.ServerStatusOff}}, []int64{a, b, d}},
	}
	for _, tc := range cases {
		got, err := c.Server.AllWithOpts(ctx, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, sv := range got {
			ids = append(ids, sv.ID)
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("%+v: got %v, want %v", tc.opts, ids, tc.want)
		}
	}
	_, err := c.Server.AllWithOpts(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "role=="}})
	if err != nil {
		t.Errorf("empty value: %v", err)
	}
	_, err = c.Server.AllWithOpts(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "a b"}})
	apiErr(t, err, hcloud.ErrorCodeInvalidInput, http.StatusBadRequest)
	_, err = c.Server.AllWithOpts(ctx, hcloud.ServerListOpts{Status: []hcloud.ServerStatus{"sleeping"}})
	apiErr(t, err, hcloud.ErrorCodeInvalidInput, http.StatusBadRequest)
}

func TestServerGet(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	network, ids := cluster(s, 2)
	v6only := s.AddServer(ServerSpec{Name: "v6", Location: "hel1", Type: "cax11", NoIPv4: true, Network: network, PrivateIP: "10.0.0.99"})
	vol := s.AddVolume("data", "fsn1")
	if err := s.AttachVolume(vol, ids[0]); err != nil {
		t.Fatal(err)
	}

	sv, _, err := c.Server.GetByID(ctx, ids[0])
	if err != nil || sv == nil {
		t.Fatal(sv, err)
	}
	if sv.Status != hcloud.ServerStatusRunning || sv.ServerType.Name != "cx22" || sv.ServerType.Cores != 2 ||
		sv.Location.Name != "fsn1" || sv.Location.NetworkZone != hcloud.NetworkZoneEUCentral || sv.PublicNet.IPv4.IP == nil ||
		sv.PublicNet.IPv6.Network == nil || len(sv.PrivateNet) != 1 || sv.PrivateNet[0].IP.String() != "10.0.0.2" ||
		sv.PrivateNet[0].Network.ID != network || len(sv.Volumes) != 1 || sv.Volumes[0].ID != vol || sv.Image.Name != "ubuntu-24.04" {
		t.Errorf("server = %+v", sv)
	}
	sv6, _, _ := c.Server.GetByID(ctx, v6only)
	if !sv6.PublicNet.IPv4.IsUnspecified() || sv6.PrivateNet[0].IP.String() != "10.0.0.99" || sv6.Location.Name != "hel1" {
		t.Errorf("IPv6-only server: %+v", sv6.PublicNet)
	}
	_, b := raw(t, s, "GET", fmt.Sprintf("/v1/servers/%d", v6only), "")
	pn := doc(t, b)["server"].(map[string]any)["public_net"].(map[string]any)
	if pn["ipv4"] != nil || pn["ipv6"] == nil {
		t.Errorf("public_net = %v", pn)
	}
	byName, _, err := c.Server.GetByName(ctx, sv.Name)
	if err != nil || byName == nil || byName.ID != sv.ID {
		t.Errorf("by name: %v %v", byName, err)
	}

	// A server that does not exist is nil, nil to hcloud-go.
	missing, _, err := c.Server.GetByID(ctx, 1)
	if missing != nil || err != nil {
		t.Errorf("missing server: %v %v", missing, err)
	}
	if err := s.SetServerStatus(ids[1], StatusOff); err != nil {
		t.Fatal(err)
	}
	off, _, _ := c.Server.GetByID(ctx, ids[1])
	if off.Status != hcloud.ServerStatusOff {
		t.Errorf("status = %s", off.Status)
	}
	if err := s.DeleteServer(ids[1]); err != nil {
		t.Fatal(err)
	}
	gone, _, err := c.Server.GetByID(ctx, ids[1])
	if gone != nil || err != nil {
		t.Errorf("deleted server: %v %v", gone, err)
	}
	n, _, _ := c.Network.GetByID(ctx, network)
	if len(n.Servers) != 2 {
		t.Errorf("network servers = %d, want 2", len(n.Servers))
	}
	// Its address is free again.
	if id := s.AddServer(ServerSpec{Network: network, PrivateIP: "10.0.0.3"}); id == 0 {
		t.Error("no server")
	}
}

func TestVolumes(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	id := s.AddVolume("pvc-1", "nbg1")
	v, _, err := c.Volume.GetByID(ctx, id)
	if err != nil || v == nil || v.Name != "pvc-1" || v.Location.Name != "nbg1" || v.Server != nil ||
		v.LinuxDevice != fmt.Sprintf("/dev/disk/by-id/scsi-0HC_Volume_%d", id) || v.Size != 10 {
		t.Fatalf("volume = %+v, %v", v, err)
	}
	all, err := c.Volume.AllWithOpts(ctx, hcloud.VolumeListOpts{Name: "pvc-1"})
	if err != nil || len(all) != 1 {
		t.Errorf("by name: %v %v", all, err)
	}
	if v, _, err := c.Volume.GetByID(ctx, id+1); v != nil || err != nil {
		t.Errorf("missing volume: %v %v", v, err)
	}
}
