package drivertest

import (
	"context"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/volumes"
)

// VolumeFake is a Fake whose driver says where its disks are.
type VolumeFake interface {
	Fake
	// AddVolume makes a disk and returns a PersistentVolume naming it as
	// the cloud's CSI driver would, with the topology labels the disk
	// should give it.
	AddVolume(t *testing.T) (pv *v1.PersistentVolume, labels map[string]string)
	// MissingVolume is a PersistentVolume naming a well-formed disk ID
	// that no disk has.
	MissingVolume() *v1.PersistentVolume
	// InjectVolumeFault makes every disk lookup call fail as f says,
	// until the returned function is called.
	InjectVolumeFault(f Fault) (clear func())
}

// RunVolumes checks the lookup contract of volumes.Source: the same as
// instances', for disks.
func RunVolumes(t *testing.T, f VolumeFake) {
	src := Cloud(t, f, nil).Driver().(driver.VolumeCloud).Volumes()
	pvA, labelsA := f.AddVolume(t)
	pvB, labelsB := f.AddVolume(t)
	key := func(pv *v1.PersistentVolume) volumes.Key {
		t.Helper()
		k, ok, err := src.VolumeKey(pv)
		if !ok || err != nil {
			t.Fatalf("VolumeKey(%+v) = %v, %v, %v; want the cloud's disk", pv.Spec.PersistentVolumeSource, k, ok, err)
		}
		return k
	}
	keys := []volumes.Key{key(pvB), key(f.MissingVolume()), key(pvA)}

	t.Run("not this cloud's", func(t *testing.T) {
		nfs := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			NFS: &v1.NFSVolumeSource{Server: "nfs.example", Path: "/x"}}}}
		other := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			CSI: &v1.CSIPersistentVolumeSource{Driver: "other.csi.example.com", VolumeHandle: "vol-1"}}}}
		for _, pv := range []*v1.PersistentVolume{nfs, other} {
			if k, ok, err := src.VolumeKey(pv); ok || err != nil {
				t.Errorf("VolumeKey(%+v) = %v, %v, %v; want not this cloud's", pv.Spec.PersistentVolumeSource, k, ok, err)
			}
		}
	})

	t.Run("answers are aligned with keys", func(t *testing.T) {
		ans, err := src.LookupVolumes(ctx(t), keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Results) != len(keys) {
			t.Fatalf("%d results for %d keys", len(ans.Results), len(keys))
		}
		for i, want := range []map[string]string{labelsB, nil, labelsA} {
			r := ans.Results[i]
			switch {
			case r.Err != nil:
				t.Errorf("key %v: %v, want a definitive answer", keys[i], r.Err)
			case want == nil && r.Volume != nil:
				t.Errorf("key %v: found %+v, want definitively not found", keys[i], r.Volume)
			case want != nil && (r.Volume == nil || !maps.Equal(r.Volume.Labels(), want)):
				t.Errorf("key %v: got %+v, want a disk labelled %v", keys[i], r.Volume, want)
			}
		}
	})

	t.Run("a failed call is never gone", func(t *testing.T) {
		neverGone(t, []Fault{{Status: 429}, {Status: 503}, {Status: 401}, {Hang: true}}, f.InjectVolumeFault,
			func(c context.Context) ([]error, error) {
				ans, err := src.LookupVolumes(c, keys)
				return resultErrs(ans.Results, func(r volumes.Result) error { return r.Err }), err
			}, len(keys))
	})
}
