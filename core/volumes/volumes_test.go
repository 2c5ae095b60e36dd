package volumes_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/volumes"
)

// guard turns a hang into a failure; it never measures speed.
const guard = 20 * time.Second

// fakeSource records the batches asked for and answers with answer.
type fakeSource struct {
	mu     sync.Mutex
	keys   [][]volumes.Key
	answer func(keys []volumes.Key) (volumes.Answer, error)
}

func (f *fakeSource) VolumeKey(pv *v1.PersistentVolume) (volumes.Key, bool, error) {
	h, ok := volumes.CSIHandle(pv, "disk.example.com")
	return volumes.Key{ID: h}, ok, nil
}

func (f *fakeSource) LookupVolumes(_ context.Context, keys []volumes.Key) (volumes.Answer, error) {
	f.mu.Lock()
	f.keys = append(f.keys, slices.Clone(keys))
	f.mu.Unlock()
	return f.answer(keys)
}

func (f *fakeSource) batches() [][]volumes.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.keys)
}

func always(r volumes.Result) func([]volumes.Key) (volumes.Answer, error) {
	return func(keys []volumes.Key) (volumes.Answer, error) {
		out := make([]volumes.Result, len(keys))
		for i := range out {
			out[i] = r
		}
		return volumes.Answer{Results: out}, nil
	}
}

var runs atomic.Int64

// driverName keeps each test's metrics apart, as the registry is global.
func driverName(t *testing.T) string { return fmt.Sprintf("%s#%d", t.Name(), runs.Add(1)) }

func lookup(t *testing.T, vs *volumes.Volumes, id string) (*volumes.Volume, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	return vs.Lookup(ctx, volumes.Key{ID: id})
}

func TestLookupClassifiesAnswers(t *testing.T) {
	zonal := &volumes.Volume{ID: "d", Zones: []string{"z1"}, Region: "r"}
	tests := []struct {
		name       string
		answer     func([]volumes.Key) (volumes.Answer, error)
		wantVolume bool
		wantErr    bool
	}{
		{"found", always(volumes.Result{Volume: zonal}), true, false},
		{"definitively absent", always(volumes.Result{}), false, false},
		{"per-key not found", always(volumes.Result{Err: cloudapi.NotFound("no disk")}), false, false},
		{"per-key unavailable", always(volumes.Result{Err: &cloudapi.Error{Kind: cloudapi.KindUnavailable, Err: errors.New("503")}}), false, true},
		{"batch error", func([]volumes.Key) (volumes.Answer, error) { return volumes.Answer{}, errors.New("list failed") }, false, true},
		// A batch "not found" (say, a listing that 404ed) says nothing
		// about each disk.
		{"batch not found", func([]volumes.Key) (volumes.Answer, error) {
			return volumes.Answer{}, cloudapi.NotFound("project not found")
		}, false, true},
		{"misaligned", func([]volumes.Key) (volumes.Answer, error) { return volumes.Answer{}, nil }, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := volumes.New(&fakeSource{answer: tt.answer}, volumes.Options{Driver: driverName(t), Timeout: guard})
			v, err := lookup(t, vs, "d")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && cloudapi.IsNotFound(err) {
				t.Errorf("an ambiguous error reads as not found: %v", err)
			}
			if (v != nil) != tt.wantVolume {
				t.Errorf("volume = %+v, want one: %v", v, tt.wantVolume)
			}
		})
	}
}

func TestLookupsAreBatchedAndCached(t *testing.T) {
	src := &fakeSource{answer: func(keys []volumes.Key) (volumes.Answer, error) {
		out := make([]volumes.Result, len(keys))
		for i, k := range keys {
			if k.ID != "missing" {
				out[i].Volume = &volumes.Volume{ID: k.ID, Zones: []string{"z"}}
			}
		}
		// A listing also returned a disk nobody asked about yet.
		return volumes.Answer{Results: out, Seen: []volumes.Volume{{ID: "other", Region: "r"}}}, nil
	}}
	vs := volumes.New(src, volumes.Options{Driver: driverName(t), BatchWindow: 50 * time.Millisecond, CacheTTL: time.Hour, Timeout: guard})
	ids := []string{"a", "b", "c", "missing"}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			if _, err := lookup(t, vs, id); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		})
	}
	wg.Wait()
	if b := src.batches(); len(b) != 1 || len(b[0]) != len(ids) {
		t.Fatalf("batches = %v, want the %d keys in one", b, len(ids))
	}
	// Again, plus the disk the listing returned: all from the cache,
	// the absent one too.
	for _, id := range append(ids, "other") {
		v, err := lookup(t, vs, id)
		if err != nil {
			t.Fatal(err)
		}
		if (v == nil) != (id == "missing") {
			t.Errorf("%s: volume %+v", id, v)
		}
	}
	if n := len(src.batches()); n != 1 {
		t.Errorf("%d batches after cached lookups, want 1", n)
	}
}

func TestErrorsAreNotCached(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	src := &fakeSource{answer: func(keys []volumes.Key) (volumes.Answer, error) {
		if fail.Load() {
			return always(volumes.Result{Err: errors.New("timeout")})(keys)
		}
		return always(volumes.Result{Volume: &volumes.Volume{ID: "d", Region: "r"}})(keys)
	}}
	vs := volumes.New(src, volumes.Options{Driver: driverName(t), CacheTTL: time.Hour, Timeout: guard})
	if _, err := lookup(t, vs, "d"); err == nil {
		t.Fatal("no error")
	}
	fail.Store(false)
	if v, err := lookup(t, vs, "d"); err != nil || v == nil {
		t.Errorf("after the error cleared: %+v, %v", v, err)
	}
}

func TestLabels(t *testing.T) {
	tests := []struct {
		name string
		v    volumes.Volume
		want map[string]string
	}{
		{"zonal", volumes.Volume{Zones: []string{"eu-west-1a"}, Region: "eu-west-1"},
			map[string]string{v1.LabelTopologyZone: "eu-west-1a", v1.LabelTopologyRegion: "eu-west-1"}},
		// Sorted, as Kubernetes writes multi-zone labels, so the label
		// does not flap with the order the cloud lists replicas in.
		{"regional", volumes.Volume{Zones: []string{"us-central1-c", "us-central1-a"}, Region: "us-central1"},
			map[string]string{v1.LabelTopologyZone: "us-central1-a__us-central1-c", v1.LabelTopologyRegion: "us-central1"}},
		{"no zones", volumes.Volume{Region: "fra1"}, map[string]string{v1.LabelTopologyRegion: "fra1"}},
		{"nothing", volumes.Volume{}, map[string]string{}},
	}
	for _, tt := range tests {
		if got := tt.v.Labels(); !maps.Equal(got, tt.want) {
			t.Errorf("%s: Labels() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCSIHandle(t *testing.T) {
	pv := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-0123"},
	}}}
	if h, ok := volumes.CSIHandle(pv, "ebs.csi.aws.com"); !ok || h != "vol-0123" {
		t.Errorf("CSIHandle = %q, %v", h, ok)
	}
	if _, ok := volumes.CSIHandle(pv, "pd.csi.storage.gke.io"); ok {
		t.Error("another driver's PV was claimed")
	}
	if _, ok := volumes.CSIHandle(&v1.PersistentVolume{}, "ebs.csi.aws.com"); ok {
		t.Error("a PV without a CSI source was claimed")
	}
}
