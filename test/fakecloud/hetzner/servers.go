package hetzner

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"time"
)

// Server statuses, as the API spells them.
const (
	StatusRunning      = "running"
	StatusInitializing = "initializing"
	StatusStarting     = "starting"
	StatusStopping     = "stopping"
	StatusOff          = "off"
	StatusDeleting     = "deleting"
	StatusMigrating    = "migrating"
	StatusRebuilding   = "rebuilding"
	StatusUnknown      = "unknown"
)

var serverStatuses = []string{StatusRunning, StatusInitializing, StatusStarting, StatusStopping,
	StatusOff, StatusDeleting, StatusMigrating, StatusRebuilding, StatusUnknown}

// ServerSpec describes a server for AddServer; zero fields get defaults.
type ServerSpec struct {
	Name     string // default "server-<id>"
	Type     string // server type, default "cx22"
	Location string // default "fsn1"
	Status   string // default StatusRunning
	Labels   map[string]string
	// NoIPv4 and NoIPv6 leave the server without that public address
	// (IPv6-only and private-only servers).
	NoIPv4, NoIPv6 bool
	// Network, if not 0, attaches the server to that network, at
	// PrivateIP or else the next free address of a subnet in the
	// server's network zone.
	Network   int64
	PrivateIP string
	Created   time.Time // default now
}

// CloudServer is a server as the fake holds it.
type CloudServer struct {
	ID       int64
	Name     string
	Status   string
	Type     string
	Location string
	Labels   map[string]string
	// PublicIPv4 is "" on servers without one; PublicIPv6 is the
	// server's /64 ("2001:db8:1:2::/64") or "".
	PublicIPv4  string
	PublicIPv6  string
	PrivateNets []PrivateNet
	Created     time.Time
}

// PrivateNet is a server's attachment to a network.
type PrivateNet struct {
	Network  int64
	IP       string
	AliasIPs []string
	MAC      string
}

type serverState struct {
	CloudServer
	ipv4ID, ipv6ID int64 // the primary IPs' IDs
}

func (c CloudServer) clone() CloudServer {
	c.Labels = maps.Clone(c.Labels)
	c.PrivateNets = slices.Clone(c.PrivateNets)
	for k := range c.PrivateNets {
		c.PrivateNets[k].AliasIPs = slices.Clone(c.PrivateNets[k].AliasIPs)
	}
	return c
}

// AddServer creates a server as if made in the Console and returns its ID.
// It panics on a taken name, an unknown type or location, an invalid
// status or labels, or a network it cannot join: mistakes in the calling
// test.
func (s *Server) AddServer(spec ServerSpec) int64 {
	s.lock()
	defer s.mu.Unlock()
	spec.Type = cmp.Or(spec.Type, "cx22")
	spec.Location = cmp.Or(spec.Location, "fsn1")
	spec.Status = cmp.Or(spec.Status, StatusRunning)
	if _, ok := findServerType(spec.Type); !ok {
		panic("hetzner fake: unknown server type " + spec.Type)
	}
	if _, ok := findLocation(spec.Location); !ok {
		panic("hetzner fake: unknown location " + spec.Location)
	}
	if !slices.Contains(serverStatuses, spec.Status) {
		panic("hetzner fake: invalid server status " + spec.Status)
	}
	if st, _ := validLabels(spec.Labels); st != 0 {
		panic(fmt.Sprintf("hetzner fake: invalid labels %v", spec.Labels))
	}
	id := s.newIDLocked("server")
	spec.Name = cmp.Or(spec.Name, fmt.Sprintf("server-%d", id))
	for _, o := range s.servers {
		if o.Name == spec.Name {
			panic("hetzner fake: server name " + spec.Name + " is taken")
		}
	}
	st := &serverState{CloudServer: CloudServer{ID: id, Name: spec.Name, Status: spec.Status, Type: spec.Type,
		Location: spec.Location, Labels: maps.Clone(spec.Labels), Created: spec.Created}}
	if st.Labels == nil {
		st.Labels = map[string]string{}
	}
	if st.Created.IsZero() {
		st.Created = s.now()
	}
	n := s.nextIP
	s.nextIP++
	if !spec.NoIPv4 {
		st.PublicIPv4, st.ipv4ID = serverIPv4(n), s.newIDLocked("ip")
	}
	if !spec.NoIPv6 {
		st.PublicIPv6, st.ipv6ID = fmt.Sprintf("2001:db8:%x:%x::/64", 0x100+n>>16, n&0xffff), s.newIDLocked("ip")
	}
	s.servers[id] = st
	if spec.Network != 0 {
		if err := s.attachLocked(st, spec.Network, spec.PrivateIP); err != nil {
			delete(s.servers, id)
			panic("hetzner fake: " + err.Error())
		}
	}
	return id
}

// serverIPv4 hands out public addresses from 198.18.0.0/15, the
// benchmarking range, which holds more servers than the documentation
// ranges.
func serverIPv4(n int) string {
	block := n / 250
	return fmt.Sprintf("198.%d.%d.%d", 18+block/256%2, block%256, n%250+2)
}

// Server returns a server by ID.
func (s *Server) Server(id int64) (CloudServer, bool) {
	s.lock()
	defer s.mu.Unlock()
	st, ok := s.servers[id]
	if !ok {
		return CloudServer{}, false
	}
	return st.clone(), true
}

// Servers returns every server, by ID.
func (s *Server) Servers() []CloudServer {
	s.lock()
	defer s.mu.Unlock()
	var out []CloudServer
	for _, st := range s.sortedServersLocked() {
		out = append(out, st.clone())
	}
	return out
}

// SetServerStatus changes a server's status, as powering it off ("off")
// or starting it does.
func (s *Server) SetServerStatus(id int64, status string) error {
	s.lock()
	defer s.mu.Unlock()
	st, ok := s.servers[id]
	if !ok {
		return fmt.Errorf("hetzner fake: no server %d", id)
	}
	if !slices.Contains(serverStatuses, status) {
		return fmt.Errorf("hetzner fake: invalid server status %q", status)
	}
	st.Status = status
	return nil
}

// DeleteServer deletes a server as the real cloud does: it leaves its
// networks (freeing its addresses) and every load balancer's targets, and
// its volumes are detached. Routes through it stay, pointing nowhere.
func (s *Server) DeleteServer(id int64) error {
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.servers[id]; !ok {
		return fmt.Errorf("hetzner fake: no server %d", id)
	}
	delete(s.servers, id)
	owner := ownerServer(id)
	for _, n := range s.networks {
		for a, o := range n.used {
			if o == owner {
				delete(n.used, a)
			}
		}
	}
	for _, lb := range s.lbs {
		lb.Targets = slices.DeleteFunc(lb.Targets, func(t Target) bool { return t.Type == TargetServer && t.ServerID == id })
	}
	for _, v := range s.volumes {
		if v.Server == id {
			v.Server = 0
		}
	}
	return nil
}

func (s *Server) sortedServersLocked() []*serverState {
	out := slices.Collect(maps.Values(s.servers))
	slices.SortFunc(out, func(a, b *serverState) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (s *Server) registerServers() {
	s.handle(http.MethodGet, "/v1/servers", s.listServers)
	s.handle(http.MethodGet, "/v1/servers/{id}", s.getServer)
}

// listServers: GET /v1/servers, with the name, label_selector and status
// (repeatable) filters.
func (s *Server) listServers(r *http.Request, _ params) (int, any) {
	lq, st, body := parseList(r)
	if st != 0 {
		return st, body
	}
	statuses := r.URL.Query()["status"]
	for _, v := range statuses {
		if !slices.Contains(serverStatuses, v) {
			return errInvalid("status", "is invalid")
		}
	}
	s.lock()
	defer s.mu.Unlock()
	var out []*serverState
	for _, sv := range s.sortedServersLocked() {
		if lq.keep(sv.Name, sv.Labels) && (len(statuses) == 0 || slices.Contains(statuses, sv.Status)) {
			out = append(out, sv)
		}
	}
	ix := s.serverIndexLocked()
	return page(r, lq, "servers", out, func(sv *serverState) wireServer { return s.wireServerLocked(sv, ix) })
}

// serverIndex holds, by server, the volumes attached and the load
// balancers targeting it, built once per request so long listings stay
// linear.
type serverIndex struct {
	volumes, lbs map[int64][]int64
}

func (s *Server) serverIndexLocked() serverIndex {
	ix := serverIndex{volumes: map[int64][]int64{}, lbs: map[int64][]int64{}}
	for _, v := range s.volumes {
		if v.Server != 0 {
			ix.volumes[v.Server] = append(ix.volumes[v.Server], v.ID)
		}
	}
	for _, lb := range s.sortedLBsLocked() {
		for _, t := range lb.Targets {
			if t.Type == TargetServer && !slices.Contains(ix.lbs[t.ServerID], lb.ID) {
				ix.lbs[t.ServerID] = append(ix.lbs[t.ServerID], lb.ID)
			}
		}
	}
	return ix
}

func (s *Server) getServer(_ *http.Request, p params) (int, any) {
	id, ok := parseID(p["id"])
	s.lock()
	defer s.mu.Unlock()
	sv := s.servers[id]
	if !ok || sv == nil {
		return errNotFound("server with ID '" + p["id"] + "' not found")
	}
	return http.StatusOK, map[string]any{"server": s.wireServerLocked(sv, s.serverIndexLocked())}
}

func (s *Server) wireServerLocked(sv *serverState, ix serverIndex) wireServer {
	typ, _ := findServerType(sv.Type)
	loc, _ := findLocation(sv.Location)
	img := imageFor(typ.Architecture)
	zero := uint64(0)
	w := wireServer{ID: sv.ID, Name: sv.Name, Status: sv.Status, Created: stamp(sv.Created),
		PublicNet:  wireServerPublicNet{FloatingIPs: []int64{}, Firewalls: []any{}},
		PrivateNet: []wireServerPrivateNet{}, ServerType: typ, Location: loc, Image: &img,
		OutgoingTraffic: &zero, IngoingTraffic: &zero, IncludedTraffic: typ.Prices[0].IncludedTraffic,
		Labels: maps.Clone(sv.Labels), Volumes: []int64{}, LoadBalancers: []int64{}, PrimaryDiskSize: typ.Disk}
	if sv.PublicIPv4 != "" {
		w.PublicNet.IPv4 = &wireServerIPv4{ID: sv.ipv4ID, IP: sv.PublicIPv4, DNSPtr: reverseDNS(sv.PublicIPv4)}
	}
	if sv.PublicIPv6 != "" {
		w.PublicNet.IPv6 = &wireServerIPv6{ID: sv.ipv6ID, IP: sv.PublicIPv6, DNSPtr: []wireDNSPtr{}}
	}
	for _, pn := range sv.PrivateNets {
		w.PrivateNet = append(w.PrivateNet, wireServerPrivateNet{Network: pn.Network, IP: pn.IP,
			AliasIPs: append([]string{}, pn.AliasIPs...), MACAddress: pn.MAC})
	}
	w.Volumes = append(w.Volumes, ix.volumes[sv.ID]...)
	slices.Sort(w.Volumes)
	w.LoadBalancers = append(w.LoadBalancers, ix.lbs[sv.ID]...)
	return w
}

// reverseDNS is the PTR record the cloud gives public addresses until
// someone sets one: static.4.3.2.1.clients.your-server.de.
func reverseDNS(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return ""
	}
	b := a.As4()
	return fmt.Sprintf("static.%d.%d.%d.%d.clients.your-server.de", b[3], b[2], b[1], b[0])
}
