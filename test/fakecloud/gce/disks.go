package gce

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

// Disk is a zonal persistent disk, as the helpers take and give it.
type Disk struct {
	ID     uint64
	Name   string
	Zone   string // zone name; default DefaultZone
	SizeGB int64  // default 10
	Type   string // disk type name; default "pd-balanced"
	Status string // CREATING, READY (default), FAILED, DELETING, RESTORING, UNAVAILABLE
	// Users are the names of the instances (in the disk's zone) it is
	// attached to.
	Users             []string
	Labels            map[string]string
	CreationTimestamp time.Time
}

func (d Disk) clone() Disk {
	d.Users = slices.Clone(d.Users)
	d.Labels = maps.Clone(d.Labels)
	return d
}

type diskState struct {
	Disk
}

// AddDisk stores a disk and returns it as stored. It panics if the disk
// exists or the zone is unknown.
func (s *Server) AddDisk(d Disk) Disk {
	s.mu.Lock()
	defer s.mu.Unlock()
	d = d.clone()
	d.Zone = cmpOr(d.Zone, DefaultZone)
	if s.zones[d.Zone] == nil {
		panic(fmt.Sprintf("gce fake: no zone %q", d.Zone))
	}
	if d.Name == "" {
		panic("gce fake: disk needs a name")
	}
	path := s.zonalPath(d.Zone, "disks", d.Name)
	if s.disks[path] != nil {
		panic(fmt.Sprintf("gce fake: disk %s already exists", path))
	}
	d.SizeGB = cmpOr(d.SizeGB, 10)
	d.Type = cmpOr(d.Type, "pd-balanced")
	d.Status = cmpOr(d.Status, "READY")
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
	Zone                   string            `json:"zone"`
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
	var users []string
	for _, u := range d.Users {
		users = append(users, link(base, s.zonalPath(d.Zone, "instances", u)))
	}
	return diskJSON{
		Kind:                   "compute#disk",
		ID:                     d.ID,
		CreationTimestamp:      timestamp(d.CreationTimestamp),
		Name:                   d.Name,
		SizeGB:                 d.SizeGB,
		Zone:                   link(base, s.zonePath(d.Zone)),
		Status:                 d.Status,
		SelfLink:               link(base, s.zonalPath(d.Zone, "disks", d.Name)),
		Type:                   link(base, s.zonalPath(d.Zone, "diskTypes", d.Type)),
		Users:                  users,
		Labels:                 maps.Clone(d.Labels),
		LabelFingerprint:       labelFingerprint(d.Labels),
		PhysicalBlockSizeBytes: 4096,
		AccessMode:             "READ_WRITE_SINGLE",
	}
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
	s.handle("GET", "projects/{project}/aggregated/disks", func(c *call) (int, any) {
		var items []listItem
		for _, d := range s.disks {
			items = append(items, listItem{scope: "zones/" + d.Zone, name: d.Name, created: d.CreationTimestamp, doc: s.diskJSONLocked(c.base, d)})
		}
		return s.aggregatedResponse(c, "compute#diskAggregatedList", "disks", "disks", s.zoneScopesLocked(), items)
	})
}
