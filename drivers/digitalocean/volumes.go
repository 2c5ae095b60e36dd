package digitalocean

import (
	"context"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/batch"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/volumes"
)

// CSIDriverDOBS is DigitalOcean's block storage CSI driver; its volume
// handles are volume UUIDs.
const CSIDriverDOBS = "dobs.csi.digitalocean.com"

// Volumes returns the disk lookups for volume labels.
func (c *Cloud) Volumes() volumes.Source { return c }

// VolumeKey claims CSI PVs of the DigitalOcean block storage driver (there
// never was an in-tree DigitalOcean volume source).
func (c *Cloud) VolumeKey(pv *v1.PersistentVolume) (volumes.Key, bool, error) {
	h, ok := volumes.CSIHandle(pv, CSIDriverDOBS)
	if !ok {
		return volumes.Key{}, false, nil
	}
	if !uuidRE.MatchString(h) {
		return volumes.Key{}, true, cloudapi.Invalid("%q is not a DigitalOcean volume ID (a UUID)", h)
	}
	return volumes.Key{ID: h}, true, nil
}

// LookupVolumes resolves a batch as droplets are, through core's listing:
// a GET per volume, or one paginated listing of every volume when that
// costs no more calls; a volume the listing lacked is confirmed with a GET
// before it is reported gone.
//
// DigitalOcean volumes live in a region and attach to any droplet there;
// there are no zones, so a volume has a region and no zone, which is also
// the one topology key the DigitalOcean CSI driver reports ("region").
func (c *Cloud) LookupVolumes(ctx context.Context, keys []volumes.Key) (volumes.Answer, error) {
	return c.volumeListing.Lookup(ctx, keys, toVolume)
}

// newVolumeListing is how core's listing reaches volumes.
func (c *Cloud) newVolumeListing() *volumes.Listing[string, *godo.Volume] {
	return &volumes.Listing[string, *godo.Volume]{
		Listing: batch.Listing[string, *godo.Volume]{
			IDOf: func(v *godo.Volume) string { return v.ID },
			Get: func(ctx context.Context, id string) (*godo.Volume, bool, error) {
				var v *godo.Volume
				err := c.api.Do(ctx, "volumes.get", func(ctx context.Context) error {
					var err error
					v, _, err = c.client.Storage.GetVolume(ctx, id)
					return err
				})
				if cloudapi.IsNotFound(err) {
					return nil, false, nil
				}
				return v, err == nil, err
			},
			List: c.listVolumes, PerPage: perPage, Concurrency: getConcurrency,
		},
		Parse: func(k volumes.Key) (string, error) {
			if !uuidRE.MatchString(k.ID) {
				return "", cloudapi.Invalid("%q is not a DigitalOcean volume ID", k.ID)
			}
			return k.ID, nil
		},
	}
}

// listVolumes pages through every volume of the account.
func (c *Cloud) listVolumes(ctx context.Context) ([]*godo.Volume, error) {
	var all []*godo.Volume
	seen := map[string]bool{}
	list := func(ctx context.Context, opt *godo.ListOptions) ([]godo.Volume, *godo.Response, error) {
		return c.client.Storage.ListVolumes(ctx, &godo.ListVolumeParams{ListOptions: opt})
	}
	err := pages(ctx, c, "volumes.list", list, func(page []godo.Volume, resp *godo.Response) bool {
		for _, v := range page {
			// Pages shift when volumes come and go mid-listing.
			if !seen[v.ID] {
				seen[v.ID] = true
				all = append(all, &v)
			}
		}
		return true
	})
	return all, err
}

func toVolume(v *godo.Volume) *volumes.Volume {
	out := &volumes.Volume{ID: v.ID}
	if v.Region != nil {
		out.Region = v.Region.Slug
	}
	return out
}
