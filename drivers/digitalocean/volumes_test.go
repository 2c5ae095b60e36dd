package digitalocean_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/volumes"
	"github.com/polyccm/polyccm/drivers/digitalocean"
	fake "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

const (
	volumeListCalls = "GET /v2/volumes"
	volumeGetCalls  = "GET /v2/volumes/{id}"
)

// newVolumes builds the cloud as the runner does and returns its volume
// source.
func newVolumes(t *testing.T, url string) volumes.Source {
	t.Helper()
	d, _ := driver.Default().Lookup(digitalocean.Name)
	api := cloudapi.New(cloudapi.Options{
		Driver: digitalocean.Name, Classify: d.Classify, QPS: 1000, Burst: 1000, Timeout: 10 * time.Second,
		BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
	})
	cloud, err := d.New(&digitalocean.Config{Token: inline(testToken), APIURL: url}, driver.Deps{API: api})
	if err != nil {
		t.Fatal(err)
	}
	vc, ok := cloud.(driver.VolumeCloud)
	if !ok {
		t.Fatal("the DigitalOcean cloud has no volumes")
	}
	return vc.Volumes()
}

func lookupVolumes(t *testing.T, src volumes.Source, ids ...string) []volumes.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys := make([]volumes.Key, len(ids))
	for i, id := range ids {
		keys[i] = volumes.Key{ID: id}
	}
	a, err := src.LookupVolumes(ctx, keys)
	if err != nil {
		t.Fatalf("LookupVolumes: %v", err)
	}
	if len(a.Results) != len(keys) {
		t.Fatalf("%d results for %d keys", len(a.Results), len(keys))
	}
	return a.Results
}

func TestDOVolumeKey(t *testing.T) {
	src := newVolumes(t, startFake(t).URL())
	const id = "506f78a4-e098-11e5-ad9f-000f53306ae1"
	pv := func(driver, handle string) *v1.PersistentVolume {
		return &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle},
		}}}
	}
	if k, ours, err := src.VolumeKey(pv(digitalocean.CSIDriverDOBS, id)); !ours || err != nil || k.ID != id {
		t.Errorf("CSI PV: %q, %v, %v", k.ID, ours, err)
	}
	if _, ours, err := src.VolumeKey(pv(digitalocean.CSIDriverDOBS, "my-volume")); !ours || cloudapi.KindOf(err) != cloudapi.KindInvalid {
		t.Errorf("bad handle: %v, %v", ours, err)
	}
	if _, ours, _ := src.VolumeKey(pv("ebs.csi.aws.com", "vol-0123456789abcdef0")); ours {
		t.Error("another driver's PV was claimed")
	}
}

func TestLookupVolumesRegionOnly(t *testing.T) {
	f := startFake(t)
	a := f.AddVolume(fake.Volume{Region: "fra1"})
	b := f.AddVolume(fake.Volume{Region: "nyc3"})
	gone := f.AddVolume(fake.Volume{})
	f.RemoveVolume(gone.ID)
	for range 250 {
		f.AddVolume(fake.Volume{})
	}
	src := newVolumes(t, f.URL())

	// The volume count is not known yet: one listing (two pages) answers
	// the batch, and a GET confirms the volume it lacked.
	rs := lookupVolumes(t, src, a.ID, b.ID, gone.ID, "not-a-uuid")
	for i, want := range []string{"fra1", "nyc3"} {
		if rs[i].Err != nil || rs[i].Volume == nil {
			t.Fatalf("result %d: %+v", i, rs[i])
		}
		// No zones on DigitalOcean: a region label only.
		if got := rs[i].Volume.Labels(); !maps.Equal(got, map[string]string{v1.LabelTopologyRegion: want}) {
			t.Errorf("result %d: labels %v", i, got)
		}
	}
	if rs[2].Volume != nil || rs[2].Err != nil {
		t.Errorf("removed volume: %+v, want definitively absent", rs[2])
	}
	if cloudapi.KindOf(rs[3].Err) != cloudapi.KindInvalid {
		t.Errorf("malformed key: %+v", rs[3])
	}
	calls := f.Faults().Calls()
	if calls[volumeListCalls] != 2 || calls[volumeGetCalls] != 1 {
		t.Errorf("calls %v, want a listing of two pages and one GET", calls)
	}

	// Now the count is known (two pages' worth): a single volume is one
	// GET, not a listing.
	f.Faults().Reset()
	rs = lookupVolumes(t, src, a.ID)
	if rs[0].Volume == nil {
		t.Fatalf("%+v", rs[0])
	}
	if calls := f.Faults().Calls(); calls[volumeListCalls] != 0 {
		t.Errorf("calls %v, want no listing", calls)
	}
}

func TestLookupVolumesPages(t *testing.T) {
	f := startFake(t)
	var ids []string
	for range 450 {
		ids = append(ids, f.AddVolume(fake.Volume{Region: "ams3"}).ID)
	}
	rs := lookupVolumes(t, newVolumes(t, f.URL()), ids...)
	for i, r := range rs {
		if r.Err != nil || r.Volume == nil || r.Volume.Region != "ams3" {
			t.Fatalf("volume %d: %+v", i, r)
		}
	}
	// 200 a page.
	if n := f.Faults().Calls()[volumeListCalls]; n != 3 {
		t.Errorf("%d listing calls for 450 volumes, want 3", n)
	}
}

func TestLookupVolumesErrorsAreNeverNotFound(t *testing.T) {
	f := startFake(t)
	v := f.AddVolume(fake.Volume{})
	f.Faults().AddRule(faults.Rule{Match: "GET /v2/volumes*", Status: 503})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := newVolumes(t, f.URL()).LookupVolumes(ctx, []volumes.Key{{ID: v.ID}})
	if err == nil || cloudapi.IsNotFound(err) || !strings.Contains(err.Error(), "503") {
		t.Errorf("err = %v, want an ambiguous 503", err)
	}
}
