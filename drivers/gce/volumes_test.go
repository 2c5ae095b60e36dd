package gce_test

import (
	"maps"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/volumes"
	"github.com/polyccm/polyccm/drivers/gce"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

const (
	epListDisks       = "GET /compute/v1/projects/{project}/zones/{zone}/disks"
	epGetDisk         = "GET /compute/v1/projects/{project}/zones/{zone}/disks/{disk}"
	epListRegionDisks = "GET /compute/v1/projects/{project}/regions/{region}/disks"
	epAggDisks        = "GET /compute/v1/projects/{project}/aggregated/disks"
)

func (e *env) volumes() volumes.Source {
	e.t.Helper()
	vc, ok := e.cloud.(driver.VolumeCloud)
	if !ok {
		e.t.Fatal("the GCE cloud has no volumes")
	}
	return vc.Volumes()
}

func pdPV(name string) *v1.PersistentVolume {
	return &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: name},
	}}}
}

func csiPV(driver, handle string) *v1.PersistentVolume {
	return &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle},
	}}}
}

func zonalID(zone, name string) string {
	return "projects/" + testProject + "/zones/" + zone + "/disks/" + name
}

func regionalID(region, name string) string {
	return "projects/" + testProject + "/regions/" + region + "/disks/" + name
}

func TestDiskVolumeKey(t *testing.T) {
	src := newEnv(t).volumes()
	for _, c := range []struct {
		name    string
		pv      *v1.PersistentVolume
		want    string
		ours    bool
		invalid bool
	}{
		{"in-tree", pdPV("pv-1"), "pv-1", true, false},
		{"CSI zonal", csiPV(gce.CSIDriverPD, zonalID(testZone, "pv-1")), zonalID(testZone, "pv-1"), true, false},
		{"CSI regional", csiPV(gce.CSIDriverPD, regionalID(testRegion, "pv-1")), regionalID(testRegion, "pv-1"), true, false},
		{"in-tree bad name", pdPV("PV_1"), "", true, true},
		{"CSI bad handle", csiPV(gce.CSIDriverPD, "projects/p/global/disks/x"), "", true, true},
		{"CSI handle too short", csiPV(gce.CSIDriverPD, "zones/z/disks/x"), "", true, true},
		{"another CSI driver", csiPV("ebs.csi.aws.com", "vol-0123456789abcdef0"), "", false, false},
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

func TestLookupDisks(t *testing.T) {
	e := newEnv(t)
	e.fake.AddDisk(fakegce.Disk{Name: "zonal-a", Zone: testZone})
	e.fake.AddDisk(fakegce.Disk{Name: "zonal-b", Zone: testZone2})
	e.fake.AddDisk(fakegce.Disk{Name: "unasked", Zone: testZone})
	e.fake.AddDisk(fakegce.Disk{Name: "replicated", Region: testRegion, ReplicaZones: []string{testZone2, testZone}})
	// Two disks of one name: an in-tree PV cannot say which.
	e.fake.AddDisk(fakegce.Disk{Name: "twin", Zone: testZone})
	e.fake.AddDisk(fakegce.Disk{Name: "twin", Zone: testZone2})

	keys := []volumes.Key{
		{ID: zonalID(testZone, "zonal-a")},
		{ID: zonalID(testZone2, "zonal-b")},
		{ID: regionalID(testRegion, "replicated")},
		{ID: zonalID(testZone, "gone")},
		{ID: "zonal-b"},      // in-tree, by name
		{ID: "replicated"},   // in-tree, regional
		{ID: "nowhere"},      // in-tree, absent
		{ID: "twin"},         // in-tree, ambiguous
		{ID: "projects/x/y"}, // malformed
	}
	ans, err := e.volumes().LookupVolumes(ctx(t), keys)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]map[string]string{
		0: {v1.LabelTopologyZone: testZone, v1.LabelTopologyRegion: testRegion},
		1: {v1.LabelTopologyZone: testZone2, v1.LabelTopologyRegion: testRegion},
		2: {v1.LabelTopologyZone: testZone + "__" + testZone2, v1.LabelTopologyRegion: testRegion},
		4: {v1.LabelTopologyZone: testZone2, v1.LabelTopologyRegion: testRegion},
		5: {v1.LabelTopologyZone: testZone + "__" + testZone2, v1.LabelTopologyRegion: testRegion},
	}
	for i, w := range want {
		r := ans.Results[i]
		if r.Err != nil || r.Volume == nil {
			t.Errorf("%s: %+v", keys[i].ID, r)
			continue
		}
		if got := r.Volume.Labels(); !maps.Equal(got, w) {
			t.Errorf("%s: labels %v, want %v", keys[i].ID, got, w)
		}
	}
	for _, i := range []int{3, 6} {
		if r := ans.Results[i]; r.Volume != nil || r.Err != nil {
			t.Errorf("%s: %+v, want definitively absent", keys[i].ID, r)
		}
	}
	if r := ans.Results[7]; r.Err == nil || !strings.Contains(r.Err.Error(), "several places") {
		t.Errorf("twin: %+v, want an ambiguity error", r)
	}
	if r := ans.Results[8]; cloudapi.KindOf(r.Err) != cloudapi.KindInvalid {
		t.Errorf("malformed: %+v", r)
	}
	// Filtered lists, never a get per disk: one per zone, one for the
	// region, one aggregated for the bare names; one get confirms the
	// zonal disk the list lacked.
	for ep, n := range map[string]int{epListDisks: 2, epListRegionDisks: 1, epAggDisks: 1, epGetDisk: 1} {
		if got := e.calls(ep); got != n {
			t.Errorf("%d calls to %s, want %d", got, ep, n)
		}
	}
}

func TestLookupDisksErrors(t *testing.T) {
	e := newEnv(t)
	// An unknown zone or project fails its own keys only.
	keys := []volumes.Key{
		{ID: zonalID("mars-central1-a", "d")},
		{ID: "projects/someone-else/zones/" + testZone + "/disks/d"},
	}
	ans, err := e.volumes().LookupVolumes(ctx(t), keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ans.Results {
		if r.Err == nil || cloudapi.IsNotFound(r.Err) {
			t.Errorf("%s: %+v, want an error that is not a not-found", keys[i].ID, r)
		}
	}
	// Server trouble fails the batch, ambiguously.
	e.fake.Faults().AddRule(faults.Rule{Match: epListDisks, Status: 503})
	_, err = e.volumes().LookupVolumes(ctx(t), []volumes.Key{{ID: zonalID(testZone, "d")}})
	if err == nil || cloudapi.IsNotFound(err) {
		t.Errorf("err = %v, want an error that is not a not-found", err)
	}
}
