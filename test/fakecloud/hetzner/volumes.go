package hetzner

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

// Volume is a block storage volume as the fake holds it.
type Volume struct {
	ID       int64
	Name     string
	Location string
	Size     int   // GB
	Server   int64 // 0 = detached
	Format   string
	Labels   map[string]string
	Created  time.Time
}

type volumeState = Volume

// AddVolume creates a 10 GB ext4 volume in a location and returns its ID.
// It panics on an unknown location or a taken name: mistakes in the test.
func (s *Server) AddVolume(name, location string) int64 {
	s.lock()
	defer s.mu.Unlock()
	if _, ok := findLocation(location); !ok {
		panic("hetzner fake: unknown location " + location)
	}
	id := s.newIDLocked("volume")
	name = cmp.Or(name, fmt.Sprintf("volume-%d", id))
	for _, v := range s.volumes {
		if v.Name == name {
			panic("hetzner fake: volume name " + name + " is taken")
		}
	}
	s.volumes[id] = &Volume{ID: id, Name: name, Location: location, Size: 10, Format: "ext4",
		Labels: map[string]string{}, Created: s.now()}
	return id
}

// AttachVolume attaches a volume to a server (0 detaches it).
func (s *Server) AttachVolume(volumeID, serverID int64) error {
	s.lock()
	defer s.mu.Unlock()
	v, ok := s.volumes[volumeID]
	if !ok {
		return fmt.Errorf("hetzner fake: no volume %d", volumeID)
	}
	if _, ok := s.servers[serverID]; !ok && serverID != 0 {
		return fmt.Errorf("hetzner fake: no server %d", serverID)
	}
	v.Server = serverID
	return nil
}

// DeleteVolume deletes a volume, as its owner might behind polyccm's back.
func (s *Server) DeleteVolume(id int64) {
	s.lock()
	defer s.mu.Unlock()
	delete(s.volumes, id)
}

func (s *Server) registerVolumes() {
	s.handle(http.MethodGet, "/v1/volumes", s.listVolumes)
	s.handle(http.MethodGet, "/v1/volumes/{id}", s.getVolume)
}

// listVolumes: GET /v1/volumes with name, label_selector and status.
func (s *Server) listVolumes(r *http.Request, _ params) (int, any) {
	lq, st, body := parseList(r)
	if st != 0 {
		return st, body
	}
	statuses := r.URL.Query()["status"]
	for _, v := range statuses {
		if v != "available" && v != "creating" {
			return errInvalid("status", "is invalid")
		}
	}
	s.lock()
	defer s.mu.Unlock()
	var out []*Volume
	for _, v := range s.volumes {
		if lq.keep(v.Name, v.Labels) && (len(statuses) == 0 || slices.Contains(statuses, "available")) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b *Volume) int { return cmp.Compare(a.ID, b.ID) })
	return page(r, lq, "volumes", out, wireVolumeOf)
}

func (s *Server) getVolume(_ *http.Request, p params) (int, any) {
	id, ok := parseID(p["id"])
	s.lock()
	defer s.mu.Unlock()
	v := s.volumes[id]
	if !ok || v == nil {
		return errNotFound("volume with ID '" + p["id"] + "' not found")
	}
	return http.StatusOK, map[string]any{"volume": wireVolumeOf(v)}
}

func wireVolumeOf(v *Volume) wireVolume {
	loc, _ := findLocation(v.Location)
	w := wireVolume{ID: v.ID, Name: v.Name, Created: stamp(v.Created), Location: loc, Size: v.Size,
		LinuxDevice: fmt.Sprintf("/dev/disk/by-id/scsi-0HC_Volume_%d", v.ID), Labels: maps.Clone(v.Labels),
		Status: "available"}
	if v.Server != 0 {
		id := v.Server
		w.Server = &id
	}
	if v.Format != "" {
		f := v.Format
		w.Format = &f
	}
	return w
}
