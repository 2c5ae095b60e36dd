package digitalocean

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Load balancer types, networks and network stacks, as the API spells them.
const (
	LBTypeRegional        = "REGIONAL"
	LBTypeRegionalNetwork = "REGIONAL_NETWORK"
	LBTypeGlobal          = "GLOBAL"

	LBNetworkExternal = "EXTERNAL"
	LBNetworkInternal = "INTERNAL"

	LBNetworkStackIPv4      = "IPV4"
	LBNetworkStackDualstack = "DUALSTACK"
)

// StatusErrored is the status of a load balancer that failed to provision.
// Load balancers otherwise use StatusNew and StatusActive, like droplets.
const StatusErrored = "errored"

// LoadBalancer is the fake's state for one load balancer.
type LoadBalancer struct {
	ID     string // a UUID
	Name   string
	Status string // StatusNew, StatusActive or StatusErrored
	// IP is "" while the load balancer is new: a public address for
	// EXTERNAL ones (the reserved BYOIP one asked for at creation, if any),
	// a private 10.x one for INTERNAL ones. IPv6 is set only for EXTERNAL
	// DUALSTACK ones, once active.
	IP   string
	IPv6 string
	// Region is a slug; GLOBAL load balancers have none.
	Region string
	// SizeSlug is the deprecated size ("lb-small", ...), kept only when the
	// load balancer was sized by it. SizeUnit is always the node count, but
	// the API reports it only for load balancers not sized by slug.
	SizeSlug                     string
	SizeUnit                     int
	Type                         string // LBTypeRegional, LBTypeRegionalNetwork or LBTypeGlobal
	Network                      string // LBNetworkExternal or LBNetworkInternal
	NetworkStack                 string // LBNetworkStackIPv4 or LBNetworkStackDualstack
	Algorithm                    string
	ForwardingRules              []ForwardingRule
	HealthCheck                  *HealthCheck // never nil in what the helpers return
	StickySessions               *StickySessions
	DropletIDs                   []int // for a Tag-based load balancer, the droplets bearing the tag
	Tag                          string
	Tags                         []string // given at creation; the API does not send them back
	RedirectHTTPToHTTPS          bool
	EnableProxyProtocol          bool
	EnableBackendKeepalive       bool
	HTTPIdleTimeoutSeconds       int
	VPCUUID                      string
	SubnetUUID                   string // "" unless given at creation
	ProjectID                    string
	Firewall                     Firewall
	DisableLetsEncryptDNSRecords bool
	TLSCipherPolicy              string
	CreatedAt                    time.Time
}

// ForwardingRule routes one entry port to one target port.
type ForwardingRule struct {
	EntryProtocol  string // http, https, http2, http3, tcp or udp
	EntryPort      int
	TargetProtocol string // http, https, http2, tcp or udp
	TargetPort     int
	CertificateID  string
	TLSPassthrough bool
}

// HealthCheck is how the load balancer probes its droplets.
type HealthCheck struct {
	Protocol               string // http, https or tcp
	Port                   int
	Path                   string
	CheckIntervalSeconds   int
	ResponseTimeoutSeconds int
	HealthyThreshold       int
	UnhealthyThreshold     int
	ProxyProtocol          *bool // nil unless a client set it
}

// StickySessions is the session affinity setting.
type StickySessions struct {
	Type             string // "none" or "cookies"
	CookieName       string
	CookieTTLSeconds int
}

// Firewall holds allow and deny rules, "ip:1.2.3.4" or "cidr:10.0.0.0/8".
type Firewall struct {
	Allow []string
	Deny  []string
}

// LBStats counts load balancers over the fake's life, whether made through
// the API or the helpers: Created and Deleted ever, Live now and Peak, the
// most that existed at once.
type LBStats struct {
	Created, Deleted, Live, Peak int
}

func (lb LoadBalancer) clone() LoadBalancer {
	lb.ForwardingRules = slices.Clone(lb.ForwardingRules)
	lb.DropletIDs = slices.Clone(lb.DropletIDs)
	lb.Tags = slices.Clone(lb.Tags)
	lb.Firewall.Allow = slices.Clone(lb.Firewall.Allow)
	lb.Firewall.Deny = slices.Clone(lb.Firewall.Deny)
	if lb.HealthCheck != nil {
		hc := *lb.HealthCheck
		if p := hc.ProxyProtocol; p != nil {
			v := *p
			hc.ProxyProtocol = &v
		}
		lb.HealthCheck = &hc
	}
	if lb.StickySessions != nil {
		ss := *lb.StickySessions
		lb.StickySessions = &ss
	}
	return lb
}

// lbState is a stored load balancer with the bookkeeping the API hides.
type lbState struct {
	LoadBalancer
	seq     int       // creation order
	readyAt time.Time // when a new load balancer turns active
	// reservedIP is the BYOIP address asked for at creation; it becomes IP
	// on activation and stays bound to the load balancer until deletion.
	reservedIP string
}

func validLBStatus(s string) bool {
	return s == StatusNew || s == StatusActive || s == StatusErrored
}

// Defaults the API fills in, from the reference's defaults and examples.
const (
	defaultLBAlgorithm    = "round_robin"
	defaultIdleTimeout    = 60
	defaultCipherPolicy   = "DEFAULT"
	defaultLBProject      = "f1d7a8c4-5c0e-4a3b-9e2d-000000000001"
	stickyNone            = "none"
	stickyCookies         = "cookies"
	defaultHealthProtocol = "http"
)

func defaultHealthCheck() HealthCheck {
	return HealthCheck{
		Protocol: defaultHealthProtocol, Port: 80, Path: "/",
		CheckIntervalSeconds: 10, ResponseTimeoutSeconds: 5,
		HealthyThreshold: 5, UnhealthyThreshold: 3,
	}
}

// AddLoadBalancer stores a load balancer and returns it as stored. Unset
// fields get the API's defaults: a fresh ID, a name, status "active",
// region nyc3 (none for GLOBAL), type REGIONAL, network EXTERNAL, stack
// IPV4, one node, a tcp 80 -> 80 rule, the default health check, no
// sticky sessions, the region's default VPC, the default project, the
// current time, and addresses if active. It panics if the ID is taken or
// the status invalid: both are mistakes in the calling test.
func (s *Server) AddLoadBalancer(lb LoadBalancer) LoadBalancer {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLBsLocked()
	if lb.ID != "" {
		if _, taken := s.lbs[lb.ID]; taken {
			panic(fmt.Sprintf("digitalocean fake: load balancer id %s already exists", lb.ID))
		}
	}
	lb.Status = cmp.Or(lb.Status, StatusActive)
	if !validLBStatus(lb.Status) {
		panic(fmt.Sprintf("digitalocean fake: invalid load balancer status %q", lb.Status))
	}
	lb.ID = cmp.Or(lb.ID, newUUID())
	lb.Name = cmp.Or(lb.Name, "lb-"+lb.ID[:8])
	lb.Type = cmp.Or(lb.Type, LBTypeRegional)
	if lb.Type != LBTypeGlobal {
		lb.Region = cmp.Or(lb.Region, defaultRegion)
		lb.VPCUUID = cmp.Or(lb.VPCUUID, defaultVPC(lb.Region))
	}
	lb.Network = cmp.Or(lb.Network, LBNetworkExternal)
	lb.NetworkStack = cmp.Or(lb.NetworkStack, LBNetworkStackIPv4)
	lb.SizeUnit = cmp.Or(lb.SizeUnit, cmp.Or(lbSizeUnits[lb.SizeSlug], 1))
	lb.Algorithm = cmp.Or(lb.Algorithm, defaultLBAlgorithm)
	if len(lb.ForwardingRules) == 0 {
		lb.ForwardingRules = []ForwardingRule{{EntryProtocol: "tcp", EntryPort: 80, TargetProtocol: "tcp", TargetPort: 80}}
	}
	if lb.HealthCheck == nil {
		hc := defaultHealthCheck()
		lb.HealthCheck = &hc
	}
	if lb.StickySessions == nil {
		lb.StickySessions = &StickySessions{Type: stickyNone}
	}
	lb.HTTPIdleTimeoutSeconds = cmp.Or(lb.HTTPIdleTimeoutSeconds, defaultIdleTimeout)
	lb.TLSCipherPolicy = cmp.Or(lb.TLSCipherPolicy, defaultCipherPolicy)
	lb.ProjectID = cmp.Or(lb.ProjectID, defaultLBProject)
	if lb.CreatedAt.IsZero() {
		lb.CreatedAt = s.now()
	}
	st := s.storeLBLocked(lb)
	if st.Status != StatusNew {
		s.assignLBAddrsLocked(st)
	}
	return s.viewLocked(st)
}

// storeLBLocked stores a load balancer and counts it.
func (s *Server) storeLBLocked(lb LoadBalancer) *lbState {
	lb = lb.clone()
	lb.CreatedAt = lb.CreatedAt.UTC().Truncate(time.Second)
	lb.Tags = emptyIfNil(lb.Tags)
	lb.DropletIDs = emptyIfNil(lb.DropletIDs)
	lb.Firewall.Allow = emptyIfNil(lb.Firewall.Allow)
	lb.Firewall.Deny = emptyIfNil(lb.Firewall.Deny)
	s.lbSeq++
	st := &lbState{LoadBalancer: lb, seq: s.lbSeq, readyAt: s.now().Add(s.lbActivationDelay)}
	s.lbs[lb.ID] = st
	s.lbStats.Created++
	s.lbStats.Live++
	s.lbStats.Peak = max(s.lbStats.Peak, s.lbStats.Live)
	return st
}

// emptyIfNil turns nil into an empty slice, so state and wire agree on [].
func emptyIfNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// assignLBAddrsLocked gives an active load balancer its addresses, drawn
// from the same sequence as droplets' so no two resources share one.
func (s *Server) assignLBAddrsLocked(st *lbState) {
	if st.IP != "" {
		return
	}
	if st.reservedIP != "" {
		s.assignReservedLBAddrLocked(st)
		return
	}
	n := s.nextAddr
	s.nextAddr++
	public, private := allocIPv4(n)
	if st.Network == LBNetworkInternal {
		// Internal load balancers have no public address at all.
		st.IP = private
		return
	}
	st.IP = public
	if st.NetworkStack == LBNetworkStackDualstack && st.IPv6 == "" {
		st.IPv6 = allocLBIPv6(n)
	}
}

// settleLBsLocked activates the new load balancers whose time has come,
// oldest first so addresses are handed out reproducibly. Like droplets,
// state moves lazily on reads, so tests drive it with SetClock and
// SetLoadBalancerActivationDelay.
func (s *Server) settleLBsLocked() {
	now := s.now()
	for _, st := range s.sortedLBsLocked() {
		if st.Status == StatusNew && !now.Before(st.readyAt) {
			st.Status = StatusActive
			s.assignLBAddrsLocked(st)
		}
	}
}

// viewLocked is a load balancer as clients see it: a copy, with a tag-based
// load balancer's droplets resolved from the droplets bearing the tag.
func (s *Server) viewLocked(st *lbState) LoadBalancer {
	lb := st.LoadBalancer.clone()
	if lb.Tag != "" {
		lb.DropletIDs = []int{}
		for _, d := range s.sortedLocked() {
			if slices.Contains(d.Tags, lb.Tag) {
				lb.DropletIDs = append(lb.DropletIDs, d.ID)
			}
		}
	}
	return lb
}

// sortedLBsLocked lists load balancers by creation.
func (s *Server) sortedLBsLocked() []*lbState {
	out := make([]*lbState, 0, len(s.lbs))
	for _, st := range s.lbs {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b *lbState) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), a.seq-b.seq)
	})
	return out
}

// LoadBalancers returns every load balancer, oldest first.
func (s *Server) LoadBalancers() []LoadBalancer {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLBsLocked()
	out := make([]LoadBalancer, 0, len(s.lbs))
	for _, st := range s.sortedLBsLocked() {
		out = append(out, s.viewLocked(st))
	}
	return out
}

// LoadBalancer returns the load balancer with the given ID.
func (s *Server) LoadBalancer(id string) (LoadBalancer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLBsLocked()
	st, ok := s.lbs[id]
	if !ok {
		return LoadBalancer{}, false
	}
	return s.viewLocked(st), true
}

// UpdateLoadBalancer changes a load balancer in place, as if it changed
// outside the API (say, to StatusErrored). The ID cannot change. Setting a
// status other than "new" gives it addresses if it has none.
func (s *Server) UpdateLoadBalancer(id string, update func(*LoadBalancer)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLBsLocked()
	st, ok := s.lbs[id]
	if !ok {
		return fmt.Errorf("digitalocean fake: no load balancer %s", id)
	}
	c := st.LoadBalancer.clone()
	update(&c)
	if c.ID != id {
		return fmt.Errorf("digitalocean fake: UpdateLoadBalancer cannot change the ID")
	}
	if !validLBStatus(c.Status) {
		return fmt.Errorf("digitalocean fake: invalid load balancer status %q", c.Status)
	}
	st.LoadBalancer = c.clone()
	if st.Status != StatusNew {
		s.assignLBAddrsLocked(st)
	}
	return nil
}

// RemoveLoadBalancer deletes a load balancer, reporting whether it existed.
func (s *Server) RemoveLoadBalancer(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.lbs[id]; !ok {
		return false
	}
	delete(s.lbs, id)
	s.releaseLBAddrLocked(id)
	s.lbStats.Deleted++
	s.lbStats.Live--
	return true
}

// LoadBalancerStats returns the load balancer counts.
func (s *Server) LoadBalancerStats() LBStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lbStats
}

// forgetDropletLocked takes a deleted droplet out of every load balancer,
// as the real API does when a backend droplet is destroyed, and frees the
// reserved IPs it had.
func (s *Server) forgetDropletLocked(id int) {
	s.unassignDropletIPsLocked(id)
	for _, st := range s.lbs {
		st.DropletIDs = slices.DeleteFunc(st.DropletIDs, func(d int) bool { return d == id })
	}
}

func (s *Server) registerLoadBalancers() {
	s.handle(http.MethodGet, "/v2/load_balancers", s.listLoadBalancers)
	s.handle(http.MethodPost, "/v2/load_balancers", s.createLoadBalancer)
	s.handle(http.MethodGet, "/v2/load_balancers/{id}", s.getLoadBalancer)
	s.handle(http.MethodPut, "/v2/load_balancers/{id}", s.updateLoadBalancer)
	s.handle(http.MethodDelete, "/v2/load_balancers/{id}", s.deleteLoadBalancer)
	s.handle(http.MethodPost, "/v2/load_balancers/{id}/droplets", s.addLBDroplets)
	s.handle(http.MethodDelete, "/v2/load_balancers/{id}/droplets", s.removeLBDroplets)
	s.handle(http.MethodPost, "/v2/load_balancers/{id}/forwarding_rules", s.addLBRules)
	s.handle(http.MethodDelete, "/v2/load_balancers/{id}/forwarding_rules", s.removeLBRules)
}

// errLBNotFound is the real API's 404 for load balancers, as observed
// (hashicorp/terraform#14852: "404 ... Load Balancer not found").
func errLBNotFound() (int, any) {
	return newError(http.StatusNotFound, "not_found", "Load Balancer not found")
}

// errLBBusy is what the real API answers to changes while a load balancer
// is still being provisioned: a 403, not a 422 (digitalocean/openapi#1173;
// ansible-collections/community.digitalocean#185).
func errLBBusy() (int, any) {
	return newError(http.StatusForbidden, "forbidden", "Load Balancer can't be updated while it processes previous actions")
}

// listLoadBalancers: GET /v2/load_balancers[?page&per_page&names&uuids],
// oldest first. names and uuids, repeatable, are exact-match filters, as
// godo's ListByNames and ListByUUIDs send them.
func (s *Server) listLoadBalancers(r *http.Request, _ params) (int, any) {
	q := r.URL.Query()
	pg := parsePaging(q)
	names, uuids := q["names"], q["uuids"]

	s.mu.Lock()
	s.settleLBsLocked()
	var all []wireLoadBalancer
	for _, st := range s.sortedLBsLocked() {
		if len(names) > 0 && !slices.Contains(names, st.Name) {
			continue
		}
		if len(uuids) > 0 && !slices.Contains(uuids, st.ID) {
			continue
		}
		all = append(all, wireLBOf(s.viewLocked(st)))
	}
	s.mu.Unlock()

	lo, hi := pg.window(len(all))
	page := all[lo:hi]
	if page == nil {
		page = []wireLoadBalancer{}
	}
	return http.StatusOK, &loadBalancersRoot{
		LoadBalancers: page,
		Links:         pg.links(r, len(all)),
		Meta:          wireMeta{Total: len(all)},
	}
}

// getLoadBalancer: GET /v2/load_balancers/{id}.
func (s *Server) getLoadBalancer(_ *http.Request, p params) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLBsLocked()
	st, ok := s.lbs[p["id"]]
	if !ok {
		return errLBNotFound()
	}
	return http.StatusOK, &loadBalancerRoot{LoadBalancer: wireLBOf(s.viewLocked(st))}
}

// createLoadBalancer: POST /v2/load_balancers. Answers 202 with the load
// balancer "new" and without an IP; it turns active after the activation
// delay.
func (s *Server) createLoadBalancer(r *http.Request, _ params) (int, any) {
	var req lbRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errNotJSON(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLBsLocked()
	lb, msg := s.lbFromRequestLocked(&req)
	// Tags and ip count on creation only; updates ignore them.
	if msg == "" {
		msg = checkTagNames(req.Tags)
	}
	if msg == "" {
		msg = s.checkLBAddrLocked(lb, req.IP)
	}
	if msg != "" {
		return errUnprocessable(msg)
	}
	lb.ID = newUUID()
	lb.Status = StatusNew
	lb.Tags = slices.Clone(req.Tags)
	lb.VPCUUID = req.VPCUUID
	if lb.Type != LBTypeGlobal {
		lb.VPCUUID = cmp.Or(lb.VPCUUID, defaultVPC(lb.Region))
	}
	lb.ProjectID = cmp.Or(req.ProjectID, defaultLBProject)
	lb.CreatedAt = s.now()
	st := s.storeLBLocked(lb)
	s.bindLBAddrLocked(st, req.IP)
	// Tags named at creation come into being, as for droplets.
	s.ensureTagsLocked(lb.Tags)
	// No settling here: the answer shows the load balancer as just created.
	return http.StatusAccepted, &loadBalancerRoot{LoadBalancer: wireLBOf(s.viewLocked(st))}
}

// updateLoadBalancer: PUT /v2/load_balancers/{id}, a full replacement:
// what the body leaves out goes back to its default, as the reference says.
// Region, type, network and network stack cannot change; tags, the project,
// the addresses (ip is create-only and ignored here) and (when left out)
// the VPC and subnet are kept.
func (s *Server) updateLoadBalancer(r *http.Request, p params) (int, any) {
	var req lbRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errNotJSON(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLBsLocked()
	st, ok := s.lbs[p["id"]]
	if !ok {
		return errLBNotFound()
	}
	if st.Status == StatusNew {
		return errLBBusy()
	}
	lb, msg := s.lbFromRequestLocked(&req)
	if msg != "" {
		return errUnprocessable(msg)
	}
	// Worded like the real "size cannot be modified" (digitalocean/
	// terraform-provider-digitalocean#532).
	for _, f := range []struct{ name, was, now string }{
		{"region", st.Region, lb.Region},
		{"type", st.Type, lb.Type},
		{"network", st.Network, lb.Network},
		{"network_stack", st.NetworkStack, lb.NetworkStack},
		{"vpc_uuid", st.VPCUUID, cmp.Or(req.VPCUUID, st.VPCUUID)},
		{"subnet_uuid", st.SubnetUUID, cmp.Or(req.SubnetUUID, st.SubnetUUID)},
	} {
		if f.was != f.now {
			return errUnprocessable(f.name + " cannot be modified")
		}
	}
	lb.ID, lb.Status, lb.IP, lb.IPv6 = st.ID, st.Status, st.IP, st.IPv6
	lb.VPCUUID, lb.SubnetUUID, lb.Tags, lb.CreatedAt = st.VPCUUID, st.SubnetUUID, st.Tags, st.CreatedAt
	lb.ProjectID = cmp.Or(req.ProjectID, st.ProjectID)
	st.LoadBalancer = lb.clone()
	return http.StatusOK, &loadBalancerRoot{LoadBalancer: wireLBOf(s.viewLocked(st))}
}

// deleteLoadBalancer: DELETE /v2/load_balancers/{id}, 204 without a body.
func (s *Server) deleteLoadBalancer(_ *http.Request, p params) (int, any) {
	if !s.RemoveLoadBalancer(p["id"]) {
		return errLBNotFound()
	}
	return http.StatusNoContent, nil
}
