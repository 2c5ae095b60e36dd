package digitalocean

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Volume is the fake's state for one block storage volume.
type Volume struct {
	ID              string // a UUID
	Name            string
	Region          string // region slug
	SizeGigaBytes   int64
	Description     string
	DropletIDs      []int
	FilesystemType  string
	FilesystemLabel string
	Tags            []string
	CreatedAt       time.Time
}

type volumeState struct {
	Volume
	seq int // creation order, the order the API lists volumes in
}

func (v Volume) clone() Volume {
	v.DropletIDs = slices.Clone(v.DropletIDs)
	v.Tags = slices.Clone(v.Tags)
	return v
}

// AddVolume stores a volume and returns it as stored. Unset fields get
// defaults: a fresh UUID, the name "volume-<n>", region nyc3, 10 GiB and
// the current time. It panics if the ID is taken: a mistake in the test.
func (s *Server) AddVolume(v Volume) Volume {
	s.mu.Lock()
	defer s.mu.Unlock()
	v = v.clone()
	if v.ID == "" {
		v.ID = newUUID()
	}
	if s.volumes[v.ID] != nil {
		panic(fmt.Sprintf("digitalocean fake: volume %s already exists", v.ID))
	}
	s.volumeSeq++
	v.Name = cmp.Or(v.Name, fmt.Sprintf("volume-%d", s.volumeSeq))
	v.Region = cmp.Or(v.Region, defaultRegion)
	v.SizeGigaBytes = cmp.Or(v.SizeGigaBytes, 10)
	if v.CreatedAt.IsZero() {
		v.CreatedAt = s.now()
	}
	v.CreatedAt = v.CreatedAt.UTC().Truncate(time.Second)
	s.volumes[v.ID] = &volumeState{Volume: v, seq: s.volumeSeq}
	return v.clone()
}

// RemoveVolume deletes a volume, reporting whether it existed.
func (s *Server) RemoveVolume(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.volumes[id]
	delete(s.volumes, id)
	return ok
}

// Volumes returns every volume in creation order.
func (s *Server) Volumes() []Volume {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Volume, 0, len(s.volumes))
	for _, v := range s.sortedVolumesLocked() {
		out = append(out, v.clone())
	}
	return out
}

func (s *Server) sortedVolumesLocked() []*volumeState {
	out := make([]*volumeState, 0, len(s.volumes))
	for _, v := range s.volumes {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b *volumeState) int { return a.seq - b.seq })
	return out
}

func (s *Server) registerVolumes() {
	s.handle(http.MethodGet, "/v2/volumes", s.listVolumes)
	s.handle(http.MethodGet, "/v2/volumes/{id}", s.getVolume)
}

// listVolumes: GET /v2/volumes[?page&per_page&region&name], oldest first.
// name is an exact match and region a slug, as godo's ListVolumes sends
// them.
func (s *Server) listVolumes(r *http.Request, _ params) (int, any) {
	q := r.URL.Query()
	pg := parsePaging(q)
	region, name := q.Get("region"), q.Get("name")

	s.mu.Lock()
	var all []wireVolume
	for _, v := range s.sortedVolumesLocked() {
		if (region == "" || v.Region == region) && (name == "" || v.Name == name) {
			all = append(all, wireVolumeOf(v.Volume))
		}
	}
	s.mu.Unlock()

	lo, hi := pg.window(len(all))
	page := all[lo:hi]
	if page == nil {
		page = []wireVolume{}
	}
	return http.StatusOK, &volumesRoot{Volumes: page, Links: pg.links(r, len(all)), Meta: wireMeta{Total: len(all)}}
}

// getVolume: GET /v2/volumes/{id}.
func (s *Server) getVolume(_ *http.Request, p params) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.volumes[p["id"]]
	if !ok {
		return errNotFound()
	}
	return http.StatusOK, &volumeRoot{Volume: wireVolumeOf(v.Volume)}
}

func wireVolumeOf(v Volume) wireVolume {
	region := wireRegionOf(v.Region)
	return wireVolume{
		ID:              v.ID,
		Region:          &region,
		DropletIDs:      emptyIfNil(slices.Clone(v.DropletIDs)),
		Name:            v.Name,
		Description:     v.Description,
		SizeGigaBytes:   v.SizeGigaBytes,
		CreatedAt:       v.CreatedAt.UTC().Format(time.RFC3339),
		FilesystemType:  v.FilesystemType,
		FilesystemLabel: v.FilesystemLabel,
		Tags:            emptyIfNil(slices.Clone(v.Tags)),
	}
}
