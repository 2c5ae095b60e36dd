package openstack

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Volume statuses, as Cinder spells them.
const (
	VolumeAvailable     = "available"
	VolumeInUse         = "in-use"
	VolumeCreating      = "creating"
	VolumeAttaching     = "attaching"
	VolumeDetaching     = "detaching"
	VolumeDeleting      = "deleting"
	VolumeExtending     = "extending"
	VolumeMaintenance   = "maintenance"
	VolumeReserved      = "reserved"
	VolumeError         = "error"
	VolumeErrorDeleting = "error_deleting"
	VolumeErrorExtend   = "error_extending"
)

var volumeStatuses = []string{VolumeAvailable, VolumeInUse, VolumeCreating, VolumeAttaching, VolumeDetaching,
	VolumeDeleting, VolumeExtending, VolumeMaintenance, VolumeReserved, VolumeError, VolumeErrorDeleting, VolumeErrorExtend}

// DefaultVolumeType is the type of volumes made without one, Cinder's own
// default type.
const DefaultVolumeType = "__DEFAULT__"

// VolumeSpec describes a volume for AddVolume; zero fields get defaults.
type VolumeSpec struct {
	Name             string // default none: Cinder shows null, and names may repeat
	Description      string // default none (null)
	Region           string // default the first region
	AvailabilityZone string // default "nova"
	Size             int    // GiB, default 1
	VolumeType       string // default DefaultVolumeType
	// Status defaults to VolumeAvailable, or VolumeInUse when attached.
	Status      string
	Metadata    map[string]string
	Bootable    bool
	Multiattach bool
	// Server attaches the volume to a server of its region, at Device
	// (default the server's next free /dev/vdX, from /dev/vdb).
	Server  string
	Device  string
	Created time.Time // default now
}

// CloudVolume is a volume as the fake holds it.
type CloudVolume struct {
	ID               string
	Name             string
	Description      string
	Region           string
	AvailabilityZone string
	Size             int
	VolumeType       string
	Status           string
	Metadata         map[string]string
	Bootable         bool
	Multiattach      bool
	Attachments      []VolumeAttachment // in the order they were made
	Created          time.Time
}

// VolumeAttachment is a volume's attachment to a server.
type VolumeAttachment struct {
	ID         string // the attachment's own ID
	ServerID   string
	Device     string // "/dev/vdb"
	AttachedAt time.Time
}

type volumeState struct {
	CloudVolume
	updated time.Time
	seqs    []int64 // each attachment's place in Nova's list of the server's volumes
}

func (v *volumeState) clone() CloudVolume {
	c := v.CloudVolume
	c.Metadata = maps.Clone(c.Metadata)
	c.Attachments = slices.Clone(c.Attachments)
	return c
}

// AddVolume creates a volume, attached to spec.Server if set, and
// returns its ID. It panics on an unknown region or server, a server of
// another region, a size below 1 or an unknown status: mistakes in the
// calling test.
func (s *Server) AddVolume(spec VolumeSpec) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	region := s.regionLocked(spec.Region)
	size := cmp.Or(spec.Size, 1)
	if size < 1 {
		panic(fmt.Sprintf("openstack fake: bad volume size %d", spec.Size))
	}
	status := spec.Status
	if status == "" {
		status = VolumeAvailable
		if spec.Server != "" {
			status = VolumeInUse
		}
	}
	if !slices.Contains(volumeStatuses, status) {
		panic("openstack fake: invalid volume status " + status)
	}
	now := s.now()
	v := &volumeState{CloudVolume: CloudVolume{ID: newUUID(), Name: spec.Name, Description: spec.Description,
		Region: region, AvailabilityZone: cmp.Or(spec.AvailabilityZone, "nova"), Size: size,
		VolumeType: cmp.Or(spec.VolumeType, DefaultVolumeType), Status: status, Metadata: maps.Clone(spec.Metadata),
		Bootable: spec.Bootable, Multiattach: spec.Multiattach, Created: cmp.Or(spec.Created, now)}, updated: now}
	if v.Metadata == nil {
		v.Metadata = map[string]string{}
	}
	if spec.Server != "" {
		if err := s.attachLocked(v, spec.Server, spec.Device); err != nil {
			panic("openstack fake: " + err.Error())
		}
	}
	s.volumes[v.ID] = v
	return v.ID
}

// Volume returns a volume by ID.
func (s *Server) Volume(id string) (CloudVolume, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.volumes[id]
	if !ok {
		return CloudVolume{}, false
	}
	return v.clone(), true
}

// Volumes returns every volume of every region, in Cinder's order:
// newest first.
func (s *Server) Volumes() []CloudVolume {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CloudVolume
	for _, v := range s.sortedVolumesLocked("") {
		out = append(out, v.clone())
	}
	return out
}

// DeleteVolume deletes a volume. As Cinder, it refuses an attached one:
// detach it first (DetachVolume, or DeleteServer).
func (s *Server) DeleteVolume(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.volumes[id]
	if !ok {
		return fmt.Errorf("openstack fake: no volume %s", id)
	}
	if len(v.Attachments) > 0 {
		return fmt.Errorf("openstack fake: volume %s is attached", id)
	}
	delete(s.volumes, id)
	return nil
}

// SetVolumeStatus changes a volume's status, as an operation on it would.
func (s *Server) SetVolumeStatus(id, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.volumes[id]
	if !ok {
		return fmt.Errorf("openstack fake: no volume %s", id)
	}
	if !slices.Contains(volumeStatuses, status) {
		return fmt.Errorf("openstack fake: invalid volume status %q", status)
	}
	v.Status, v.updated = status, s.now()
	return nil
}

// AttachVolume attaches a volume to a server of its region at device ("" for
// the next free /dev/vdX), as Nova's volume attach does: the volume goes
// in-use and the server lists it. A volume not multiattach can have one
// attachment.
func (s *Server) AttachVolume(volumeID, serverID, device string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.volumes[volumeID]
	if !ok {
		return fmt.Errorf("openstack fake: no volume %s", volumeID)
	}
	if err := s.attachLocked(v, serverID, device); err != nil {
		return fmt.Errorf("openstack fake: %w", err)
	}
	v.Status = VolumeInUse
	return nil
}

// DetachVolume detaches a volume from a server; with no attachment left
// it is available again.
func (s *Server) DetachVolume(volumeID, serverID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.volumes[volumeID]
	if !ok {
		return fmt.Errorf("openstack fake: no volume %s", volumeID)
	}
	k := slices.IndexFunc(v.Attachments, func(a VolumeAttachment) bool { return a.ServerID == serverID })
	if k < 0 {
		return fmt.Errorf("openstack fake: volume %s is not attached to %s", volumeID, serverID)
	}
	s.detachLocked(v, k)
	if sv := s.servers[serverID]; sv != nil {
		sv.updated = s.now()
	}
	return nil
}

func (s *Server) detachLocked(v *volumeState, k int) {
	v.Attachments = slices.Delete(v.Attachments, k, k+1)
	v.seqs = slices.Delete(v.seqs, k, k+1)
	v.updated = s.now()
	if len(v.Attachments) == 0 && v.Status == VolumeInUse {
		v.Status = VolumeAvailable
	}
}

// detachServerVolumesLocked detaches every volume of a server being deleted.
func (s *Server) detachServerVolumesLocked(serverID string) {
	for _, v := range s.volumes {
		if k := slices.IndexFunc(v.Attachments, func(a VolumeAttachment) bool { return a.ServerID == serverID }); k >= 0 {
			s.detachLocked(v, k)
		}
	}
}

func (s *Server) attachLocked(v *volumeState, serverID, device string) error {
	sv := s.servers[serverID]
	if sv == nil {
		return fmt.Errorf("no server %s", serverID)
	}
	if sv.Region != v.Region {
		return fmt.Errorf("server %s is in region %s, volume %s in %s", serverID, sv.Region, v.ID, v.Region)
	}
	if slices.ContainsFunc(v.Attachments, func(a VolumeAttachment) bool { return a.ServerID == serverID }) {
		return fmt.Errorf("volume %s is already attached to %s", v.ID, serverID)
	}
	if len(v.Attachments) > 0 && !v.Multiattach {
		return fmt.Errorf("volume %s is attached and not multiattach", v.ID)
	}
	used := map[string]bool{"/dev/vda": true} // the root disk
	for _, a := range s.serverVolumesLocked(serverID) {
		used[a.Device] = true
	}
	if device == "" {
		for c := 'b'; c <= 'z' && device == ""; c++ {
			if d := "/dev/vd" + string(c); !used[d] {
				device = d
			}
		}
	}
	if used[device] {
		return fmt.Errorf("device %s of server %s is taken", device, serverID)
	}
	s.seq++
	now := s.now()
	v.Attachments = append(v.Attachments, VolumeAttachment{ID: newUUID(), ServerID: serverID, Device: device, AttachedAt: now})
	v.seqs = append(v.seqs, s.seq)
	v.updated, sv.updated = now, now
	return nil
}

// serverVolumesLocked lists a server's attachments, each with its
// volume's ID, in the order they were made, as Nova lists its block
// devices.
func (s *Server) serverVolumesLocked(serverID string) []serverVolume {
	var out []serverVolume
	for _, v := range s.volumes {
		for k, a := range v.Attachments {
			if a.ServerID == serverID {
				out = append(out, serverVolume{VolumeAttachment: a, volumeID: v.ID, seq: v.seqs[k]})
			}
		}
	}
	slices.SortFunc(out, func(a, b serverVolume) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

type serverVolume struct {
	VolumeAttachment
	volumeID string
	seq      int64
}

// sortedVolumesLocked lists a region's volumes ("" for all) in Cinder's
// default order: created_at, then id, both descending.
func (s *Server) sortedVolumesLocked(region string) []*volumeState {
	var out []*volumeState
	for _, v := range s.volumes {
		if region == "" || v.Region == region {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b *volumeState) int {
		return cmp.Or(b.Created.Compare(a.Created), strings.Compare(b.ID, a.ID))
	})
	return out
}

func (s *Server) registerVolumes() {
	// Cinder routes every path with and without the project (see
	// VolumesList).
	for _, prefix := range []string{"/volume/v3/{project_id}", "/volume/v3"} {
		s.handle(svcVolume, http.MethodGet, prefix+"/volumes/detail", VolumesList, s.listVolumes)
		s.handle(svcVolume, http.MethodGet, prefix+"/volumes/{id}", VolumesGet, s.getVolume)
	}
}

// cinderProjectRE is Cinder's project_id_regex: other values in the
// project's place match no route.
var cinderProjectRE = regexp.MustCompile(`^[0-9a-f-]+$`)

// checkProject checks the project in a Cinder path, if any: it must be
// the token's.
func (s *Server) checkProject(c *call) (int, any) {
	pid, ok := c.p["project_id"]
	switch {
	case !ok:
		return 0, nil
	case !cinderProjectRE.MatchString(pid):
		return errNoRoute(svcVolume, nil)
	case pid != s.Account().ProjectID:
		return errNova(http.StatusBadRequest, "Malformed request url")
	}
	return 0, nil
}

// cinderMaxLimit is Cinder's osapi_max_limit: no page is longer.
const cinderMaxLimit = 1000

// The query parameters of GET /volumes/detail that are not filters.
var cinderReserved = []string{"limit", "marker", "offset", "sort", "sort_key", "sort_dir"}

// volumeFilters are the filters a project member may use, Cinder's
// resource_filters.json for volumes.
var volumeFilters = []string{"name", "status", "metadata", "bootable", "migration_status", "availability_zone",
	"group_id", "size", "created_at", "updated_at", "consumes_quota"}

// volumeQuery is a list request's paging and filters.
type volumeQuery struct {
	limit, offset int
	marker        string
	hasMarker     bool
	withCount     bool
	filters       url.Values
	bootable      *bool
	metadata      map[string]string
	badMetadata   bool // a metadata filter that is no dictionary matches nothing
	times         map[string][]timeBound
}

type timeBound struct {
	op string
	t  time.Time
}

// parseVolumeQuery reads a list's paging and filters as Cinder's
// VolumeController._get_volumes does: limit and offset must be integers
// of 0 or more; before 3.31 filters a member may not use are dropped,
// from it they are refused (but all_tenants, which cinderclient always
// sends).
func parseVolumeQuery(c *call) (volumeQuery, int, any) {
	q := c.r.URL.Query()
	vq := volumeQuery{limit: cinderMaxLimit, filters: url.Values{}}
	if q.Has("limit") {
		n, err := strconv.Atoi(strings.TrimSpace(q.Get("limit")))
		switch {
		case err != nil:
			st, body := errNova(http.StatusBadRequest, "limit param must be an integer")
			return vq, st, body
		case n < 0:
			st, body := errNova(http.StatusBadRequest, "limit param must be positive")
			return vq, st, body
		}
		vq.limit = min(n, cinderMaxLimit)
	}
	vq.marker, vq.hasMarker = q.Get("marker"), q.Has("marker")
	if q.Has("offset") {
		n, err := strconv.Atoi(strings.TrimSpace(q.Get("offset")))
		switch {
		case err != nil:
			st, body := errNova(http.StatusBadRequest, "offset must be an integer")
			return vq, st, body
		case n < 0:
			st, body := errNova(http.StatusBadRequest, "offset must be >= 0")
			return vq, st, body
		}
		vq.offset = n
	}
	if q.Has("sort") && (q.Has("sort_key") || q.Has("sort_dir")) {
		st, body := errNova(http.StatusBadRequest,
			"The 'sort_key' and 'sort_dir' parameters are deprecated and cannot be used with the 'sort' parameter.")
		return vq, st, body
	}
	var invalid []string
	for k, vs := range q {
		switch {
		case slices.Contains(cinderReserved, k):
		case k == "with_count" && c.mv.from(3, 45):
			b, ok := parseBoolStrict(vs[0])
			if !ok {
				st, body := errNova(http.StatusBadRequest, fmt.Sprintf("Value '%s' for 'with_count' is not a boolean.", vs[0]))
				return vq, st, body
			}
			vq.withCount = b
		case k == "all_tenants":
		case slices.Contains(volumeFilters, k):
			vq.filters[k] = vs
		default:
			invalid = append(invalid, k)
		}
	}
	if len(invalid) > 0 && c.mv.from(3, 31) {
		slices.Sort(invalid)
		st, body := errNova(http.StatusBadRequest, fmt.Sprintf("Invalid filters %s are found in query options.",
			strings.Join(invalid, ",")))
		return vq, st, body
	}
	if !c.mv.from(3, 31) {
		// Filters added later are dropped by older versions.
		vq.filters.Del("created_at")
		vq.filters.Del("updated_at")
		vq.filters.Del("consumes_quota")
		if !c.mv.from(3, 10) {
			vq.filters.Del("group_id")
		}
	}
	if vq.filters.Has("bootable") {
		v := vq.filters.Get("bootable")
		var b bool
		if c.mv.from(3, 2) {
			var ok bool
			if b, ok = parseBoolStrict(v); !ok {
				st, body := errNova(http.StatusBadRequest, fmt.Sprintf("Invalid input received: 'bootable = %s'", v))
				return vq, st, body
			}
		} else {
			b = !slices.Contains([]string{"False", "false", "FALSE"}, v)
		}
		vq.bootable = &b
	}
	if vq.filters.Has("consumes_quota") {
		if _, ok := parseBoolStrict(vq.filters.Get("consumes_quota")); !ok {
			st, body := errNova(http.StatusBadRequest, fmt.Sprintf("Value '%s' for 'use_quota' is not a boolean.",
				vq.filters.Get("consumes_quota")))
			return vq, st, body
		}
	}
	if vq.filters.Has("metadata") {
		vq.metadata, vq.badMetadata = parsePyStringDict(vq.filters.Get("metadata"))
		vq.badMetadata = !vq.badMetadata
	}
	for _, key := range []string{"created_at", "updated_at"} {
		if !vq.filters.Has(key) {
			continue
		}
		bounds, st, body := parseTimeComparison(vq.filters.Get(key))
		if st != 0 {
			return vq, st, body
		}
		if vq.times == nil {
			vq.times = map[string][]timeBound{}
		}
		vq.times[key] = bounds
	}
	return vq, 0, nil
}

// parseBoolStrict is oslo's bool_from_string(strict=True).
func parseBoolStrict(v string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "t", "true", "on", "y", "yes":
		return true, true
	case "0", "f", "false", "off", "n", "no":
		return false, true
	}
	return false, false
}

// pyStringDictRE matches one 'key': 'value' pair of a Python dict
// literal, as gophercloud writes a metadata filter ({'k':'v', ...}).
var pyStringDictRE = regexp.MustCompile(`^\s*(?:'([^']*)'|"([^"]*)")\s*:\s*(?:'([^']*)'|"([^"]*)")\s*$`)

// parsePyStringDict reads a Python dict literal of strings, what Cinder's
// ast.literal_eval of a metadata filter takes.
func parsePyStringDict(v string) (map[string]string, bool) {
	v = strings.TrimSpace(v)
	inner, ok := strings.CutPrefix(v, "{")
	if !ok {
		return nil, false
	}
	if inner, ok = strings.CutSuffix(inner, "}"); !ok {
		return nil, false
	}
	out := map[string]string{}
	if strings.TrimSpace(inner) == "" {
		return out, true
	}
	for _, pair := range strings.Split(inner, ",") {
		m := pyStringDictRE.FindStringSubmatch(pair)
		if m == nil {
			return nil, false
		}
		out[m[1]+m[2]] = m[3] + m[4]
	}
	return out, true
}

var timeComparisonOps = []string{"gt", "gte", "eq", "neq", "lt", "lte"}

// parseTimeComparison reads a created_at or updated_at filter,
// "gte:2024-01-01T00:00:00,lt:...", as Cinder's
// _handle_time_comparison_filters does.
func parseTimeComparison(v string) ([]timeBound, int, any) {
	var out []timeBound
	for _, unit := range strings.Split(v, ",") {
		op, t, _ := strings.Cut(unit, ":")
		if !strings.Contains(unit, ":") {
			t = op
		}
		if !slices.Contains(timeComparisonOps, op) {
			st, body := errNova(http.StatusBadRequest, "Invalid "+op+" operator")
			return nil, st, body
		}
		tt, ok := parseISOTime(t)
		if !ok {
			st, body := errNova(http.StatusBadRequest, "Invalid "+t+" value")
			return nil, st, body
		}
		out = append(out, timeBound{op: op, t: tt})
	}
	return out, 0, nil
}

// parseISOTime reads the ISO 8601 forms oslo's parse_isotime takes; a
// time without a zone is UTC, as Cinder stores times.
func parseISOTime(v string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04",
		"2006-01-02", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func (b timeBound) holds(t time.Time) bool {
	t = t.UTC().Truncate(time.Microsecond)
	switch b.op {
	case "gt":
		return t.After(b.t)
	case "gte":
		return !t.Before(b.t)
	case "eq":
		return t.Equal(b.t)
	case "neq":
		return !t.Equal(b.t)
	case "lt":
		return t.Before(b.t)
	}
	return !t.After(b.t)
}

// keep applies the filters: exact matches, as Cinder's database query
// makes them. Volumes have no group and no migration, so those filters
// match only "None".
func (vq volumeQuery) keep(v *volumeState) bool {
	for k, vs := range vq.filters {
		val := vs[0]
		var ok bool
		switch k {
		case "name":
			ok = v.Name != "" && v.Name == val
		case "status":
			ok = v.Status == val
		case "availability_zone":
			ok = v.AvailabilityZone == val
		case "size":
			n, err := strconv.Atoi(strings.TrimSpace(val))
			ok = err == nil && n == v.Size
		case "bootable":
			ok = *vq.bootable == v.Bootable
		case "metadata":
			ok = !vq.badMetadata
			for mk, mv := range vq.metadata {
				ok = ok && v.Metadata[mk] == mv
			}
		case "migration_status", "group_id":
			ok = val == "None"
		case "consumes_quota":
			ok, _ = parseBoolStrict(val)
		case "created_at", "updated_at":
			t := v.Created
			if k == "updated_at" {
				t = v.updated
			}
			ok = true
			for _, b := range vq.times[k] {
				ok = ok && b.holds(t)
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// listVolumes: GET /volumes/detail, paged by limit and marker (and
// offset) in Cinder's order. A page as long as the limit links to the
// next, even when nothing follows, as Cinder does.
func (s *Server) listVolumes(c *call) (int, any) {
	if st, body := s.checkProject(c); st != 0 {
		return st, body
	}
	vq, st, body := parseVolumeQuery(c)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.sortedVolumesLocked(c.region)
	start := 0
	if vq.hasMarker {
		k := slices.IndexFunc(all, func(v *volumeState) bool { return v.ID == vq.marker })
		if k < 0 {
			return errVolumeNotFound(vq.marker)
		}
		start = k + 1
	}
	var matched []*volumeState
	for _, v := range all[start:] {
		if vq.keep(v) {
			matched = append(matched, v)
		}
	}
	page := matched[min(vq.offset, len(matched)):]
	page = page[:min(vq.limit, len(page))]
	out := make([]wireVolume, 0, len(page))
	for _, v := range page {
		out = append(out, s.wireVolumeLocked(c, v))
	}
	doc := map[string]any{"volumes": out}
	if len(page) > 0 && vq.limit <= len(page) {
		q := c.r.URL.Query()
		q.Set("marker", page[len(page)-1].ID)
		doc["volumes_links"] = []wireLink{{Rel: "next", Href: s.volumeBaseLocked(c) + "/volumes/detail?" + q.Encode()}}
	}
	if vq.withCount {
		n := 0
		for _, v := range all {
			if vq.keep(v) {
				n++
			}
		}
		doc["count"] = n
	}
	return http.StatusOK, doc
}

func errVolumeNotFound(id string) (int, any) {
	return errNova(http.StatusNotFound, "Volume "+id+" could not be found.")
}

func (s *Server) getVolume(c *call) (int, any) {
	if st, body := s.checkProject(c); st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.volumes[c.p["id"]]
	if v == nil || v.Region != c.region {
		return errVolumeNotFound(c.p["id"])
	}
	return http.StatusOK, map[string]any{"volume": s.wireVolumeLocked(c, v)}
}

// volumeBaseLocked is where links to the region's Cinder start: with the
// project when the request's path has it, as Cinder writes them.
func (s *Server) volumeBaseLocked(c *call) string {
	if _, ok := c.p["project_id"]; ok {
		return c.root + "/volume/v3/" + s.account.ProjectID
	}
	return c.root + "/volume/v3"
}

func (s *Server) wireVolumeLocked(c *call, v *volumeState) wireVolume {
	self := s.volumeBaseLocked(c) + "/volumes/" + v.ID
	w := wireVolume{ID: v.ID, Status: v.Status, Size: v.Size, AvailabilityZone: v.AvailabilityZone,
		CreatedAt: stampNoZone(v.Created), UpdatedAt: strPtr(stampNoZone(v.updated)), VolumeType: v.VolumeType,
		Metadata: maps.Clone(v.Metadata), UserID: s.account.UserID, Bootable: strconv.FormatBool(v.Bootable),
		ReplicationStatus: strPtr("disabled"), Multiattach: v.Multiattach, Attachments: []wireVolumeAttached{},
		TenantID: s.account.ProjectID,
		Links: []wireLink{{Rel: "self", Href: self},
			{Rel: "bookmark", Href: strings.Replace(self, "/volume/v3/", "/volume/", 1)}}}
	if v.Name != "" {
		w.Name = strPtr(v.Name)
	}
	if v.Description != "" {
		w.Description = strPtr(v.Description)
	}
	for _, a := range v.Attachments {
		w.Attachments = append(w.Attachments, wireVolumeAttached{ID: v.ID, AttachmentID: a.ID, VolumeID: v.ID,
			ServerID: a.ServerID, Device: a.Device, AttachedAt: stampNoZone(a.AttachedAt)})
	}
	if c.mv.from(3, 13) {
		w.GroupID = (*string)(nil)
	}
	if c.mv.from(3, 48) {
		w.SharedTargets = true
		w.ServiceUUID = stableUUID("cinder-volume", v.Region)
	}
	if c.mv.from(3, 63) {
		w.VolumeTypeID = stableUUID("volume-type", v.VolumeType)
	}
	if c.mv.from(3, 65) {
		w.ConsumesQuota = true
	}
	return w
}

// stableUUID derives a UUID from names, for IDs that stay the same from
// request to request (volume types, services).
func stableUUID(parts ...string) string {
	h := stableID(parts...)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
