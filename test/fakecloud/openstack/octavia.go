package openstack

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Octavia (load-balancer v2) as the amphora provider runs it: every
// create, update or delete of a load balancer or of one of its children
// (listeners, pools, members, health monitors) puts the load balancer in
// PENDING_CREATE, PENDING_UPDATE or PENDING_DELETE, with the changed
// child, for the provisioning time (SetLoadBalancerProvisioningDelay),
// then ACTIVE, or ERROR when a test asked (FailNextProvisioning); a
// deleted object disappears then. While a load balancer is not ACTIVE
// it refuses every change with 409, as the real API does. Time is the
// fake's clock (SetClock), read lazily on each request, so tests can
// move it instead of sleeping.

// Provisioning statuses.
const (
	ProvisioningActive        = "ACTIVE"
	ProvisioningPendingCreate = "PENDING_CREATE"
	ProvisioningPendingUpdate = "PENDING_UPDATE"
	ProvisioningPendingDelete = "PENDING_DELETE"
	ProvisioningError         = "ERROR"
)

// Operating statuses.
const (
	OperatingOnline    = "ONLINE"
	OperatingOffline   = "OFFLINE"
	OperatingDegraded  = "DEGRADED"
	OperatingError     = "ERROR"
	OperatingNoMonitor = "NO_MONITOR"
	OperatingDraining  = "DRAINING"
)

// DefaultProvisioningDelay is how long a load balancer stays PENDING_*
// after a change, unless SetLoadBalancerProvisioningDelay says otherwise:
// short, so that a client that polls sees the pending state and tests
// stay fast.
const DefaultProvisioningDelay = 300 * time.Millisecond

// LoadBalancerProvider is a provider driver Octavia offers.
type LoadBalancerProvider struct {
	Name, Description string
}

// The providers of a default deployment ([api_settings]
// enabled_provider_drivers), the first being the default.
var defaultLBProviders = []LoadBalancerProvider{
	{"amphora", "The Octavia Amphora driver."},
	{"octavia", "Deprecated alias of the Octavia Amphora driver."},
}

// octBase is what every Octavia object has.
type octBase struct {
	ID, Name, Description string
	AdminUp               bool
	Tags                  []string
	prov                  string
	created, updated      time.Time // updated is zero (null) until the first change
	seq                   int64
	live                  bool // reached ACTIVE once: it shows its real operating status
}

// octaviaStore holds the load balancers and their children, by ID.
type octaviaStore struct {
	lbs       map[string]*lbState
	listeners map[string]*listenerState
	pools     map[string]*poolState
	members   map[string]*memberState
	monitors  map[string]*monitorState
	delay     time.Duration
	failAny   int // operations of any load balancer still to end in ERROR
	providers []LoadBalancerProvider
	flavors   []*lbFlavor
}

type lbFlavor struct {
	id, name, description, profile string
	enabled                        bool
}

func newOctaviaStore() octaviaStore {
	return octaviaStore{lbs: map[string]*lbState{}, listeners: map[string]*listenerState{}, pools: map[string]*poolState{},
		members: map[string]*memberState{}, monitors: map[string]*monitorState{}, delay: DefaultProvisioningDelay,
		providers: slices.Clone(defaultLBProviders)}
}

// SetLoadBalancerProvisioningDelay sets how long load balancers stay
// PENDING_* after a change: 0 makes the next request see the outcome
// (the answer to the change itself still shows PENDING_*).
func (s *Server) SetLoadBalancerProvisioningDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oct.delay = max(d, 0)
}

// FailNextProvisioning makes the load balancer's pending operation, or
// its next one, end in ERROR: the load balancer and the object changed
// go ERROR (a deleted one stays, in ERROR). An empty id applies to the
// next operation of any load balancer.
func (s *Server) FailNextProvisioning(lbID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lbID == "" {
		s.oct.failAny++
		return nil
	}
	lb, ok := s.oct.lbs[lbID]
	if !ok {
		return fmt.Errorf("openstack fake: no load balancer %s", lbID)
	}
	lb.fail = true
	return nil
}

// SetLoadBalancerProvisioningStatus sets a load balancer's provisioning
// status, as a failed or stuck operation leaves it (ERROR, PENDING_UPDATE
// ...). A PENDING_* status set so ends like any operation.
func (s *Server) SetLoadBalancerProvisioningStatus(id, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb, ok := s.oct.lbs[id]
	if !ok {
		return fmt.Errorf("openstack fake: no load balancer %s", id)
	}
	if !slices.Contains([]string{ProvisioningActive, ProvisioningPendingCreate, ProvisioningPendingUpdate,
		ProvisioningPendingDelete, ProvisioningError}, status) {
		return fmt.Errorf("openstack fake: invalid provisioning status %q", status)
	}
	if isPending(status) {
		s.beginLocked(lb, status)
		return nil
	}
	lb.prov, lb.updated = status, s.now()
	lb.live = lb.live || status == ProvisioningActive
	return nil
}

// SetLoadBalancerProviders sets the provider drivers Octavia offers, the
// first being the default (amphora and its alias octavia by default).
func (s *Server) SetLoadBalancerProviders(providers ...LoadBalancerProvider) {
	if len(providers) == 0 {
		panic("openstack fake: Octavia needs a provider")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oct.providers = slices.Clone(providers)
}

// AddLoadBalancerFlavor adds an Octavia flavor (none by default), which
// load balancers may name in flavor_id, and returns its ID.
func (s *Server) AddLoadBalancerFlavor(name, description string, enabled bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &lbFlavor{id: newUUID(), name: name, description: description, profile: newUUID(), enabled: enabled}
	s.oct.flavors = append(s.oct.flavors, f)
	return f.id
}

func isPending(status string) bool { return strings.HasPrefix(status, "PENDING_") }

// settle completes every operation whose time has come. Every request
// and knob calls it first, so the state seen is the one at that time.
func (s *Server) settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
}

func (s *Server) settleLocked() {
	now := s.now()
	for _, lb := range s.oct.lbs {
		if isPending(lb.prov) && !now.Before(lb.settleAt) {
			s.finishLocked(lb)
		}
	}
}

// beginLocked starts an operation of the load balancer: status is its
// PENDING_* status; the caller marks the objects it changes.
func (s *Server) beginLocked(lb *lbState, status string) {
	now := s.now()
	lb.prov, lb.updated, lb.settleAt = status, now, now.Add(s.oct.delay)
	if s.oct.failAny > 0 {
		s.oct.failAny--
		lb.fail = true
	}
}

// mark puts a changed child in status, now; a new one keeps no update
// time.
func (s *Server) mark(b *octBase, status string) {
	b.prov = status
	if status != ProvisioningPendingCreate {
		b.updated = s.now()
	}
}

// finishLocked ends the load balancer's operation: pending children go
// ACTIVE (or ERROR), those pending deletion go away, and so does the
// load balancer if it was being deleted.
func (s *Server) finishLocked(lb *lbState) {
	at := lb.settleAt
	result := ProvisioningActive
	if lb.fail {
		lb.fail, result = false, ProvisioningError
	}
	if lb.prov == ProvisioningPendingDelete && result == ProvisioningActive {
		s.removeLBLocked(lb)
		return
	}
	done := func(b *octBase, remove func()) {
		switch {
		case !isPending(b.prov):
		case b.prov == ProvisioningPendingDelete && result == ProvisioningActive:
			remove()
		default:
			b.prov, b.updated = result, at
			b.live = b.live || result == ProvisioningActive
		}
	}
	for _, id := range slices.Clone(lb.pools) {
		p := s.oct.pools[id]
		for _, mid := range slices.Clone(p.members) {
			m := s.oct.members[mid]
			done(&m.octBase, func() { s.removeMemberLocked(m) })
		}
		if hm := s.oct.monitors[p.monitor]; hm != nil {
			done(&hm.octBase, func() { s.removeMonitorLocked(hm) })
		}
		done(&p.octBase, func() { s.removePoolLocked(p) })
	}
	for _, id := range slices.Clone(lb.listeners) {
		l := s.oct.listeners[id]
		done(&l.octBase, func() { s.removeListenerLocked(l) })
	}
	lb.prov, lb.updated = result, at
	lb.live = lb.live || result == ProvisioningActive
}

func (s *Server) removeLBLocked(lb *lbState) {
	for _, id := range slices.Clone(lb.pools) {
		s.removePoolLocked(s.oct.pools[id])
	}
	for _, id := range slices.Clone(lb.listeners) {
		s.removeListenerLocked(s.oct.listeners[id])
	}
	if p := s.ports[lb.vipPortID]; p != nil && lb.vipOwned {
		s.deletePortLocked(p)
	}
	delete(s.oct.lbs, lb.ID)
}

func (s *Server) removeListenerLocked(l *listenerState) {
	if lb := s.oct.lbs[l.lb]; lb != nil {
		lb.listeners = slices.DeleteFunc(lb.listeners, func(id string) bool { return id == l.ID })
	}
	delete(s.oct.listeners, l.ID)
}

func (s *Server) removePoolLocked(p *poolState) {
	for _, mid := range slices.Clone(p.members) {
		s.removeMemberLocked(s.oct.members[mid])
	}
	if hm := s.oct.monitors[p.monitor]; hm != nil {
		s.removeMonitorLocked(hm)
	}
	for _, l := range s.oct.listeners {
		if l.defaultPool == p.ID {
			l.defaultPool = ""
		}
	}
	if lb := s.oct.lbs[p.lb]; lb != nil {
		lb.pools = slices.DeleteFunc(lb.pools, func(id string) bool { return id == p.ID })
	}
	delete(s.oct.pools, p.ID)
}

func (s *Server) removeMemberLocked(m *memberState) {
	if p := s.oct.pools[m.pool]; p != nil {
		p.members = slices.DeleteFunc(p.members, func(id string) bool { return id == m.ID })
	}
	delete(s.oct.members, m.ID)
}

func (s *Server) removeMonitorLocked(hm *monitorState) {
	if p := s.oct.pools[hm.pool]; p != nil && p.monitor == hm.ID {
		p.monitor = ""
	}
	delete(s.oct.monitors, hm.ID)
}

// newBaseLocked starts an object in PENDING_CREATE.
func (s *Server) newBaseLocked(name, description string, adminUp bool, tags []string) octBase {
	s.seq++
	if tags == nil {
		tags = []string{}
	}
	return octBase{ID: newUUID(), Name: name, Description: description, AdminUp: adminUp, Tags: slices.Clone(tags),
		prov: ProvisioningPendingCreate, created: s.now(), seq: s.seq}
}

// Octavia's errors, in its words (octavia/common/exceptions.py), under
// WSME's document.

func errOctaviaNotFound(resource, id string) (int, any) {
	return errWSME(http.StatusNotFound, resource+" "+id+" not found.")
}

// errImmutable is a change refused while the load balancer (or pool) is
// not ACTIVE.
func errImmutable(resource, id string) (int, any) {
	return errWSME(http.StatusConflict, resource+" "+id+" is immutable and cannot be updated.")
}

// errLBPendingState is the load balancer's own update or delete refused
// in a state that does not allow it.
func errLBPendingState(state, id string) (int, any) {
	return errWSME(http.StatusConflict, "Invalid state "+state+" of loadbalancer resource "+id)
}

func errOctaviaValidation(detail string) (int, any) {
	return errWSME(http.StatusBadRequest, "Validation failure: "+detail)
}

// errInvalidSubresource is a referenced Neutron object that is not there.
func errInvalidSubresource(resource, id string) (int, any) {
	return errWSME(http.StatusBadRequest, resource+" "+id+" not found.")
}

func errInvalidOption(value, option string) (int, any) {
	return errWSME(http.StatusBadRequest, value+" is not a valid option for "+option)
}

// Octavia serves its API at /v2 and at /v2.0 (which gophercloud uses),
// each under lbaas.
var lbPaths = []string{"/load-balancer/v2/lbaas", "/load-balancer/v2.0/lbaas"}

func (s *Server) registerOctavia() {
	h := func(method, pattern, name string, fn handlerFunc) {
		for _, base := range lbPaths {
			s.handle(svcLoadBalancer, method, base+pattern, name, fn)
		}
	}
	h(http.MethodGet, "/loadbalancers", LoadBalancersList, s.listLoadBalancers)
	h(http.MethodPost, "/loadbalancers", LoadBalancersCreate, s.createLoadBalancer)
	h(http.MethodGet, "/loadbalancers/{id}", LoadBalancersGet, s.getLoadBalancer)
	h(http.MethodPut, "/loadbalancers/{id}", LoadBalancersUpdate, s.updateLoadBalancer)
	h(http.MethodDelete, "/loadbalancers/{id}", LoadBalancersDelete, s.deleteLoadBalancer)
	h(http.MethodGet, "/loadbalancers/{id}/status", LoadBalancersStatus, s.loadBalancerStatus)
	// "statuses" is Octavia's alias, kept from neutron-lbaas.
	h(http.MethodGet, "/loadbalancers/{id}/statuses", LoadBalancersStatus, s.loadBalancerStatus)
	h(http.MethodGet, "/listeners", ListenersList, s.listListeners)
	h(http.MethodPost, "/listeners", ListenersCreate, s.createListener)
	h(http.MethodGet, "/listeners/{id}", ListenersGet, s.getListener)
	h(http.MethodPut, "/listeners/{id}", ListenersUpdate, s.updateListener)
	h(http.MethodDelete, "/listeners/{id}", ListenersDelete, s.deleteListener)
	h(http.MethodGet, "/pools", PoolsList, s.listPools)
	h(http.MethodPost, "/pools", PoolsCreate, s.createPool)
	h(http.MethodGet, "/pools/{id}", PoolsGet, s.getPool)
	h(http.MethodPut, "/pools/{id}", PoolsUpdate, s.updatePool)
	h(http.MethodDelete, "/pools/{id}", PoolsDelete, s.deletePool)
	h(http.MethodGet, "/pools/{pool}/members", MembersList, s.listMembers)
	h(http.MethodPost, "/pools/{pool}/members", MembersCreate, s.createMember)
	h(http.MethodPut, "/pools/{pool}/members", MembersBatchUpdate, s.batchUpdateMembers)
	h(http.MethodGet, "/pools/{pool}/members/{id}", MembersGet, s.getMember)
	h(http.MethodPut, "/pools/{pool}/members/{id}", MembersUpdate, s.updateMember)
	h(http.MethodDelete, "/pools/{pool}/members/{id}", MembersDelete, s.deleteMember)
	h(http.MethodGet, "/healthmonitors", HealthMonitorsList, s.listMonitors)
	h(http.MethodPost, "/healthmonitors", HealthMonitorsCreate, s.createMonitor)
	h(http.MethodGet, "/healthmonitors/{id}", HealthMonitorsGet, s.getMonitor)
	h(http.MethodPut, "/healthmonitors/{id}", HealthMonitorsUpdate, s.updateMonitor)
	h(http.MethodDelete, "/healthmonitors/{id}", HealthMonitorsDelete, s.deleteMonitor)
	h(http.MethodGet, "/providers", LoadBalancerProvidersList, s.listLBProviders)
	h(http.MethodGet, "/flavors", LoadBalancerFlavorsList, s.listLBFlavors)
}

// listLBProviders: GET /v2/lbaas/providers, one list without links.
func (s *Server) listLBProviders(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]string{}
	for _, p := range s.oct.providers {
		out = append(out, map[string]string{"name": p.Name, "description": p.Description})
	}
	return http.StatusOK, map[string]any{"providers": out}
}

var lbFlavorFilters = []string{"id", "name", "description", "enabled", "flavor_profile_id"}

// listLBFlavors: GET /v2/lbaas/flavors, filtered and paged as any
// Octavia list.
func (s *Server) listLBFlavors(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []octItem
	for _, f := range s.oct.flavors {
		items = append(items, octItem{id: f.id, fields: map[string]string{"id": f.id, "name": f.name,
			"description": f.description, "enabled": fmt.Sprint(f.enabled), "flavor_profile_id": f.profile},
			render: func() any {
				return map[string]any{"id": f.id, "name": f.name, "description": f.description, "enabled": f.enabled,
					"flavor_profile_id": f.profile}
			}})
	}
	return octaviaPage(c, "flavors", lbFlavorFilters, items)
}

// flavorLocked finds an enabled flavor by ID.
func (s *Server) flavorLocked(id string) *lbFlavor {
	for _, f := range s.oct.flavors {
		if f.id == id {
			return f
		}
	}
	return nil
}

// defaultProviderLocked is [api_settings] default_provider_driver.
func (s *Server) defaultProviderLocked() string { return s.oct.providers[0].Name }
