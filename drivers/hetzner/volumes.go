package hetzner

import (
	"context"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/batch"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/volumes"
)

// CSIDriver is the Hetzner Cloud CSI driver; its volume handles are
// volume IDs.
const CSIDriver = "csi.hetzner.cloud"

// Volumes returns the disk lookups for volume labels.
func (c *Cloud) Volumes() volumes.Source { return c }

// VolumeKey claims CSI PVs of the Hetzner Cloud CSI driver (there never
// was an in-tree Hetzner volume source).
func (c *Cloud) VolumeKey(pv *v1.PersistentVolume) (volumes.Key, bool, error) {
	h, ok := volumes.CSIHandle(pv, CSIDriver)
	if !ok {
		return volumes.Key{}, false, nil
	}
	if id, err := strconv.ParseInt(h, 10, 64); err != nil || id <= 0 {
		return volumes.Key{}, true, cloudapi.Invalid("%q is not a Hetzner Cloud volume ID (a number)", h)
	}
	return volumes.Key{ID: h}, true, nil
}

// LookupVolumes resolves a batch as servers are, through core's listing:
// a GET per volume, or one paged listing when that costs no more calls; a
// volume the listing lacked is confirmed with a GET before it is gone.
//
// A volume lives in a location and attaches to servers there. Its PV gets
// the labels a Node in that location gets: region the location, zone its
// legacy datacenter (unless instances.zoneLabel is off), so the
// scheduler's zone and region checks match the Nodes.
func (c *Cloud) LookupVolumes(ctx context.Context, keys []volumes.Key) (volumes.Answer, error) {
	return c.volumeListing.Lookup(ctx, keys, c.toVolume)
}

// newVolumeListing is how core's listing reaches volumes.
func (c *Cloud) newVolumeListing() *volumes.Listing[int64, *hcloud.Volume] {
	return &volumes.Listing[int64, *hcloud.Volume]{
		Listing: batch.Listing[int64, *hcloud.Volume]{
			IDOf: func(v *hcloud.Volume) int64 { return v.ID },
			Get: func(ctx context.Context, id int64) (*hcloud.Volume, bool, error) {
				var v *hcloud.Volume
				err := c.api.Do(ctx, "volumes.get", func(ctx context.Context) error {
					var err error
					// hcloud-go answers nil, nil exactly on a 404 not_found.
					v, _, err = c.client.Volume.GetByID(ctx, id)
					return err
				})
				return v, v != nil, err
			},
			List: c.listVolumes, PerPage: perPage, Concurrency: getConcurrency,
		},
		Parse: func(k volumes.Key) (int64, error) {
			id, err := strconv.ParseInt(k.ID, 10, 64)
			if err != nil || id <= 0 {
				return 0, cloudapi.Invalid("%q is not a Hetzner Cloud volume ID", k.ID)
			}
			return id, nil
		},
	}
}

// listVolumes pages through every volume of the project.
func (c *Cloud) listVolumes(ctx context.Context) ([]*hcloud.Volume, error) {
	var all []*hcloud.Volume
	seen := map[int64]bool{}
	_, err := pages(ctx, c, "volumes.list", func(ctx context.Context, o hcloud.ListOpts) ([]*hcloud.Volume, *hcloud.Response, error) {
		return c.client.Volume.List(ctx, hcloud.VolumeListOpts{ListOpts: o})
	}, func(page []*hcloud.Volume) bool {
		for _, v := range page {
			if !seen[v.ID] {
				seen[v.ID] = true
				all = append(all, v)
			}
		}
		return true
	})
	return all, err
}

func (c *Cloud) toVolume(v *hcloud.Volume) *volumes.Volume {
	out := &volumes.Volume{ID: strconv.FormatInt(v.ID, 10)}
	if v.Location != nil {
		out.Region = v.Location.Name
		if c.cfg.Instances.ZoneLabel {
			out.Zones = []string{legacyDatacenter(v.Location.Name)}
		}
	}
	return out
}
