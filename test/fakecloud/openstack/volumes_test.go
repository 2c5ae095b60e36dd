package openstack

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// volumeClient is gophercloud's Cinder client of a region, found in the
// catalog as upstream's cinder-csi finds it.
func volumeClient(t *testing.T, p *gophercloud.ProviderClient, region string) *gophercloud.ServiceClient {
	t.Helper()
	c, err := gos.NewBlockStorageV3(p, gophercloud.EndpointOpts{Region: region})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// addVolumes makes n volumes, vol-0..vol-(n-1), a minute apart.
func addVolumes(s *Server, n int) []string {
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i := range n {
		ids = append(ids, s.AddVolume(VolumeSpec{Name: fmt.Sprintf("vol-%d", i), Size: 10 + i,
			Created: base.Add(time.Duration(i) * time.Minute)}))
	}
	return ids
}

func TestVolumesPaging(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	ids := addVolumes(s, 5)
	bs := volumeClient(t, provider(t, s), "")
	var pages [][]string
	err := volumes.List(bs, volumes.ListOpts{Limit: 2}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		vs, err := volumes.ExtractVolumes(p)
		var names []string
		for _, v := range vs {
			names = append(names, v.Name)
		}
		pages = append(pages, names)
		return true, err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Newest first, two at a time.
	if fmt.Sprint(pages) != "[[vol-4 vol-3] [vol-2 vol-1] [vol-0]]" {
		t.Errorf("pages = %v", pages)
	}
	if got := s.Faults().CallCount(VolumesList); got != 3 {
		t.Errorf("list calls = %d", got)
	}
	// A last page as long as the limit still links on, to an empty one.
	s.Faults().Reset()
	all, err := volumes.List(bs, volumes.ListOpts{Limit: 5}).AllPages(ctx)
	if vs, _ := volumes.ExtractVolumes(all); err != nil || len(vs) != 5 || s.Faults().CallCount(VolumesList) != 2 {
		t.Errorf("limit 5: %d volumes in %d calls, %v", len(vs), s.Faults().CallCount(VolumesList), err)
	}

	tok := token(t, s)
	pid := s.Account().ProjectID
	_, b := raw(t, s, tok, http.MethodGet, "/volume/v3/"+pid+"/volumes/detail?limit=2&status=available", "", nil)
	jsonEq(t, mustJSON(t, doc(t, b)["volumes_links"]), `[{"href": "`+s.URL()+"/volume/v3/"+pid+
		`/volumes/detail?limit=2&marker=`+ids[3]+`&status=available", "rel": "next"}]`)
	// Without the project in the path (3.67's form), links have none.
	_, b = raw(t, s, tok, http.MethodGet, "/volume/v3/volumes/detail?limit=1&offset=1", "", nil)
	d := doc(t, b)
	next, _ := url.Parse(d["volumes_links"].([]any)[0].(map[string]any)["href"].(string))
	if vs := d["volumes"].([]any); len(vs) != 1 || vs[0].(map[string]any)["id"] != ids[3] ||
		next.Path != "/volume/v3/volumes/detail" || next.Query().Get("marker") != ids[3] {
		t.Errorf("offset 1: %s", b)
	}
	// Filters.
	_, b = raw(t, s, tok, http.MethodGet, "/volume/v3/"+pid+"/volumes/detail?name=vol-2", "", nil)
	if vs := doc(t, b)["volumes"].([]any); len(vs) != 1 || vs[0].(map[string]any)["id"] != ids[2] {
		t.Errorf("name filter: %s", b)
	}
	vs, err := volumes.List(bs, volumes.ListOpts{Status: "in-use"}).AllPages(ctx)
	if got, _ := volumes.ExtractVolumes(vs); err != nil || len(got) != 0 {
		t.Errorf("status filter: %v %v", got, err)
	}
	// Errors, in Cinder's words.
	r, b := raw(t, s, tok, http.MethodGet, "/volume/v3/"+pid+"/volumes/detail?marker=nope", "", nil)
	if r.StatusCode != http.StatusNotFound {
		t.Errorf("bad marker: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"itemNotFound": {"code": 404, "message": "Volume nope could not be found."}}`)
	r, b = raw(t, s, tok, http.MethodGet, "/volume/v3/"+pid+"/volumes/detail?limit=x", "", nil)
	if r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad limit: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"badRequest": {"code": 400, "message": "limit param must be an integer"}}`)
	// Unknown filters are dropped before 3.31 and refused from it.
	if r, b := raw(t, s, tok, http.MethodGet, "/volume/v3/"+pid+"/volumes/detail?colour=blue", "", nil); r.StatusCode != http.StatusOK ||
		len(doc(t, b)["volumes"].([]any)) != 5 {
		t.Errorf("unknown filter at 3.0: %d %s", r.StatusCode, b)
	}
	r, b = raw(t, s, tok, http.MethodGet, "/volume/v3/"+pid+"/volumes/detail?colour=blue", "",
		map[string]string{"OpenStack-API-Version": "volume 3.31"})
	if r.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown filter at 3.31: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"badRequest": {"code": 400, "message": "Invalid filters colour are found in query options."}}`)
}

func TestVolumeGet(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	_, srv := cluster(s, 1)
	id := s.AddVolume(VolumeSpec{Name: "data", Size: 20, AvailabilityZone: "az-2", Metadata: map[string]string{"k": "v"},
		Server: srv[0], VolumeType: "lvmdriver-1"})
	p := provider(t, s)
	bs := volumeClient(t, p, "")
	v, err := volumes.Get(ctx, bs, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "data" || v.Size != 20 || v.AvailabilityZone != "az-2" || v.Status != VolumeInUse || v.VolumeType != "lvmdriver-1" ||
		v.Metadata["k"] != "v" || v.Bootable != "false" || v.Multiattach || v.CreatedAt.IsZero() || v.UserID != s.Account().UserID ||
		v.TenantID != s.Account().ProjectID || len(v.Attachments) != 1 {
		t.Fatalf("volume = %+v", v)
	}
	if a := v.Attachments[0]; a.ServerID != srv[0] || a.Device != "/dev/vdb" || a.VolumeID != id || a.AttachedAt.IsZero() || a.AttachmentID == "" {
		t.Errorf("attachment = %+v", a)
	}
	// Nova lists the volume among the server's.
	compute, _ := clients(t, s)
	var sv struct {
		Attached []map[string]any `json:"os-extended-volumes:volumes_attached"`
	}
	if err := servers.Get(ctx, compute, srv[0]).ExtractInto(&sv); err != nil {
		t.Fatal(err)
	}
	if len(sv.Attached) != 1 || sv.Attached[0]["id"] != id || sv.Attached[0]["delete_on_termination"] != nil {
		t.Errorf("volumes_attached = %v", sv.Attached)
	}
	// Deleting the server detaches the volume.
	if err := s.DeleteServer(srv[0]); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Volume(id); v.Status != VolumeAvailable || len(v.Attachments) != 0 {
		t.Errorf("after DeleteServer: %+v", v)
	}
	if err := s.DeleteVolume(id); err != nil {
		t.Fatal(err)
	}
	_, err = volumes.Get(ctx, bs, id).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("deleted volume: %v", err)
	}

	tok := token(t, s)
	pid := s.Account().ProjectID
	r, b := raw(t, s, tok, http.MethodGet, "/volume/v3/"+pid+"/volumes/"+id, "", nil)
	if r.StatusCode != http.StatusNotFound || r.Header.Get("X-Openstack-Request-Id") == "" ||
		r.Header.Get("OpenStack-API-Version") != "volume 3.0" {
		t.Errorf("404: %d %v", r.StatusCode, r.Header)
	}
	jsonEq(t, b, `{"itemNotFound": {"code": 404, "message": "Volume `+id+` could not be found."}}`)
	// Another project's path is malformed, as Cinder says.
	r, b = raw(t, s, tok, http.MethodGet, "/volume/v3/0123abcd/volumes/"+id, "", nil)
	if r.StatusCode != http.StatusBadRequest {
		t.Errorf("other project: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"badRequest": {"code": 400, "message": "Malformed request url"}}`)

	// Microversions: the fields follow, the header answers.
	id = s.AddVolume(VolumeSpec{Bootable: true})
	r, b = raw(t, s, tok, http.MethodGet, "/volume/v3/"+pid+"/volumes/"+id, "", map[string]string{"OpenStack-API-Version": "volume 3.65"})
	vol := doc(t, b)["volume"].(map[string]any)
	if r.StatusCode != http.StatusOK || r.Header.Get("OpenStack-API-Version") != "volume 3.65" || vol["consumes_quota"] != true ||
		vol["volume_type_id"] == nil || vol["name"] != nil || vol["bootable"] != "true" || vol["group_id"] != nil {
		t.Errorf("3.65: %d %v %s", r.StatusCode, r.Header, b)
	}
	if _, ok := vol["group_id"]; !ok {
		t.Errorf("3.65 has no group_id: %s", b)
	}
	links := vol["links"].([]any)
	if links[0].(map[string]any)["href"] != s.URL()+"/volume/v3/"+pid+"/volumes/"+id ||
		links[1].(map[string]any)["href"] != s.URL()+"/volume/"+pid+"/volumes/"+id {
		t.Errorf("links %v", links)
	}
	_, b = raw(t, s, tok, http.MethodGet, "/volume/v3/"+pid+"/volumes/"+id, "", nil)
	if _, ok := doc(t, b)["volume"].(map[string]any)["consumes_quota"]; ok {
		t.Errorf("3.0 has consumes_quota: %s", b)
	}
	r, b = raw(t, s, tok, http.MethodGet, "/volume/v3/"+pid+"/volumes/"+id, "", map[string]string{"OpenStack-API-Version": "volume 3.99"})
	if r.StatusCode != http.StatusNotAcceptable {
		t.Errorf("3.99: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"computeFault": {"code": 406, "message": "Version 3.99 is not supported by the API. Minimum is 3.0 and maximum is 3.71."}}`)
}

func TestVolumeRegionsAndLimits(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	s.AddRegion("RegionTwo")
	one := s.AddVolume(VolumeSpec{Name: "one"})
	two := s.AddVolume(VolumeSpec{Name: "two", Region: "RegionTwo"})
	p := provider(t, s)
	bs2 := volumeClient(t, p, "RegionTwo")
	pages, err := volumes.List(bs2, nil).AllPages(ctx)
	if vs, _ := volumes.ExtractVolumes(pages); err != nil || len(vs) != 1 || vs[0].ID != two {
		t.Errorf("RegionTwo: %v %v", vs, err)
	}
	if _, err := volumes.Get(ctx, bs2, one).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("RegionOne's volume in RegionTwo: %v", err)
	}
	// Over the limit, Cinder's limiter's document, the delay in Retry-After.
	tok := token(t, s)
	path := "/volume/v3/" + s.Account().ProjectID + "/volumes/detail"
	s.SetRateLimit(1, 0.5)
	s.SetThrottleStatus(http.StatusRequestEntityTooLarge)
	raw(t, s, tok, http.MethodGet, path, "", nil)
	r, b := raw(t, s, tok, http.MethodGet, path, "", nil)
	if retry, _ := strconv.Atoi(r.Header.Get("Retry-After")); r.StatusCode != http.StatusRequestEntityTooLarge || retry < 1 {
		t.Errorf("over the limit: %d %v", r.StatusCode, r.Header)
	}
	jsonEq(t, b, `{"overLimitFault": {"code": 413, "message": "This request was rate-limited.",
		"details": "Only a limited number of requests can be made every second."}}`)
	s.SetRateLimit(0, 0)
	// Injected faults in Nova's shape, which Cinder shares.
	s.Faults().FailNext(VolumesGet, 1, http.StatusServiceUnavailable)
	r, b = raw(t, s, tok, http.MethodGet, "/volume/v3/volumes/"+one, "", nil)
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("injected: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"serviceUnavailable": {"code": 503, "message": "The server is currently unavailable. Please try again at a later time."}}`)
}
