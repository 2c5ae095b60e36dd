//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/drivers/aws"
	"github.com/polyccm/polyccm/drivers/digitalocean"
	"github.com/polyccm/polyccm/drivers/gce"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
	"github.com/polyccm/polyccm/test/harness"
)

// volumeLabelsOnly runs the volume-labels controller alone, so nothing
// else the test did not ask for touches the cluster.
func volumeLabelsOnly(s *harness.Settings) {
	s.Controllers = "nodes: false\nnodeLifecycle: false\nservices: false\nvolumeLabels: true"
}

// pvCase is one PersistentVolume and the labels it must end up with (nil:
// none of the topology labels, and no patch at all).
type pvCase struct {
	name   string
	source v1.PersistentVolumeSource
	labels map[string]string // at creation
	want   map[string]string
}

func csi(driver, handle string) v1.PersistentVolumeSource {
	return v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}}
}

func topo(zone, region string) map[string]string {
	out := map[string]string{v1.LabelTopologyRegion: region}
	if zone != "" {
		out[v1.LabelTopologyZone] = zone
	}
	return out
}

// checkVolumeLabels creates the PVs, the already-labelled one first, and
// checks that each gets its labels, that the already-right one and the
// other cloud's are never patched, and that the one named missing gets a
// DiskNotFound warning.
func checkVolumeLabels(t *testing.T, e *env, cases []pvCase, missing string) {
	t.Helper()
	ctx := context.Background()
	pvs := cp.Admin.CoreV1().PersistentVolumes()
	created := map[string]*v1.PersistentVolume{}
	for _, c := range cases {
		pv := &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: e.prefix + "-" + c.name, Labels: c.labels},
			Spec: v1.PersistentVolumeSpec{
				Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")},
				AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource:        c.source,
			},
		}
		got, err := pvs.Create(ctx, pv, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating PV %s: %v", pv.Name, err)
		}
		t.Cleanup(func() { _ = pvs.Delete(context.Background(), got.Name, metav1.DeleteOptions{}) })
		created[c.name] = got
	}

	eventually(t, 20*time.Second, "PV topology labels", func() (bool, string) {
		var pending []string
		for _, c := range cases {
			pv, err := pvs.Get(ctx, created[c.name].Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := maps.Clone(c.labels)
			if want == nil {
				want = map[string]string{}
			}
			maps.Copy(want, c.want)
			if !maps.Equal(pv.Labels, want) {
				pending = append(pending, fmt.Sprintf("%s=%v", c.name, pv.Labels))
			}
		}
		return len(pending) == 0, strings.Join(pending, ", ")
	})

	name := created[missing].Name
	eventually(t, 20*time.Second, "a DiskNotFound warning on "+name, func() (bool, string) {
		evs, err := cp.Admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=PersistentVolume,involvedObject.name=" + name + ",type=Warning",
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs.Items {
			if ev.Reason == "DiskNotFound" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d warnings", len(evs.Items))
	})

	// PVs that needed nothing were never written to: not the one already
	// right, not the other cloud's, not the one whose disk is missing.
	never(t, time.Second, "a PV that needed nothing was patched", func() (bool, string) {
		for _, c := range cases {
			if c.want != nil && c.name != "right" {
				continue
			}
			pv, err := pvs.Get(ctx, created[c.name].Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if pv.ResourceVersion != created[c.name].ResourceVersion {
				return true, fmt.Sprintf("%s: resourceVersion %s, created as %s; labels %v", c.name, pv.ResourceVersion, created[c.name].ResourceVersion, pv.Labels)
			}
		}
		return false, ""
	})
}

func TestVolumeLabelsAWS(t *testing.T) {
	e := newAWSEnv(t, volumeLabelsOnly)
	const region = fakeaws.DefaultRegion
	inTree := e.fake.AddVolume(fakeaws.Volume{AvailabilityZone: "eu-west-1a"})
	viaCSI := e.fake.AddVolume(fakeaws.Volume{AvailabilityZone: "eu-west-1b"})
	right := e.fake.AddVolume(fakeaws.Volume{AvailabilityZone: "eu-west-1b"})
	checkVolumeLabels(t, e.env, []pvCase{
		{name: "right", source: csi(aws.CSIDriverEBS, right.ID), labels: topo("eu-west-1b", region), want: topo("eu-west-1b", region)},
		{name: "in-tree", source: v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://eu-west-1a/" + inTree.ID}},
			want: topo("eu-west-1a", region)},
		// A stale zone is corrected; other labels stay.
		{name: "csi", source: csi(aws.CSIDriverEBS, viaCSI.ID), labels: map[string]string{"team": "db", v1.LabelTopologyZone: "eu-west-1c"},
			want: topo("eu-west-1b", region)},
		{name: "missing", source: csi(aws.CSIDriverEBS, "vol-0000000000000dead")},
		{name: "foreign", source: csi(gce.CSIDriverPD, "projects/p/zones/us-central1-a/disks/d")},
	}, "missing")
}

func TestVolumeLabelsGCE(t *testing.T) {
	e := newGCEEnv(t, volumeLabelsOnly)
	e.fake.AddDisk(fakegce.Disk{Name: e.prefix + "-in-tree", Zone: "us-central1-a"})
	e.fake.AddDisk(fakegce.Disk{Name: e.prefix + "-zonal", Zone: "us-central1-b"})
	e.fake.AddDisk(fakegce.Disk{Name: e.prefix + "-regional", Region: gceRegion, ReplicaZones: []string{"us-central1-f", "us-central1-a"}})
	e.fake.AddDisk(fakegce.Disk{Name: e.prefix + "-right", Zone: "us-central1-c"})
	path := func(scope, name string) string {
		return "projects/" + gceProject + "/" + scope + "/disks/" + e.prefix + "-" + name
	}
	checkVolumeLabels(t, e.env, []pvCase{
		{name: "right", source: csi(gce.CSIDriverPD, path("zones/us-central1-c", "right")), labels: topo("us-central1-c", gceRegion), want: topo("us-central1-c", gceRegion)},
		{name: "in-tree", source: v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: e.prefix + "-in-tree"}},
			want: topo("us-central1-a", gceRegion)},
		{name: "zonal", source: csi(gce.CSIDriverPD, path("zones/us-central1-b", "zonal")), want: topo("us-central1-b", gceRegion)},
		// Both replica zones, as Kubernetes writes a multi-zone label.
		{name: "regional", source: csi(gce.CSIDriverPD, path("regions/"+gceRegion, "regional")), want: topo("us-central1-a__us-central1-f", gceRegion)},
		{name: "missing", source: csi(gce.CSIDriverPD, path("zones/us-central1-a", "missing"))},
		{name: "foreign", source: csi(aws.CSIDriverEBS, "vol-0123456789abcdef0")},
	}, "missing")
}

func TestVolumeLabelsDigitalOcean(t *testing.T) {
	e := newDOEnv(t, nil, volumeLabelsOnly)
	vol := e.fake.AddVolume(fakedo.Volume{Region: "fra1"})
	right := e.fake.AddVolume(fakedo.Volume{Region: "ams3"})
	gone := e.fake.AddVolume(fakedo.Volume{})
	e.fake.RemoveVolume(gone.ID)
	// DigitalOcean has no zones: a region label only.
	checkVolumeLabels(t, e.env, []pvCase{
		{name: "right", source: csi(digitalocean.CSIDriverDOBS, right.ID), labels: topo("", "ams3"), want: topo("", "ams3")},
		{name: "csi", source: csi(digitalocean.CSIDriverDOBS, vol.ID), want: topo("", "fra1")},
		{name: "missing", source: csi(digitalocean.CSIDriverDOBS, gone.ID)},
		{name: "foreign", source: csi(aws.CSIDriverEBS, "vol-0123456789abcdef0")},
	}, "missing")
}
