package aws_test

import (
	"fmt"
	"maps"
	"net/url"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/volumes"
	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

func ebsPV(volumeID string) *v1.PersistentVolume {
	return &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: volumeID},
	}}}
}

func csiPV(driver, handle string) *v1.PersistentVolume {
	return &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle},
	}}}
}

func (e *env) volumes() volumes.Source {
	e.t.Helper()
	vc, ok := e.cloud.(driver.VolumeCloud)
	if !ok {
		e.t.Fatal("the AWS cloud has no volumes")
	}
	return vc.Volumes()
}

func TestVolumeKey(t *testing.T) {
	src := newEnv(t).volumes()
	const id = "vol-0123456789abcdef0"
	for _, c := range []struct {
		name    string
		pv      *v1.PersistentVolume
		want    string
		ours    bool
		invalid bool
	}{
		{"in-tree bare ID", ebsPV(id), id, true, false},
		{"in-tree with zone", ebsPV("aws://eu-west-1a/" + id), id, true, false},
		{"in-tree without zone", ebsPV("aws:///" + id), id, true, false},
		{"CSI", csiPV(awsccm.CSIDriverEBS, id), id, true, false},
		{"in-tree garbage", ebsPV("aws://eu-west-1a/"), "", true, true},
		{"CSI garbage", csiPV(awsccm.CSIDriverEBS, "i-0123456789abcdef0"), "", true, true},
		{"another CSI driver", csiPV("pd.csi.storage.gke.io", id), "", false, false},
		{"no cloud source", &v1.PersistentVolume{}, "", false, false},
	} {
		k, ours, err := src.VolumeKey(c.pv)
		if ours != c.ours || k.ID != c.want || (err != nil) != c.invalid {
			t.Errorf("%s: VolumeKey = %q, %v, %v", c.name, k.ID, ours, err)
		}
		if err != nil && cloudapi.KindOf(err) != cloudapi.KindInvalid {
			t.Errorf("%s: error kind %v, want invalid", c.name, cloudapi.KindOf(err))
		}
	}
}

func TestLookupVolumes(t *testing.T) {
	e := newEnv(t)
	a := e.fake.AddVolume(fakeaws.Volume{AvailabilityZone: zoneA})
	b := e.fake.AddVolume(fakeaws.Volume{AvailabilityZone: zoneB})
	deleted := e.fake.AddVolume(fakeaws.Volume{AvailabilityZone: zoneB, State: "deleted"})
	const missing = "vol-0000000000000dead"
	keys := []volumes.Key{{ID: a.ID}, {ID: b.ID}, {ID: missing}, {ID: deleted.ID}, {ID: a.ID}, {ID: "not-a-volume"}}
	ans, err := e.volumes().LookupVolumes(ctx(t), keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(ans.Results) != len(keys) {
		t.Fatalf("%d results for %d keys", len(ans.Results), len(keys))
	}
	want := func(i int, zone string) {
		t.Helper()
		r := ans.Results[i]
		if r.Err != nil || r.Volume == nil {
			t.Fatalf("%s: %+v", keys[i].ID, r)
		}
		got := r.Volume.Labels()
		if w := map[string]string{v1.LabelTopologyZone: zone, v1.LabelTopologyRegion: fakeaws.DefaultRegion}; !maps.Equal(got, w) {
			t.Errorf("%s: labels %v, want %v", keys[i].ID, got, w)
		}
	}
	want(0, zoneA)
	want(1, zoneB)
	want(4, zoneA)
	for _, i := range []int{2, 3} {
		if r := ans.Results[i]; r.Volume != nil || r.Err != nil {
			t.Errorf("%s: %+v, want definitively absent", keys[i].ID, r)
		}
	}
	if r := ans.Results[5]; cloudapi.KindOf(r.Err) != cloudapi.KindInvalid {
		t.Errorf("malformed key: %+v", r)
	}
	// One filtered listing, and one lookup by ID confirming the absent
	// volume (the deleted one was listed as deleted).
	if n := e.calls("DescribeVolumes"); n != 2 {
		t.Errorf("%d DescribeVolumes calls, want 2", n)
	}
}

func TestLookupVolumesChunksAndPages(t *testing.T) {
	e := newEnv(t)
	var keys []volumes.Key
	for i := range 450 {
		v := e.fake.AddVolume(fakeaws.Volume{AvailabilityZone: []string{zoneA, zoneB}[i%2]})
		keys = append(keys, volumes.Key{ID: v.ID})
	}
	ans, err := e.volumes().LookupVolumes(ctx(t), keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ans.Results {
		if r.Err != nil || r.Volume == nil {
			t.Fatalf("key %d: %+v", i, r)
		}
	}
	// 200 IDs a filter: three calls, each within one page of 500.
	if n := e.calls("DescribeVolumes"); n != 3 {
		t.Errorf("%d DescribeVolumes calls for 450 volumes, want 3", n)
	}
}

// Throttling and server errors fail the batch ambiguously; nothing is
// reported missing on them.
func TestLookupVolumesErrorsAreNeverNotFound(t *testing.T) {
	for _, status := range []int{429, 503, 500} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			e := newEnv(t)
			e.fake.Faults().AddRule(faults.Rule{Match: "ec2 DescribeVolumes", Status: status})
			_, err := e.volumes().LookupVolumes(ctx(t), []volumes.Key{{ID: "vol-0000000000000dead"}})
			if err == nil || cloudapi.IsNotFound(err) {
				t.Fatalf("err = %v, want an error that is not a not-found", err)
			}
		})
	}
}

// A volume missing from the listing whose confirming lookup fails is an
// error for that key, not a missing disk.
func TestLookupVolumesUnconfirmedIsAnError(t *testing.T) {
	w := newWorld(t)
	cfg := w.config()
	var mu sync.Mutex
	confirms := 0
	cfg.Endpoints.EC2 = w.ec2Proxy(func(form url.Values) {
		if form.Get("Action") == "DescribeVolumes" && form.Get("VolumeId.1") != "" {
			mu.Lock()
			confirms++
			mu.Unlock()
			w.fake.Faults().FailNext("ec2 DescribeVolumes", 1, 503)
		}
	})
	e := w.env(cfg)
	ans, err := e.volumes().LookupVolumes(ctx(t), []volumes.Key{{ID: "vol-0000000000000dead"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := ans.Results[0]; r.Err == nil || cloudapi.IsNotFound(r.Err) || r.Volume != nil {
		t.Errorf("result %+v, want an ambiguous error", r)
	}
	if confirms == 0 {
		t.Error("the missing volume was never confirmed by ID")
	}
}
