// Package volumes answers "where is this disk?" for every driver: the zone
// and region of the cloud disk behind a PersistentVolume. Like instances,
// the questions are answered from a short-lived cache or coalesced into
// batch lookups against the driver's Source, so a few hundred PVs seen at
// start cost a few cloud calls, not one each.
package volumes

import (
	"context"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/batch"
	"github.com/polyccm/polyccm/core/cloudapi"
)

// Key names one cloud disk in the driver's own terms: an EBS volume ID, a
// Compute Engine disk path (or a bare disk name), a DigitalOcean volume
// UUID. Only the driver that made a Key reads it.
type Key struct {
	ID string
}

func (k Key) String() string { return k.ID }

// Volume is where a disk lives.
type Volume struct {
	// ID is the disk's canonical Key ID, under which a disk a listing
	// happened to return (Answer.Seen) is cached.
	ID string
	// Zones the disk can be attached in: one for a zonal disk, two for a
	// regional (replicated) one, none on a cloud without zones.
	Zones  []string
	Region string
}

// Labels are the topology labels the disk's PersistentVolume should carry:
// the zone (several zones joined by "__", which the scheduler's VolumeZone
// filter reads as "any of these", as Kubernetes writes them for
// multi-zone volumes) and the region. A label the cloud has no value for
// is absent.
func (v *Volume) Labels() map[string]string {
	out := map[string]string{}
	if len(v.Zones) > 0 {
		zones := slices.Clone(v.Zones)
		slices.Sort(zones)
		out[v1.LabelTopologyZone] = strings.Join(slices.Compact(zones), "__")
	}
	if v.Region != "" {
		out[v1.LabelTopologyRegion] = v.Region
	}
	return out
}

// Result answers one Key. Volume nil with Err nil means the cloud says
// definitively that there is no such disk.
type Result struct {
	Volume *Volume
	Err    error
}

// Answer is a driver's reply to a batch lookup.
type Answer struct {
	// Results is aligned with the keys asked for.
	Results []Result
	// Seen lists other disks the call happened to return (a listing
	// returns whole pages); they are cached under their ID.
	Seen []Volume
}

// Source is what a driver implements for volume labels.
type Source interface {
	// VolumeKey says which of the cloud's disks backs pv. ok is false for
	// a PV that is none of this cloud's business (another cloud's CSI
	// driver, NFS, local volumes); err is set, with ok true, for one that
	// is (its in-tree source or CSI driver is this cloud's) but does not
	// name a disk in a form the cloud knows.
	VolumeKey(pv *v1.PersistentVolume) (key Key, ok bool, err error)
	// LookupVolumes resolves many keys in as few cloud calls as it can.
	// A returned error fails the whole batch and is ambiguous. A key the
	// driver cannot resolve for sure gets a Result with Err set, never
	// Volume == nil.
	LookupVolumes(ctx context.Context, keys []Key) (Answer, error)
}

// Options configure batching and caching.
type Options struct {
	Driver      string
	BatchWindow time.Duration
	BatchSize   int
	CacheTTL    time.Duration
	// Timeout bounds a whole batched lookup, as instances.Options.Timeout.
	Timeout time.Duration
}

// Volumes is the batched, cached volume lookup for one driver.
type Volumes struct {
	driver string
	src    Source
	lookup *batch.Lookup[Key, *Volume]
}

// New returns Volumes over src.
func New(src Source, o Options) *Volumes {
	return &Volumes{
		driver: o.Driver,
		src:    src,
		lookup: batch.NewLookup(sourceOf(src), batch.LookupOptions[Key, *Volume]{
			Driver: o.Driver,
			Kind:   "volume",
			Batch: batch.Options{
				Window:  o.BatchWindow,
				MaxSize: o.BatchSize,
				Timeout: o.Timeout,
			},
			CacheTTL:   o.CacheTTL,
			IsNotFound: cloudapi.IsNotFound,
			// A disk a listing returned is cached under its canonical ID;
			// an answer only under the key asked for, as the driver may
			// spell a disk in several ways.
			Keys: func(v *Volume) []Key {
				if v == nil {
					return nil
				}
				return []Key{{ID: v.ID}}
			},
			Metrics: "volumes",
		}),
	}
}

// sourceOf adapts src to the shape batch.Lookup asks for.
func sourceOf(src Source) batch.Source[Key, *Volume] {
	return func(ctx context.Context, keys []Key) (batch.Answer[*Volume], error) {
		ans, err := src.LookupVolumes(ctx, keys)
		result := func(i int) (*Volume, error) { return ans.Results[i].Volume, ans.Results[i].Err }
		return batch.AnswerOf(len(ans.Results), result, ans.Seen), err
	}
}

// Driver is the name of the driver the lookups go to.
func (vs *Volumes) Driver() string { return vs.driver }

// KeyOf is the driver's VolumeKey.
func (vs *Volumes) KeyOf(pv *v1.PersistentVolume) (Key, bool, error) { return vs.src.VolumeKey(pv) }

// Lookup returns the disk behind key; (nil, nil) means it definitively does
// not exist.
func (vs *Volumes) Lookup(ctx context.Context, key Key) (*Volume, error) {
	return vs.lookup.Get(ctx, key)
}

// CSIHandle returns the volume handle of a CSI PV of the named CSI driver.
func CSIHandle(pv *v1.PersistentVolume, csiDriver string) (string, bool) {
	csi := pv.Spec.CSI
	if csi == nil || csi.Driver != csiDriver {
		return "", false
	}
	return csi.VolumeHandle, true
}
