package digitalocean

import (
	"context"
	"sync"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"

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

// LookupVolumes resolves a batch as droplets are: one paginated listing of
// every volume when that takes fewer calls than a GET each (or the volume
// count is not known yet), else a GET per volume. A volume the listing
// lacked is confirmed with a GET before it is reported gone.
//
// DigitalOcean volumes live in a region and attach to any droplet there;
// there are no zones, so a volume has a region and no zone, which is also
// the one topology key the DigitalOcean CSI driver reports ("region").
func (c *Cloud) LookupVolumes(ctx context.Context, keys []volumes.Key) (volumes.Answer, error) {
	results := make([]volumes.Result, len(keys))
	var ids []int // indexes of valid keys
	for i, k := range keys {
		if !uuidRE.MatchString(k.ID) {
			results[i].Err = cloudapi.Invalid("%q is not a DigitalOcean volume ID", k.ID)
			continue
		}
		ids = append(ids, i)
	}
	if len(ids) == 0 {
		return volumes.Answer{Results: results}, nil
	}
	pages := (int(c.lastVolumes.Load()) + perPage - 1) / perPage
	if pages > 0 && len(ids) < pages {
		c.getVolumes(ctx, keys, ids, results)
		return volumes.Answer{Results: results}, nil
	}
	all, err := c.listVolumes(ctx)
	if err != nil {
		return volumes.Answer{}, err
	}
	index := map[string]*godo.Volume{}
	for i := range all {
		index[all[i].ID] = &all[i]
	}
	var missing []int
	for _, i := range ids {
		if v, ok := index[keys[i].ID]; ok {
			results[i].Volume = toVolume(v)
		} else {
			missing = append(missing, i)
		}
	}
	c.getVolumes(ctx, keys, missing, results)
	seen := make([]volumes.Volume, 0, len(all))
	for i := range all {
		seen = append(seen, *toVolume(&all[i]))
	}
	return volumes.Answer{Results: results, Seen: seen}, nil
}

// getVolumes GETs the volumes of keys[i] for each i in idx: a 404 leaves
// the result empty (gone), other errors are the key's.
func (c *Cloud) getVolumes(ctx context.Context, keys []volumes.Key, idx []int, results []volumes.Result) {
	sem := make(chan struct{}, getConcurrency)
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var v *godo.Volume
			err := c.api.Do(ctx, "volumes.get", func(ctx context.Context) error {
				var err error
				v, _, err = c.client.Storage.GetVolume(ctx, keys[i].ID)
				return err
			})
			switch {
			case cloudapi.IsNotFound(err):
			case err != nil:
				results[i].Err = err
			default:
				results[i].Volume = toVolume(v)
			}
		}()
	}
	wg.Wait()
}

// listVolumes pages through every volume of the account.
func (c *Cloud) listVolumes(ctx context.Context) ([]godo.Volume, error) {
	var all []godo.Volume
	seen := map[string]bool{}
	list := func(ctx context.Context, opt *godo.ListOptions) ([]godo.Volume, *godo.Response, error) {
		return c.client.Storage.ListVolumes(ctx, &godo.ListVolumeParams{ListOptions: opt})
	}
	err := pages(ctx, c, "volumes.list", list, func(page []godo.Volume, resp *godo.Response) bool {
		for _, v := range page {
			// Pages shift when volumes come and go mid-listing.
			if !seen[v.ID] {
				seen[v.ID] = true
				all = append(all, v)
			}
		}
		if resp.Meta != nil {
			c.lastVolumes.Store(int64(resp.Meta.Total))
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
