package digitalocean

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
)

// ReservedIP is the fake's state for one reserved IP. BYOIP addresses are
// reserved IPs too (DigitalOcean manages them through the same API), so
// these are also what a load balancer's create-only ip may name.
type ReservedIP struct {
	IP        string // IPv4, also the reserved IP's id
	Region    string // region slug
	DropletID int    // 0 unless assigned to a droplet
	// LoadBalancerID is the load balancer created with this address, ""
	// if none. The API has no field for it: the reserved IP's droplet stays
	// null.
	LoadBalancerID string
	ProjectID      string
	Locked         bool
}

type reservedIPState struct {
	ReservedIP
	seq int // creation order, the order the API lists them in
}

// AddReservedIP reserves a new address in region (nyc3 if ""), unassigned,
// and returns it; it bypasses the account's reserved_ip_limit.
func (s *Server) AddReservedIP(region string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addReservedIPLocked(cmp.Or(region, defaultRegion), "").IP
}

func (s *Server) addReservedIPLocked(region, project string) *reservedIPState {
	// From the droplets' and load balancers' sequence, so no two resources
	// ever share an address.
	public, _ := allocIPv4(s.nextAddr)
	s.nextAddr++
	s.reservedIPSeq++
	st := &reservedIPState{seq: s.reservedIPSeq, ReservedIP: ReservedIP{
		IP: public, Region: region, ProjectID: cmp.Or(project, defaultLBProject),
	}}
	s.reservedIPs[public] = st
	return st
}

// ReservedIP returns the reserved IP with the given address.
func (s *Server) ReservedIP(ip string) (ReservedIP, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.reservedIPs[ip]
	if !ok {
		return ReservedIP{}, false
	}
	return st.ReservedIP, true
}

// ReservedIPs returns every reserved IP in creation order.
func (s *Server) ReservedIPs() []ReservedIP {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []ReservedIP{}
	for _, st := range s.sortedReservedIPsLocked() {
		out = append(out, st.ReservedIP)
	}
	return out
}

func (s *Server) sortedReservedIPsLocked() []*reservedIPState {
	out := make([]*reservedIPState, 0, len(s.reservedIPs))
	for _, st := range s.reservedIPs {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b *reservedIPState) int { return a.seq - b.seq })
	return out
}

// checkLBAddrLocked checks a create request's ip as the reference words the
// rule (attributes.yml, load_balancer_ip): an unassigned address of the
// account in the load balancer's region, not for GLOBAL or INTERNAL ones.
func (s *Server) checkLBAddrLocked(lb LoadBalancer, ip string) string {
	if ip == "" {
		return ""
	}
	a, err := netip.ParseAddr(ip)
	switch {
	case err != nil || !a.Is4() || a.String() != ip:
		return fmt.Sprintf("ip %q is not a valid IPv4 address", ip)
	case lb.Type == LBTypeGlobal:
		return "ip is not supported for GLOBAL load balancers"
	case lb.Network == LBNetworkInternal:
		return "ip is not supported for INTERNAL load balancers"
	}
	st, ok := s.reservedIPs[ip]
	switch {
	case !ok:
		return fmt.Sprintf("ip %s is not a BYOIP address on this account", ip)
	case st.Region != lb.Region:
		return fmt.Sprintf("ip %s is in region %s, not in the load balancer's region %s", ip, st.Region, lb.Region)
	case st.DropletID != 0 || st.LoadBalancerID != "":
		return fmt.Sprintf("ip %s is already assigned", ip)
	}
	return ""
}

// bindLBAddrLocked gives a just-stored load balancer the address its create
// request named, checked by checkLBAddrLocked.
func (s *Server) bindLBAddrLocked(st *lbState, ip string) {
	if ip == "" {
		return
	}
	st.reservedIP = ip
	s.reservedIPs[ip].LoadBalancerID = st.ID
}

// assignReservedLBAddrLocked activates a load balancer created with a
// BYOIP address: that address, plus a new IPv6 one if DUALSTACK.
func (s *Server) assignReservedLBAddrLocked(st *lbState) {
	st.IP = st.reservedIP
	if st.NetworkStack == LBNetworkStackDualstack && st.IPv6 == "" {
		st.IPv6 = allocLBIPv6(s.nextAddr)
		s.nextAddr++
	}
}

// releaseLBAddrLocked frees the address of a deleted load balancer.
func (s *Server) releaseLBAddrLocked(lbID string) {
	for _, st := range s.reservedIPs {
		if st.LoadBalancerID == lbID {
			st.LoadBalancerID = ""
		}
	}
}

// unassignDropletIPsLocked frees the reserved IPs of a deleted droplet,
// which stay on the account as the real API keeps them.
func (s *Server) unassignDropletIPsLocked(dropletID int) {
	for _, st := range s.reservedIPs {
		if st.DropletID == dropletID {
			st.DropletID = 0
		}
	}
}

func (s *Server) registerReservedIPs() {
	s.handle(http.MethodGet, "/v2/reserved_ips", s.listReservedIPs)
	s.handle(http.MethodPost, "/v2/reserved_ips", s.createReservedIP)
	s.handle(http.MethodGet, "/v2/reserved_ips/{ip}", s.getReservedIP)
	s.handle(http.MethodDelete, "/v2/reserved_ips/{ip}", s.deleteReservedIP)
}

// wireReservedIP follows resources/reserved_ips/models/reserved_ip.yml:
// droplet is the full droplet object, or null when unassigned.
type wireReservedIP struct {
	IP        string       `json:"ip"`
	Region    wireRegion   `json:"region"`
	Droplet   *wireDroplet `json:"droplet"`
	Locked    bool         `json:"locked"`
	ProjectID string       `json:"project_id"`
}

// reservedIPLinks is the create answer's links: {} when reserving to a
// region, a link to the droplet when assigning to one.
type reservedIPLinks struct {
	Droplets []wireActionLink `json:"droplets,omitempty"`
}

type reservedIPsRoot struct {
	ReservedIPs []wireReservedIP `json:"reserved_ips"`
	Links       wireLinks        `json:"links"`
	Meta        wireMeta         `json:"meta"`
}

type reservedIPRoot struct {
	ReservedIP wireReservedIP   `json:"reserved_ip"`
	Links      *reservedIPLinks `json:"links,omitempty"`
}

func (s *Server) wireReservedIPLocked(st *reservedIPState) wireReservedIP {
	w := wireReservedIP{
		IP: st.IP, Region: wireRegionOf(st.Region), Locked: st.Locked, ProjectID: st.ProjectID,
	}
	if d, ok := s.droplets[st.DropletID]; ok {
		wd := wireDropletOf(d)
		w.Droplet = &wd
	}
	return w
}

// listReservedIPs: GET /v2/reserved_ips[?page&per_page], oldest first.
func (s *Server) listReservedIPs(r *http.Request, _ params) (int, any) {
	pg := parsePaging(r.URL.Query())
	s.mu.Lock()
	s.settleLocked()
	all := s.sortedReservedIPsLocked()
	lo, hi := pg.window(len(all))
	page := make([]wireReservedIP, 0, hi-lo)
	for _, st := range all[lo:hi] {
		page = append(page, s.wireReservedIPLocked(st))
	}
	s.mu.Unlock()
	return http.StatusOK, &reservedIPsRoot{ReservedIPs: page, Links: pg.links(r, len(all)), Meta: wireMeta{Total: len(all)}}
}

// getReservedIP: GET /v2/reserved_ips/{ip}.
func (s *Server) getReservedIP(_ *http.Request, p params) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	st, ok := s.reservedIPs[p["ip"]]
	if !ok {
		return errNotFound()
	}
	return http.StatusOK, &reservedIPRoot{ReservedIP: s.wireReservedIPLocked(st)}
}

// createReservedIP: POST /v2/reserved_ips, reserving to a region or, with
// droplet_id, assigning to a droplet (in the droplet's region) at once.
// Answers 202.
func (s *Server) createReservedIP(r *http.Request, _ params) (int, any) {
	var req struct {
		Region    string `json:"region"`
		DropletID int    `json:"droplet_id"`
		ProjectID string `json:"project_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errNotJSON(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	region := req.Region
	var d *Droplet
	if req.DropletID != 0 {
		var ok bool
		if d, ok = s.droplets[req.DropletID]; !ok {
			return errUnprocessable(fmt.Sprintf("droplet %d not found", req.DropletID))
		}
		if region != "" && region != d.Region {
			return errUnprocessable(fmt.Sprintf("droplet %d is not in region %s", d.ID, region))
		}
		region = d.Region
	}
	switch _, known := findRegion(region); {
	case region == "":
		return errUnprocessable("region or droplet_id is required")
	case !known:
		return errUnprocessable(fmt.Sprintf("region %q is invalid", region))
	}
	st := s.addReservedIPLocked(region, req.ProjectID)
	links := &reservedIPLinks{}
	if d != nil {
		st.DropletID = d.ID
		links.Droplets = []wireActionLink{{ID: d.ID, Rel: "droplet", HREF: baseURL(r) + "v2/droplets/" + strconv.Itoa(d.ID)}}
	}
	return http.StatusAccepted, &reservedIPRoot{ReservedIP: s.wireReservedIPLocked(st), Links: links}
}

// deleteReservedIP: DELETE /v2/reserved_ips/{ip}, 204. An address in use
// (by a droplet, or as a load balancer's BYOIP address) is refused.
func (s *Server) deleteReservedIP(_ *http.Request, p params) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.reservedIPs[p["ip"]]
	switch {
	case !ok:
		return errNotFound()
	case st.DropletID != 0:
		return errUnprocessable(fmt.Sprintf("reserved IP %s is assigned to droplet %d; unassign it first", st.IP, st.DropletID))
	case st.LoadBalancerID != "":
		return errUnprocessable(fmt.Sprintf("reserved IP %s is in use by load balancer %s", st.IP, st.LoadBalancerID))
	}
	delete(s.reservedIPs, st.IP)
	return http.StatusNoContent, nil
}
