// Package hetzner is an in-memory fake of the Hetzner Cloud API (v1) that
// speaks its wire format: the same paths, JSON documents, pagination meta,
// error envelope, status codes, X-Correlation-Id and RateLimit-* headers,
// so the real hcloud-go client (or any other) works against it unchanged.
// Clients reach it at URL()+"/v1", as they reach https://api.hetzner.cloud/v1.
//
// The JSON types are written here from the API reference rather than taken
// from hcloud-go's schema package, so tests against the fake are an
// independent check of the client's decoding.
//
// Every request passes through a faults.Injector (Faults) for latency,
// injected errors, timeouts and rate limiting, and is counted by endpoint
// pattern, e.g. "GET /v1/servers/{id}". The project's own token bucket
// (3,600 requests, refilled one a second) is on from the start; see
// SetRateLimit.
//
// Changes run as actions, as on the real API: a request is validated at
// once, answered with a "running" action, and takes effect when the action
// succeeds, after the delay its kind is given (SetActionDelay and
// friends; 0 completes it within the request). While an action runs, its
// load balancer or certificate is locked (423 "locked") and its network
// busy (409 "conflict") for other actions. State moves lazily, on each
// request, so the fake needs no goroutines and tests can drive time with
// SetClock.
//
// Implemented: servers, volumes, networks (list, get; routes added and
// deleted by action), locations, server and load balancer types (list,
// get), datacenters (gone since 2026-10-01: 410, see ServeDatacenters),
// actions (get, list by id, per resource), load balancers (list, get,
// create, update, delete and every action polyccm and hcloud CCM use) and
// certificates (uploaded and managed; list, get, create, update, delete).
// Servers, networks and volumes are made with knobs (AddServer,
// AddNetwork, AddVolume), as a cluster's machines are made outside it.
package hetzner

import (
	"net/http"
	"sync"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"github.com/polyccm/polyccm/test/fakecloud/pathmatch"
)

// First IDs handed out, in the real API's ranges so they look plausible.
const (
	firstServerID = 60000001
	firstNetID    = 9000001
	firstLBID     = 2000001
	firstCertID   = 1000001
	firstVolumeID = 100000001
	firstActionID = 500000001
	firstIPID     = 70000001
)

// Server is a fake Hetzner Cloud API. Create it with New, then Start it,
// or mount Handler in a server of your own.
type Server struct {
	http   *fakehttp.Server
	routes pathmatch.Routes[route]

	mu    sync.Mutex
	token string
	now   func() time.Time

	// Delays of the actions by kind; see the Set*Delay knobs.
	actionDelay   time.Duration
	lbCreateDelay time.Duration
	certDelay     time.Duration
	healthDelay   time.Duration

	datacenters bool // serve /datacenters as before its removal

	servers  map[int64]*serverState
	networks map[int64]*networkState
	volumes  map[int64]*volumeState
	lbs      map[int64]*lbState
	certs    map[int64]*certState
	actions  map[int64]*actionState
	running  map[int64]*actionState // the actions still running, by ID
	failNext []failRule

	nextID map[string]int64 // by kind: "server", "network", ...
	nextIP int              // public IPv4/IPv6 allocations
}

// New returns a fake that accepts requests bearing token, with the real
// API's rate limit on.
func New(token string) *Server {
	s := &Server{
		http:     fakehttp.New("hetzner fake"),
		token:    token,
		now:      time.Now,
		servers:  map[int64]*serverState{},
		networks: map[int64]*networkState{},
		volumes:  map[int64]*volumeState{},
		lbs:      map[int64]*lbState{},
		certs:    map[int64]*certState{},
		actions:  map[int64]*actionState{},
		running:  map[int64]*actionState{},
		nextID: map[string]int64{
			"server": firstServerID, "network": firstNetID, "load_balancer": firstLBID,
			"certificate": firstCertID, "volume": firstVolumeID, "action": firstActionID, "ip": firstIPID,
		},
	}
	s.SetRateLimit(DefaultRateLimit, DefaultRefillPerSecond)
	s.registerCatalog()
	s.registerServers()
	s.registerNetworks()
	s.registerVolumes()
	s.registerActions()
	s.registerLoadBalancers()
	s.registerCertificates()
	return s
}

// Start serves the fake on a free port of 127.0.0.1.
func (s *Server) Start() error { return s.http.Start(s) }

// URL is the root of the listener, "http://127.0.0.1:PORT", without the
// "/v1" clients add (hcloud.WithEndpoint(URL()+"/v1")). It is "" before
// Start.
func (s *Server) URL() string { return s.http.URL() }

// Endpoint is the API endpoint for clients: URL()+"/v1".
func (s *Server) Endpoint() string { return s.URL() + "/v1" }

// Close stops the server, first releasing any request a Timeout rule holds.
func (s *Server) Close() { s.http.Close() }

// Handler returns the fake as an http.Handler, for mounting elsewhere. Mount
// it in an http.Server: abandoned requests abort with http.ErrAbortHandler,
// which the server recovers.
func (s *Server) Handler() http.Handler { return s }

// Faults returns the injector every request passes through.
func (s *Server) Faults() *faults.Injector { return s.http.Faults() }

// SetToken changes the accepted bearer token; requests with any other get
// 401, as after a token is revoked.
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// SetClock replaces the clock behind timestamps, action progress and
// target health (not the injector's latency or rate limit), so tests can
// move time without sleeping.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// SetActionDelay sets how long actions run (routes, load balancer
// services, targets, networks, type and algorithm changes, deletion). The
// default, 0, completes them within the request that starts them.
func (s *Server) SetActionDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actionDelay = d
}

// SetLoadBalancerCreateDelay sets how long a new load balancer's
// create_load_balancer action runs; the load balancer is locked
// meanwhile. The default is 0.
func (s *Server) SetLoadBalancerCreateDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lbCreateDelay = d
}

// SetCertificateIssueDelay sets how long a managed certificate's issuance
// stays "pending". The default is 0.
func (s *Server) SetCertificateIssueDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.certDelay = d
}

// SetTargetHealthDelay sets how long a new target reports "unknown"
// before its health checks pass ("healthy"). The default is 0.
func (s *Server) SetTargetHealthDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.healthDelay = d
}

// ServeDatacenters makes GET /v1/datacenters answer with the datacenters,
// as before 2026-10-01, instead of 410 deprecated_api_endpoint.
func (s *Server) ServeDatacenters(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.datacenters = on
}

// newIDLocked hands out the next ID of a kind.
func (s *Server) newIDLocked(kind string) int64 {
	id := s.nextID[kind]
	s.nextID[kind] = id + 1
	return id
}

// stamp is a time as the API writes it: second precision, "+00:00".
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05-07:00") }

// stampPtr is stamp for nullable times.
func stampPtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	v := stamp(t)
	return &v
}
