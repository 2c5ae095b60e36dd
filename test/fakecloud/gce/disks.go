package gce

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"time"
)

// Disk is a persistent disk, as the helpers take and give it: zonal, or
// regional (replicated in two zones of a region) when Region is set.
type Disk struct {
	ID   uint64
	Name string
	Zone string // zone name of a zonal disk; default DefaultZone
	// Region and ReplicaZones (zone names) make a regional disk, which
	// has no Zone.
	Region       string
	ReplicaZones []string
	SizeGB       int64  // default 10
	Type         string // disk type name; default "pd-balanced"
	Status       string // CREATING, READY (default), FAILED, DELETING, RESTORING, UNAVAILABLE
	// Users are the names of the instances (in the disk's zone, or a
	// regional disk's first replica zone) it is attached to.
	Users             []string
	Labels            map[string]string
	CreationTimestamp time.Time
}

func (d Disk) clone() Disk {
	d.Users = slices.Clone(d.Users)
	d.ReplicaZones = slices.Clone(d.ReplicaZones)
	d.Labels = maps.Clone(d.Labels)
	return d
}

type diskState struct {
	Disk
}

// AddDisk stores a disk and returns it as stored. It panics if the disk
// exists, its zone or region is unknown, or a regional disk does not have
// two replica zones in its region.
func (s *Server) AddDisk(d Disk) Disk {
	s.mu.Lock()
	defer s.mu.Unlock()
	d = d.clone()
	if d.Name == "" {
		panic("gce fake: disk needs a name")
	}
	var path string
	if d.Region != "" {
		if s.regions[d.Region] == nil || d.Zone != "" || len(d.ReplicaZones) != 2 {
			panic(fmt.Sprintf("gce fake: regional disk %s needs a known region and two replica zones, no zone", d.Name))
		}
		for _, z := range d.ReplicaZones {
			if s.zones[z] == nil || s.zones[z].Region != d.Region {
				panic(fmt.Sprintf("gce fake: replica zone %q is not in region %s", z, d.Region))
			}
		}
		path = s.regionalPath(d.Region, "disks", d.Name)
	} else {
		d.Zone = cmp.Or(d.Zone, DefaultZone)
		if s.zones[d.Zone] == nil {
			panic(fmt.Sprintf("gce fake: no zone %q", d.Zone))
		}
		path = s.zonalPath(d.Zone, "disks", d.Name)
	}
	if s.disks[path] != nil {
		panic(fmt.Sprintf("gce fake: disk %s already exists", path))
	}
	d.SizeGB = cmp.Or(d.SizeGB, 10)
	d.Type = cmp.Or(d.Type, "pd-balanced")
	d.Status = cmp.Or(d.Status, "READY")
	if d.ID == 0 {
		d.ID = s.newIDLocked()
	}
	if d.CreationTimestamp.IsZero() {
		d.CreationTimestamp = s.now()
	}
	s.disks[path] = &diskState{Disk: d}
	s.countCreateLocked("disks")
	return d.clone()
}

// Disk returns a disk.
func (s *Server) Disk(zone, name string) (Disk, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.disks[s.zonalPath(zone, "disks", name)]
	if d == nil {
		return Disk{}, false
	}
	return d.clone(), true
}

// RemoveDisk deletes a disk, reporting whether it existed.
func (s *Server) RemoveDisk(zone, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.zonalPath(zone, "disks", name)
	if s.disks[path] == nil {
		return false
	}
	delete(s.disks, path)
	s.countDeleteLocked("disks")
	return true
}

type diskJSON struct {
	Kind                   string            `json:"kind"`
	ID                     uint64            `json:"id,string"`
	CreationTimestamp      string            `json:"creationTimestamp"`
	Name                   string            `json:"name"`
	SizeGB                 int64             `json:"sizeGb,string"`
	Zone                   string            `json:"zone,omitempty"`
	Region                 string            `json:"region,omitempty"`
	ReplicaZones           []string          `json:"replicaZones,omitempty"`
	Status                 string            `json:"status"`
	SelfLink               string            `json:"selfLink"`
	Type                   string            `json:"type"`
	Users                  []string          `json:"users,omitempty"`
	Labels                 map[string]string `json:"labels,omitempty"`
	LabelFingerprint       string            `json:"labelFingerprint"`
	PhysicalBlockSizeBytes int64             `json:"physicalBlockSizeBytes,string"`
	AccessMode             string            `json:"accessMode"`
}

func (s *Server) diskJSONLocked(base string, d *diskState) diskJSON {
	userZone := d.Zone
	if d.Region != "" {
		userZone = d.ReplicaZones[0]
	}
	var users []string
	for _, u := range d.Users {
		users = append(users, link(base, s.zonalPath(userZone, "instances", u)))
	}
	out := diskJSON{
		Kind:                   "compute#disk",
		ID:                     d.ID,
		CreationTimestamp:      timestamp(d.CreationTimestamp),
		Name:                   d.Name,
		SizeGB:                 d.SizeGB,
		Status:                 d.Status,
		Users:                  users,
		Labels:                 maps.Clone(d.Labels),
		LabelFingerprint:       labelFingerprint(d.Labels),
		PhysicalBlockSizeBytes: 4096,
		AccessMode:             "READ_WRITE_SINGLE",
	}
	if d.Region != "" {
		out.Region = link(base, s.regionPath(d.Region))
		for _, z := range d.ReplicaZones {
			out.ReplicaZones = append(out.ReplicaZones, link(base, s.zonePath(z)))
		}
		out.SelfLink = link(base, s.regionalPath(d.Region, "disks", d.Name))
		out.Type = link(base, s.regionalPath(d.Region, "diskTypes", d.Type))
		return out
	}
	out.Zone = link(base, s.zonePath(d.Zone))
	out.SelfLink = link(base, s.zonalPath(d.Zone, "disks", d.Name))
	out.Type = link(base, s.zonalPath(d.Zone, "diskTypes", d.Type))
	return out
}

func (s *Server) registerDisks() {
	s.handle("GET", "projects/{project}/zones/{zone}/disks", func(c *call) (int, any) {
		var items []listItem
		for _, d := range s.disks {
			if d.Zone == c.p["zone"] {
				items = append(items, listItem{name: d.Name, created: d.CreationTimestamp, doc: s.diskJSONLocked(c.base, d)})
			}
		}
		return s.listResponse(c, "compute#diskList", "projects/"+s.project+"/zones/"+c.p["zone"]+"/disks", items)
	})
	s.handle("GET", "projects/{project}/zones/{zone}/disks/{disk}", func(c *call) (int, any) {
		path := s.zonalPath(c.p["zone"], "disks", c.p["disk"])
		d := s.disks[path]
		if d == nil {
			return errNotFound(path)
		}
		return http.StatusOK, s.diskJSONLocked(c.base, d)
	})
	s.handle("GET", "projects/{project}/regions/{region}/disks", func(c *call) (int, any) {
		var items []listItem
		for _, d := range s.disks {
			if d.Region == c.p["region"] {
				items = append(items, listItem{name: d.Name, created: d.CreationTimestamp, doc: s.diskJSONLocked(c.base, d)})
			}
		}
		return s.listResponse(c, "compute#diskList", "projects/"+s.project+"/regions/"+c.p["region"]+"/disks", items)
	})
	s.handle("GET", "projects/{project}/regions/{region}/disks/{disk}", func(c *call) (int, any) {
		path := s.regionalPath(c.p["region"], "disks", c.p["disk"])
		d := s.disks[path]
		if d == nil {
			return errNotFound(path)
		}
		return http.StatusOK, s.diskJSONLocked(c.base, d)
	})
	// Zonal and regional disks alike, as the API lists them: every zone
	// and region is a scope.
	s.handle("GET", "projects/{project}/aggregated/disks", func(c *call) (int, any) {
		var items []listItem
		for _, d := range s.disks {
			scope := "zones/" + d.Zone
			if d.Region != "" {
				scope = "regions/" + d.Region
			}
			items = append(items, listItem{scope: scope, name: d.Name, created: d.CreationTimestamp, doc: s.diskJSONLocked(c.base, d)})
		}
		scopes := append(s.zoneScopesLocked(), s.regionScopesLocked()...)
		sort.Strings(scopes)
		return s.aggregatedResponse(c, "compute#diskAggregatedList", "disks", "disks", scopes, items)
	})
}
