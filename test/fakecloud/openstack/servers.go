package openstack

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Server statuses, as Nova spells them.
const (
	StatusActive           = "ACTIVE"
	StatusBuild            = "BUILD"
	StatusShutoff          = "SHUTOFF"
	StatusError            = "ERROR"
	StatusPaused           = "PAUSED"
	StatusSuspended        = "SUSPENDED"
	StatusShelved          = "SHELVED"
	StatusShelvedOffloaded = "SHELVED_OFFLOADED"
	StatusRescue           = "RESCUE"
	StatusReboot           = "REBOOT"
	StatusHardReboot       = "HARD_REBOOT"
	StatusResize           = "RESIZE"
	StatusVerifyResize     = "VERIFY_RESIZE"
	StatusMigrating        = "MIGRATING"
)

// vmState is what Nova's OS-EXT-STS fields show for a status: the
// vm_state, the power_state (1 running, 3 paused, 4 shut down) and the
// task_state ("" for none).
type vmState struct {
	vm    string
	power int
	task  string
}

var vmStates = map[string]vmState{
	StatusActive:           {"active", 1, ""},
	StatusBuild:            {"building", 0, "spawning"},
	StatusShutoff:          {"stopped", 4, ""},
	StatusError:            {"error", 0, ""},
	StatusPaused:           {"paused", 3, ""},
	StatusSuspended:        {"suspended", 4, ""},
	StatusShelved:          {"shelved", 4, ""},
	StatusShelvedOffloaded: {"shelved_offloaded", 4, ""},
	StatusRescue:           {"rescued", 1, ""},
	StatusReboot:           {"active", 1, "rebooting"},
	StatusHardReboot:       {"active", 1, "rebooting_hard"},
	StatusResize:           {"active", 1, "resize_prep"},
	StatusVerifyResize:     {"resized", 1, ""},
	StatusMigrating:        {"active", 1, "migrating"},
}

// ServerSpec describes a server for AddServer; zero fields get defaults.
type ServerSpec struct {
	Name             string // default "server-<n>"; names may repeat, as in Nova
	Region           string // default the first region
	Flavor           string // flavor ID or name, default "m1.small"
	Status           string // default StatusActive
	AvailabilityZone string // default "nova"
	Metadata         map[string]string
	AccessIPv4       string
	AccessIPv6       string
	Tags             []string
	// Ports are the server's NICs, in order; Nova lists their addresses
	// by network name.
	Ports   []PortSpec
	Created time.Time // default now
}

// CloudServer is a server as the fake holds it.
type CloudServer struct {
	ID               string
	Name             string
	Region           string
	Status           string
	AvailabilityZone string
	FlavorID         string
	Metadata         map[string]string
	AccessIPv4       string
	AccessIPv6       string
	Tags             []string
	Created          time.Time
}

type serverState struct {
	CloudServer
	flavor   Flavor // as it was at boot: what 2.47 shows
	seq      int64  // Nova's internal ID, the second sort key
	updated  time.Time
	launched time.Time // zero until the server first left BUILD
}

func (sv *serverState) clone() CloudServer {
	c := sv.CloudServer
	c.Metadata = maps.Clone(c.Metadata)
	c.Tags = slices.Clone(c.Tags)
	return c
}

// AddServer creates a server with its ports, as if booted by the user,
// and returns its ID. It panics on an unknown flavor, status or network,
// or on addresses it cannot give: mistakes in the calling test.
func (s *Server) AddServer(spec ServerSpec) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	region := s.regionLocked(spec.Region)
	f := s.flavorByRefLocked(cmp.Or(spec.Flavor, "m1.small"))
	if f == nil {
		panic("openstack fake: unknown flavor " + spec.Flavor)
	}
	status := cmp.Or(spec.Status, StatusActive)
	if _, ok := vmStates[status]; !ok {
		panic("openstack fake: invalid server status " + status)
	}
	for _, ip := range []string{spec.AccessIPv4, spec.AccessIPv6} {
		if _, err := netip.ParseAddr(ip); ip != "" && err != nil {
			panic("openstack fake: bad access IP " + ip)
		}
	}
	s.seq++
	now := s.now()
	sv := &serverState{CloudServer: CloudServer{ID: newUUID(), Name: cmp.Or(spec.Name, fmt.Sprintf("server-%d", s.seq)),
		Region: region, Status: status, AvailabilityZone: cmp.Or(spec.AvailabilityZone, "nova"), FlavorID: f.ID,
		Metadata: maps.Clone(spec.Metadata), AccessIPv4: spec.AccessIPv4, AccessIPv6: spec.AccessIPv6,
		Tags: slices.Clone(spec.Tags), Created: cmp.Or(spec.Created, now)}, flavor: f.clone(), seq: s.seq, updated: now}
	if sv.Metadata == nil {
		sv.Metadata = map[string]string{}
	}
	if status != StatusBuild {
		sv.launched = sv.Created
	}
	s.servers[sv.ID] = sv
	for _, ps := range spec.Ports {
		if _, err := s.addPortLocked(sv, ps); err != nil {
			panic("openstack fake: " + err.Error())
		}
	}
	return sv.ID
}

// Server returns a server by ID.
func (s *Server) Server(id string) (CloudServer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.servers[id]
	if !ok {
		return CloudServer{}, false
	}
	return sv.clone(), true
}

// Servers returns every server of every region, in Nova's order: newest
// first.
func (s *Server) Servers() []CloudServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CloudServer
	for _, sv := range s.sortedServersLocked("") {
		out = append(out, sv.clone())
	}
	return out
}

// SetServerStatus changes a server's status, as an action on it would;
// its ports follow (DOWN while it is stopped, see PortDown).
func (s *Server) SetServerStatus(id, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.servers[id]
	if !ok {
		return fmt.Errorf("openstack fake: no server %s", id)
	}
	if _, ok := vmStates[status]; !ok {
		return fmt.Errorf("openstack fake: invalid server status %q", status)
	}
	sv.Status, sv.updated = status, s.now()
	if status != StatusBuild && sv.launched.IsZero() {
		sv.launched = sv.updated
	}
	s.setServerPortsStatusLocked(id, status)
	return nil
}

// StopServer stops a server: SHUTOFF, the state in which upstream's CCM
// reports a node shut down.
func (s *Server) StopServer(id string) error { return s.SetServerStatus(id, StatusShutoff) }

// StartServer starts a server: ACTIVE.
func (s *Server) StartServer(id string) error { return s.SetServerStatus(id, StatusActive) }

// DeleteServer deletes a server and the ports made for it, freeing their
// addresses, and detaches its volumes.
func (s *Server) DeleteServer(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.servers[id]; !ok {
		return fmt.Errorf("openstack fake: no server %s", id)
	}
	for _, p := range s.serverPortsLocked(id) {
		s.deletePortLocked(p)
	}
	s.detachServerVolumesLocked(id)
	delete(s.servers, id)
	return nil
}

// sortedServersLocked lists a region's servers ("" for all) as Nova sorts
// them by default: created_at, then its internal ID, both descending.
func (s *Server) sortedServersLocked(region string) []*serverState {
	var out []*serverState
	for _, sv := range s.servers {
		if region == "" || sv.Region == region {
			out = append(out, sv)
		}
	}
	slices.SortFunc(out, func(a, b *serverState) int {
		return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(b.seq, a.seq))
	})
	return out
}

func (s *Server) registerServers() {
	s.handle(svcCompute, http.MethodGet, "/compute/v2.1/servers/detail", ServersList, s.listServers)
	s.handle(svcCompute, http.MethodGet, "/compute/v2.1/servers/{id}", ServersGet, s.getServer)
}

// serverFilter is the filters of GET /servers/detail the fake applies:
// name, ip and ip6 are regular expressions matched anywhere in the value,
// case-insensitively, as Nova's database REGEXP does (upstream's CCM
// sends "^name$", quoted); status is one of Nova's, case-insensitively;
// flavor is an ID.
type serverFilter struct {
	name, ip, ip6 *regexp.Regexp
	statuses      []string
	flavor, az    string
}

func parseServerFilter(c *call) (serverFilter, int, any) {
	q := c.r.URL.Query()
	var f serverFilter
	for _, rf := range []struct {
		param string
		dst   **regexp.Regexp
	}{{"name", &f.name}, {"ip", &f.ip}, {"ip6", &f.ip6}} {
		if !q.Has(rf.param) {
			continue
		}
		v := q.Get(rf.param)
		re, err := regexp.Compile("(?i)" + v)
		if err != nil {
			st, body := errNova(http.StatusBadRequest, fmt.Sprintf(
				"Invalid input for query parameters %s. Value: %s. '%s' is not a 'regex'", rf.param, v, v))
			return f, st, body
		}
		*rf.dst = re
	}
	for _, v := range q["status"] {
		f.statuses = append(f.statuses, strings.ToUpper(v))
	}
	f.flavor, f.az = q.Get("flavor"), q.Get("availability_zone")
	return f, 0, nil
}

func (s *Server) keepLocked(f serverFilter, sv *serverState) bool {
	switch {
	case f.name != nil && !f.name.MatchString(sv.Name),
		len(f.statuses) > 0 && !slices.Contains(f.statuses, sv.Status),
		f.flavor != "" && f.flavor != sv.FlavorID,
		f.az != "" && f.az != sv.AvailabilityZone:
		return false
	}
	if f.ip == nil && f.ip6 == nil {
		return true
	}
	for _, p := range s.serverPortsLocked(sv.ID) {
		for _, a := range p.FixedIPs {
			ip := netip.MustParseAddr(a.IP)
			if ip.Is4() && f.ip != nil && f.ip.MatchString(a.IP) || ip.Is6() && f.ip6 != nil && f.ip6.MatchString(a.IP) {
				return true
			}
		}
	}
	return false
}

// listServers: GET /servers/detail.
func (s *Server) listServers(c *call) (int, any) {
	f, st, body := parseServerFilter(c)
	if st != 0 {
		return st, body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	page, links, st, body := novaPage(c, "servers/detail", s.sortedServersLocked(c.region),
		func(sv *serverState) string { return sv.ID },
		func(sv *serverState) bool { return s.keepLocked(f, sv) })
	if st != 0 {
		return st, body
	}
	out := make([]wireServer, 0, len(page))
	for _, sv := range page {
		out = append(out, s.wireServerLocked(c, sv))
	}
	doc := map[string]any{"servers": out}
	if links != nil {
		doc["servers_links"] = links
	}
	return http.StatusOK, doc
}

func (s *Server) getServer(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.servers[c.p["id"]]
	if sv == nil || sv.Region != c.region {
		return errNova(http.StatusNotFound, "Instance "+c.p["id"]+" could not be found.")
	}
	return http.StatusOK, map[string]any{"server": s.wireServerLocked(c, sv)}
}

func (s *Server) wireServerLocked(c *call, sv *serverState) wireServer {
	st := vmStates[sv.Status]
	w := wireServer{ID: sv.ID, Name: sv.Name, Status: sv.Status, TenantID: s.account.ProjectID, UserID: s.account.UserID,
		Metadata: maps.Clone(sv.Metadata), Created: stamp(sv.Created), Updated: stamp(sv.updated),
		Addresses: map[string][]wireAddress{}, AccessIPv4: sv.AccessIPv4, AccessIPv6: sv.AccessIPv6,
		Links: novaLinks(c, "servers", sv.ID), ConfigDrive: "", AvailabilityZone: sv.AvailabilityZone,
		DiskConfig: "MANUAL", VMState: st.vm, PowerState: st.power, VolumesAttached: []wireVolumeAttachment{},
		Image: wireRefWithLinks{ID: s.imageID, Links: []wireLink{{Rel: "bookmark", Href: c.root + "/compute/images/" + s.imageID}}}}
	if st.task != "" {
		w.TaskState = strPtr(st.task)
	}
	if !sv.launched.IsZero() {
		w.LaunchedAt = strPtr(stampNoZone(sv.launched))
		w.HostID = hostID(s.account.ProjectID, sv.Region)
	}
	if c.mv.atLeast(47) {
		f := sv.flavor
		w.Flavor = wireServerFlavor{VCPUs: f.VCPUs, RAM: f.RAM, Disk: f.Disk, Ephemeral: f.Ephemeral, Swap: f.Swap,
			OriginalName: f.Name, ExtraSpecs: f.clone().ExtraSpecs}
	} else {
		w.Flavor = wireRefWithLinks{ID: sv.FlavorID,
			Links: []wireLink{{Rel: "bookmark", Href: c.root + "/compute/flavors/" + sv.FlavorID}}}
	}
	ports := s.serverPortsLocked(sv.ID)
	for _, p := range ports {
		net := s.networks[p.NetworkID].Name
		for _, a := range p.FixedIPs {
			w.Addresses[net] = append(w.Addresses[net], wireAddress{Addr: a.IP, Version: ipVersion(a.IP), Type: "fixed", MAC: p.MAC})
		}
		if p.FloatingIP != "" {
			w.Addresses[net] = append(w.Addresses[net], wireAddress{Addr: p.FloatingIP, Version: ipVersion(p.FloatingIP), Type: "floating", MAC: p.MAC})
		}
	}
	if len(ports) > 0 {
		w.SecurityGroups = []wireName{{Name: "default"}}
	}
	for _, a := range s.serverVolumesLocked(sv.ID) {
		va := wireVolumeAttachment{ID: a.volumeID}
		if c.mv.atLeast(3) {
			va.DeleteOnTermination = new(bool)
		}
		w.VolumesAttached = append(w.VolumesAttached, va)
	}
	if c.mv.atLeast(9) {
		w.Locked = false
	}
	if c.mv.atLeast(19) {
		w.Description = (*string)(nil)
	}
	if c.mv.atLeast(26) {
		w.Tags = append([]string{}, sv.Tags...)
	}
	if c.mv.atLeast(63) {
		w.TrustedImageCertificates = (*string)(nil)
	}
	if c.mv.atLeast(71) {
		w.ServerGroups = []string{}
	}
	if c.mv.atLeast(73) {
		w.LockedReason = (*string)(nil)
	}
	if c.mv.atLeast(96) {
		w.PinnedAvailabilityZone = (*string)(nil)
	}
	return w
}

func ipVersion(ip string) int {
	if a, err := netip.ParseAddr(ip); err == nil && a.Is6() {
		return 6
	}
	return 4
}

// hostID is Nova's hostId: a hash of the project and the compute host,
// the same for the project's servers on one host. The fake puts each
// region's servers on one host.
func hostID(project, host string) string {
	sum := sha256.Sum224([]byte(project + host))
	return hex.EncodeToString(sum[:])
}
