package hetzner

import (
	"context"
	"strconv"
	"sync"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"

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

// LookupVolumes resolves a batch as servers are: one paged listing when
// that takes fewer calls than a GET each (or the volume count is not
// known yet), else a GET per volume. A volume the listing lacked is
// confirmed with a GET before it is reported gone.
//
// A volume lives in a location and attaches to servers there. Its PV gets
// the labels a Node in that location gets: region the location, zone its
// legacy datacenter (unless instances.zoneLabel is off), so the
// scheduler's zone and region checks match the Nodes.
func (c *Cloud) LookupVolumes(ctx context.Context, keys []volumes.Key) (volumes.Answer, error) {
	results := make([]volumes.Result, len(keys))
	var idx []int
	for i, k := range keys {
		if id, err := strconv.ParseInt(k.ID, 10, 64); err != nil || id <= 0 {
			results[i].Err = cloudapi.Invalid("%q is not a Hetzner Cloud volume ID", k.ID)
			continue
		}
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return volumes.Answer{Results: results}, nil
	}
	pageCount := (int(c.lastVolumes.Load()) + perPage - 1) / perPage
	if pageCount > 0 && len(idx) < pageCount {
		c.getVolumes(ctx, keys, idx, results)
		return volumes.Answer{Results: results}, nil
	}
	all, err := c.listVolumes(ctx)
	if err != nil {
		return volumes.Answer{}, err
	}
	index := make(map[string]*hcloud.Volume, len(all))
	for _, v := range all {
		index[strconv.FormatInt(v.ID, 10)] = v
	}
	var missing []int
	for _, i := range idx {
		if v, ok := index[keys[i].ID]; ok {
			results[i].Volume = c.toVolume(v)
		} else {
			missing = append(missing, i)
		}
	}
	c.getVolumes(ctx, keys, missing, results)
	seen := make([]volumes.Volume, 0, len(all))
	for _, v := range all {
		seen = append(seen, *c.toVolume(v))
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
			id, _ := strconv.ParseInt(keys[i].ID, 10, 64)
			var v *hcloud.Volume
			err := c.api.Do(ctx, "volumes.get", func(ctx context.Context) error {
				var err error
				v, _, err = c.client.Volume.GetByID(ctx, id)
				return err
			})
			switch {
			case err != nil:
				results[i].Err = err
			case v != nil:
				results[i].Volume = c.toVolume(v)
			}
		}()
	}
	wg.Wait()
}

// listVolumes pages through every volume of the project.
func (c *Cloud) listVolumes(ctx context.Context) ([]*hcloud.Volume, error) {
	var all []*hcloud.Volume
	seen := map[int64]bool{}
	total, err := pages(ctx, c, "volumes.list", func(ctx context.Context, o hcloud.ListOpts) ([]*hcloud.Volume, *hcloud.Response, error) {
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
	if err == nil {
		c.lastVolumes.Store(int64(max(total, len(all))))
	}
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
