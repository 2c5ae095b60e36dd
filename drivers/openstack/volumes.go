package openstack

import (
	"context"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	corevolumes "github.com/polyccm/polyccm/core/volumes"
)

// CSIDriver is the Cinder CSI driver; its volume handles are volume IDs.
const CSIDriver = "cinder.csi.openstack.org"

// Volumes returns the disk lookups for volume labels.
func (c *Cloud) Volumes() corevolumes.Source { return c }

// VolumeKey claims in-tree Cinder PVs and the Cinder CSI driver's.
func (c *Cloud) VolumeKey(pv *v1.PersistentVolume) (corevolumes.Key, bool, error) {
	id := ""
	if pv.Spec.Cinder != nil {
		id = pv.Spec.Cinder.VolumeID
	} else if h, ok := corevolumes.CSIHandle(pv, CSIDriver); ok {
		id = h
	} else {
		return corevolumes.Key{}, false, nil
	}
	if !uuidRE.MatchString(id) {
		return corevolumes.Key{}, true, cloudapi.Invalid("%q is not a Cinder volume ID (a UUID)", id)
	}
	return corevolumes.Key{ID: id}, true, nil
}

// LookupVolumes resolves a batch through core's listing: a GET per volume,
// or one paged /volumes/detail listing when that costs no more calls; a
// volume the listing lacked is confirmed with a GET before it is gone. A
// volume's zone is its availability zone, sanitized as a Node's is, so the
// scheduler's zone check matches the Nodes where Nova's and Cinder's zones
// have the same names; its region is drivers.openstack.region.
func (c *Cloud) LookupVolumes(ctx context.Context, keys []corevolumes.Key) (corevolumes.Answer, error) {
	return c.volumeListing.Lookup(ctx, keys, c.toVolume)
}

func (c *Cloud) newVolumeListing() *corevolumes.Listing[string, *volumes.Volume] {
	l := &corevolumes.Listing[string, *volumes.Volume]{
		Parse: func(k corevolumes.Key) (string, error) {
			if !uuidRE.MatchString(k.ID) {
				return "", cloudapi.Invalid("%q is not a Cinder volume ID", k.ID)
			}
			return k.ID, nil
		},
	}
	l.Listing.IDOf = func(v *volumes.Volume) string { return v.ID }
	l.Get = func(ctx context.Context, id string) (*volumes.Volume, bool, error) {
		cl, err := c.session(ctx)
		if err != nil {
			return nil, false, err
		}
		bs, err := cl.blockStorage()
		if err != nil {
			return nil, false, err
		}
		var v *volumes.Volume
		err = c.api.Do(ctx, "volume.volumes.get", func(ctx context.Context) error {
			v, err = volumes.Get(ctx, bs, id).Extract()
			return err
		})
		if cloudapi.IsNotFound(err) {
			return nil, false, nil
		}
		return v, err == nil, err
	}
	l.List, l.PerPage, l.Concurrency = c.listVolumes, pageSize, getConcurrency
	return l
}

// listVolumes pages through the project's volumes.
func (c *Cloud) listVolumes(ctx context.Context) ([]*volumes.Volume, error) {
	cl, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	bs, err := cl.blockStorage()
	if err != nil {
		return nil, err
	}
	var all []*volumes.Volume
	seen := map[string]bool{}
	opts := volumes.ListOpts{Limit: pageSize}
	for {
		var page []volumes.Volume
		var next string
		if err := c.api.Do(ctx, "volume.volumes.list", func(ctx context.Context) error {
			page, next, err = onePage(ctx, volumes.List(bs, opts), volumes.ExtractVolumes)
			return err
		}); err != nil {
			return nil, err
		}
		for _, v := range page {
			// Pages shift when volumes come and go mid-listing.
			if !seen[v.ID] {
				seen[v.ID] = true
				all = append(all, &v)
			}
		}
		if next == "" || len(page) == 0 {
			break
		}
		opts.Marker = page[len(page)-1].ID
	}
	return all, nil
}

func (c *Cloud) toVolume(v *volumes.Volume) *corevolumes.Volume {
	out := &corevolumes.Volume{ID: v.ID, Region: c.cfg.Region}
	if z := sanitizeLabel(v.AvailabilityZone); z != "" {
		out.Zones = []string{z}
	}
	return out
}
