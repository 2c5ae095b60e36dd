// Package digitalocean is an in-memory fake of the DigitalOcean API v2 that
// speaks its wire format: the same paths, JSON documents, pagination links,
// status codes, error bodies and rate-limit headers, so the real godo client
// (or any other) works against it unchanged.
//
// The JSON types are written here from the API reference rather than taken
// from godo, so tests against the fake are an independent check of the
// client's decoding.
//
// Every request passes through a faults.Injector (Faults) for latency,
// injected errors, timeouts and rate limiting, and is counted by endpoint
// pattern, e.g. "GET /v2/droplets/{id}".
//
// A rule with AfterCommit (see package faults) lets the request take effect
// and then answers with the injected error, so tests can see how clients
// cope with a create whose outcome they never learnt.
//
// Implemented: droplets (list with paging and tag_name/name filters, get,
// create, delete), droplet actions (power_on, power_off, shutdown, reboot,
// power_cycle; get), actions (get), account (get), load balancers (list
// with paging and names/uuids filters, get, create, update, delete, add and
// remove droplets and forwarding rules), certificates (list with paging
// and name filter, get; created with AddCertificate) and block storage
// volumes (list with paging and region/name filters, get; created with
// AddVolume), tags (list with paging, get, create, delete, tag and untag
// droplets, load balancers and volumes) and reserved IPs (list with
// paging, get, create, delete; created with AddReservedIP too), which
// load balancers take as their create-only BYOIP ip, and Cloud Firewalls
// (list with paging, get, create, update, delete, add and remove rules,
// tags and droplets; "waiting" until a change settles).
package digitalocean

import (
	"net/http"
	"sync"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"github.com/polyccm/polyccm/test/fakecloud/pathmatch"
)

// Server is a fake DigitalOcean API. Create it with New, then Start it, or
// mount Handler in a server of your own.
type Server struct {
	http   *fakehttp.Server
	routes pathmatch.Routes[route]

	mu              sync.Mutex
	token           string
	now             func() time.Time
	activationDelay time.Duration
	actionDelay     time.Duration
	droplets        map[int]*Droplet
	actions         map[int]*actionState
	nextDropletID   int
	nextActionID    int
	nextAddr        int

	lbActivationDelay time.Duration
	lbs               map[string]*lbState
	lbSeq             int // creation order, to list load balancers stably
	lbStats           LBStats
	certs             map[string]*certState
	certSeq           int
	volumes           map[string]*volumeState
	volumeSeq         int
	fw                firewallStore // firewalls.go
	tags              map[string]*tagState
	reservedIPs       map[string]*reservedIPState
	reservedIPSeq     int
}

// New returns a fake that accepts requests bearing token.
func New(token string) *Server {
	s := &Server{
		http:          fakehttp.New("digitalocean fake"),
		token:         token,
		now:           time.Now,
		droplets:      map[int]*Droplet{},
		actions:       map[int]*actionState{},
		nextDropletID: firstDropletID,
		nextActionID:  firstActionID,
		lbs:           map[string]*lbState{},
		certs:         map[string]*certState{},
		volumes:       map[string]*volumeState{},
		tags:          map[string]*tagState{},
		reservedIPs:   map[string]*reservedIPState{},
	}
	s.registerAccount()
	s.registerDroplets()
	s.registerActions()
	s.registerLoadBalancers()
	s.registerCertificates()
	s.registerVolumes()
	s.registerFirewalls()
	s.registerTags()
	s.registerReservedIPs()
	return s
}

// Start serves the fake on a free port of 127.0.0.1.
func (s *Server) Start() error { return s.http.Start(s) }

// URL is the base URL for clients, with a trailing slash as
// godo.SetBaseURL expects ("http://127.0.0.1:PORT/"). It is "" before Start.
func (s *Server) URL() string {
	if u := s.http.URL(); u != "" {
		return u + "/"
	}
	return ""
}

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

// SetActivationDelay sets how long droplets created through the API stay
// "new" (without addresses) before turning "active". The default, 0, makes
// them active from the next read on.
func (s *Server) SetActivationDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.activationDelay = d
}

// SetLoadBalancerActivationDelay sets how long load balancers created
// through the API stay "new" (without an IP, refusing updates) before
// turning "active". The default, 0, makes them active from the next read
// on.
func (s *Server) SetLoadBalancerActivationDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lbActivationDelay = d
}

// SetActionDelay sets how long droplet actions stay "in-progress"; the
// droplet's status changes when the action completes. The default, 0,
// completes them at once.
func (s *Server) SetActionDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actionDelay = d
}

// SetClock replaces the clock behind timestamps, droplet and load balancer
// activation and action delays (not the injector's latency or rate limit),
// so tests can move time without sleeping.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}
