package gce

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/volumes"
)

// CSIDriverPD is the Compute Engine persistent disk CSI driver's name. Its
// volume handles are projects/<p>/zones/<z>/disks/<name> for zonal disks
// and projects/<p>/regions/<r>/disks/<name> for regional ones.
const CSIDriverPD = "pd.csi.storage.gke.io"

// Volumes returns the disk lookups for volume labels.
func (c *Cloud) Volumes() volumes.Source { return c }

// diskRef is a disk by location: zone or region set, or neither for a bare
// name (an in-tree PV), which is looked for across the project.
type diskRef struct{ project, zone, region, name string }

func (r diskRef) id() string {
	switch {
	case r.zone != "":
		return "projects/" + r.project + "/zones/" + r.zone + "/disks/" + r.name
	case r.region != "":
		return "projects/" + r.project + "/regions/" + r.region + "/disks/" + r.name
	}
	return r.name
}

// parseDiskID reads a key made by VolumeKey.
func parseDiskID(id string) (diskRef, error) {
	if gceNameRE.MatchString(id) && len(id) <= 63 {
		return diskRef{name: id}, nil
	}
	p := strings.Split(id, "/")
	if len(p) == 6 && p[0] == "projects" && p[1] != "" && p[4] == "disks" && gceNameRE.MatchString(p[5]) && p[3] != "" {
		switch p[2] {
		case "zones":
			return diskRef{project: p[1], zone: p[3], name: p[5]}, nil
		case "regions":
			return diskRef{project: p[1], region: p[3], name: p[5]}, nil
		}
	}
	return diskRef{}, cloudapi.Invalid("%q is not a Compute Engine disk (want projects/<project>/zones/<zone>/disks/<name>, projects/<project>/regions/<region>/disks/<name> or a disk name)", id)
}

// VolumeKey claims in-tree gcePersistentDisk PVs (a bare disk name, found
// in the configured project) and CSI PVs of the PD driver (a disk path).
func (c *Cloud) VolumeKey(pv *v1.PersistentVolume) (volumes.Key, bool, error) {
	var id string
	if pd := pv.Spec.GCEPersistentDisk; pd != nil {
		id = pd.PDName
		if !gceNameRE.MatchString(id) || len(id) > 63 {
			return volumes.Key{}, true, cloudapi.Invalid("%q is not a Compute Engine disk name", id)
		}
	} else if h, ok := volumes.CSIHandle(pv, CSIDriverPD); ok {
		id = h
	} else {
		return volumes.Key{}, false, nil
	}
	if _, err := parseDiskID(id); err != nil {
		return volumes.Key{}, true, err
	}
	return volumes.Key{ID: id}, true, nil
}

// LookupVolumes resolves a batch with list calls filtered on the disks'
// names: per project and zone for zonal disks, per project and region for
// regional ones, and one aggregated list of the project for bare names. A
// zonal or regional disk the lists did not return is confirmed with a get
// before it is reported gone.
func (c *Cloud) LookupVolumes(ctx context.Context, keys []volumes.Key) (volumes.Answer, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return volumes.Answer{}, err
	}
	results := make([]volumes.Result, len(keys))
	located := map[diskRef][]int{}
	bare := map[string][]int{}
	for i, k := range keys {
		ref, err := parseDiskID(k.ID)
		switch {
		case err != nil:
			results[i].Err = err
		case ref.zone == "" && ref.region == "":
			bare[ref.name] = append(bare[ref.name], i)
		default:
			located[ref] = append(located[ref], i)
		}
	}

	// Per scope (a project's zone or region), the named disks.
	type scope struct{ project, zone, region string }
	scopes := map[scope][]string{}
	for ref := range located {
		s := scope{ref.project, ref.zone, ref.region}
		scopes[s] = append(scopes[s], ref.name)
	}
	found := map[diskRef]*volumes.Volume{}
	refused := map[scope]error{}
scopes:
	for s, names := range scopes {
		sort.Strings(names)
		for chunk := range slices.Chunk(names, nameChunk) {
			disks, err := c.listDisks(ctx, cl, s.project, s.zone, s.region, nameFilter(chunk))
			if k := cloudapi.KindOf(err); k == cloudapi.KindInvalid || k == cloudapi.KindNotFound {
				// An unknown zone or project in a PV fails its own keys,
				// not the batch; %v: never "not found" for the disks.
				refused[s] = fmt.Errorf("listing the disks of %s: %v", strings.Trim(s.project+"/"+s.zone+s.region, "/"), err)
				continue scopes
			}
			if err != nil {
				return volumes.Answer{}, err
			}
			for _, d := range disks {
				ref := diskRef{project: s.project, zone: s.zone, region: s.region, name: d.GetName()}
				found[ref] = toVolume(ref, d)
			}
		}
	}

	// In-tree PVs: by name, in any zone or region of the project.
	var byName map[string][]*volumes.Volume
	if len(bare) > 0 {
		env, err := c.environ(ctx)
		if err != nil {
			return volumes.Answer{}, err
		}
		names := make([]string, 0, len(bare))
		for n := range bare {
			names = append(names, n)
		}
		sort.Strings(names)
		byName = map[string][]*volumes.Volume{}
		for chunk := range slices.Chunk(names, nameChunk) {
			got, err := c.listDisksAggregated(ctx, cl, env.project, nameFilter(chunk))
			if err != nil {
				return volumes.Answer{}, err
			}
			for _, v := range got {
				name := v.ID[strings.LastIndexByte(v.ID, '/')+1:]
				byName[name] = append(byName[name], v)
			}
		}
	}

	var seen []volumes.Volume
	for _, v := range found {
		seen = append(seen, *v)
	}
	for ref, idx := range located {
		var r volumes.Result
		if err := refused[scope{ref.project, ref.zone, ref.region}]; err != nil {
			r.Err = err
		} else if v, ok := found[ref]; ok {
			r.Volume = v
		} else {
			r.Volume, r.Err = c.confirmDisk(ctx, cl, ref)
		}
		for _, i := range idx {
			results[i] = r
		}
	}
	for name, idx := range bare {
		var r volumes.Result
		switch vs := byName[name]; len(vs) {
		case 0: // no disk of that name anywhere in the project
		case 1:
			r.Volume = vs[0]
			seen = append(seen, *vs[0])
		default:
			var ids []string
			for _, v := range vs {
				ids = append(ids, v.ID)
			}
			sort.Strings(ids)
			r.Err = fmt.Errorf("disks named %q exist in several places (%s); use a CSI PV whose volumeHandle says which", name, strings.Join(ids, ", "))
		}
		for _, i := range idx {
			results[i] = r
		}
	}
	return volumes.Answer{Results: results, Seen: seen}, nil
}

// listDisks lists a zone's disks (zone set) or a region's (region set).
func (c *Cloud) listDisks(ctx context.Context, cl *clients, project, zone, region, filter string) ([]*computepb.Disk, error) {
	if zone != "" {
		return pages(ctx, c, "disks.list", func(ctx context.Context, token string) ([]*computepb.Disk, string, error) {
			it := cl.disks.List(ctx, &computepb.ListDisksRequest{Project: project, Zone: zone, Filter: proto.String(filter)})
			return nextPage[*computepb.Disk](it, token)
		})
	}
	return pages(ctx, c, "regionDisks.list", func(ctx context.Context, token string) ([]*computepb.Disk, string, error) {
		it := cl.regionDisks.List(ctx, &computepb.ListRegionDisksRequest{Project: project, Region: region, Filter: proto.String(filter)})
		return nextPage[*computepb.Disk](it, token)
	})
}

// listDisksAggregated lists the project's disks in every zone and region.
func (c *Cloud) listDisksAggregated(ctx context.Context, cl *clients, project, filter string) ([]*volumes.Volume, error) {
	pairs, err := pages(ctx, c, "disks.aggregatedList", func(ctx context.Context, token string) ([]compute.DisksScopedListPair, string, error) {
		it := cl.disks.AggregatedList(ctx, &computepb.AggregatedListDisksRequest{Project: project, Filter: proto.String(filter)})
		return nextPage[compute.DisksScopedListPair](it, token)
	})
	if err != nil {
		return nil, err
	}
	var out []*volumes.Volume
	for _, p := range pairs {
		ref := diskRef{project: project}
		switch {
		case strings.HasPrefix(p.Key, "zones/"):
			ref.zone = strings.TrimPrefix(p.Key, "zones/")
		case strings.HasPrefix(p.Key, "regions/"):
			ref.region = strings.TrimPrefix(p.Key, "regions/")
		default:
			continue
		}
		for _, d := range p.Value.GetDisks() {
			ref.name = d.GetName()
			out = append(out, toVolume(ref, d))
		}
	}
	return out, nil
}

// confirmDisk asks for one disk: (nil, nil) only on a 404.
func (c *Cloud) confirmDisk(ctx context.Context, cl *clients, ref diskRef) (*volumes.Volume, error) {
	var d *computepb.Disk
	var err error
	if ref.zone != "" {
		d, err = call(ctx, c, "disks.get", func(ctx context.Context) (*computepb.Disk, error) {
			return cl.disks.Get(ctx, &computepb.GetDiskRequest{Project: ref.project, Zone: ref.zone, Disk: ref.name})
		})
	} else {
		d, err = call(ctx, c, "regionDisks.get", func(ctx context.Context) (*computepb.Disk, error) {
			return cl.regionDisks.Get(ctx, &computepb.GetRegionDiskRequest{Project: ref.project, Region: ref.region, Disk: ref.name})
		})
	}
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return toVolume(ref, d), nil
}

// toVolume: a zonal disk is in its zone; a regional one in each of its
// replica zones.
func toVolume(ref diskRef, d *computepb.Disk) *volumes.Volume {
	v := &volumes.Volume{ID: ref.id()}
	if ref.zone != "" {
		v.Zones = []string{ref.zone}
		v.Region = regionOf(ref.zone)
		return v
	}
	v.Region = ref.region
	for _, z := range d.GetReplicaZones() {
		v.Zones = append(v.Zones, lastSegment(z))
	}
	return v
}
