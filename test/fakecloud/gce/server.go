// Package gce is an in-memory fake of the Google Compute Engine API (compute
// v1, REST/JSON) and of the GCE metadata server. It speaks their wire
// formats: the same paths, JSON documents, list pagination and filters,
// long-running Operations, and Google error bodies, so the real
// cloud.google.com/go/compute/apiv1 REST clients and
// cloud.google.com/go/compute/metadata work against it unchanged.
//
// The JSON types are written here from the API's discovery document
// (google.golang.org/api/compute/v1/compute-api.json) rather than taken from
// computepb, so tests against the fake are an independent check of the
// client's encoding and decoding.
//
// Point a client at the fake with its base URL:
//
//	s := gce.New("my-project", "token")
//	s.Start()
//	c, _ := compute.NewFirewallsRESTClient(ctx,
//		option.WithEndpoint(s.URL()),
//		option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "token"})))
//
// Every request passes through a faults.Injector (Faults) for latency,
// injected errors, timeouts and rate limiting, and is counted by endpoint
// pattern, e.g. "GET /compute/v1/projects/{project}/aggregated/instances".
// A rule with AfterCommit lets a mutation take effect and then answers with
// the injected error.
//
// # Operations
//
// Every mutation answers with an Operation in RUNNING, and its change takes
// effect only when the operation is DONE, as on the real API, where a
// resource being inserted cannot be read until its operation completes. An
// operation completes SetOperationDelay after it started; with the default
// delay of 0 it is done from the next request on (any request, and any
// Go-side helper), so a client that Waits on it sees DONE at the first poll.
// While an operation on a resource is running, other mutations of that
// resource are refused with 400 resourceNotReady. SetSynchronousOperations
// makes mutations answer with their operation already DONE instead, so
// clients that poll never wait. FailOperations makes the
// next operations of a kind finish DONE with an error (and no effect), as
// quota and readiness failures do.
//
// Validation that the real API does when it accepts a request (names,
// required fields, references to missing resources, conflicts) fails the
// request synchronously with a Google error body; conflicts that only show
// when the operation runs (an IP address taken meanwhile) fail the
// operation.
//
// # Client notes
//
// The cloud.google.com/go/compute/apiv1 clients (v1.75.0) have no client
// for legacy HTTP health checks (global/httpHealthChecks), which target
// pools use; the discovery-based google.golang.org/api/compute/v1 service
// has one, and works against the fake with
// option.WithEndpoint(URL()+"/compute/v1/"). The apiv1 client's
// InstanceGroups.ListInstances sends the whole request message as its
// body (instanceState nested under
// instanceGroupsListInstancesRequestResource); the fake accepts that as
// well as the documented body. apiv1 retries 503 and 504 on its own;
// other injected statuses reach the caller at once.
//
// Implemented: zones and regions (list, get), networks and subnetworks
// (get, list), instances (list, aggregatedList, get; created with
// AddInstance), zonal and regional disks (list, aggregatedList, get;
// created with AddDisk), target pools, legacy HTTP health checks, global
// and regional health checks, forwarding rules, addresses, firewalls,
// regional backend services, unmanaged instance groups and routes (see
// their files for the methods), and zonal, regional and global
// operations (get, list, delete, wait).
package gce

import (
	"net/http"
	"sync"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"github.com/polyccm/polyccm/test/fakecloud/pathmatch"
)

// Server is a fake Compute Engine API. Create it with New, then Start it,
// or mount Handler in a server of your own.
type Server struct {
	http   *fakehttp.Server
	routes pathmatch.Routes[route]

	saOnce sync.Once
	sa     *serviceAccounts // keys issued by ServiceAccountKey

	mu            sync.Mutex
	token         string
	project       string
	projectNumber uint64
	now           func() time.Time
	opDelay       time.Duration
	syncOps       bool
	waitLimit     time.Duration
	base          string // base URL for Go-side links; set by Start or the first request
	nextID        uint64

	tpInsertLimit int
	tpCallLimit   int

	regions   map[string]*regionState // by name
	zones     map[string]*zoneState   // by name
	networks  map[string]*networkState
	subnets   map[string]*subnetState // by "region/name"
	instances map[string]*instanceState
	disks     map[string]*diskState

	// API-created resources, keyed by their path relative to
	// /compute/v1/ ("projects/p/regions/r/targetPools/x"), stored in wire
	// form with relative links.
	targetPools      map[string]*TargetPool
	httpHealthChecks map[string]*HTTPHealthCheck
	healthChecks     map[string]*HealthCheck
	forwardingRules  map[string]*ForwardingRule
	addresses        map[string]*Address
	firewalls        map[string]*Firewall
	backendServices  map[string]*BackendService
	instanceGroups   map[string]*InstanceGroup
	routesByPath     map[string]*Route
	// fwWatch sees every firewall rule after each change to them
	// (WatchFirewalls).
	fwWatch func([]Firewall)

	ops        map[string]*operation // by operation path
	pending    []*operation          // not DONE yet, in start order
	busy       map[string]*operation // target path -> running operation
	requestIDs map[string]*operation
	opFailures []*opFailure

	usedIPs map[string]string // IP -> path of what holds it
	extNext int               // next candidate in the external test ranges
	natNext int

	stats map[string]*ResourceStats
}

// Defaults New seeds: two regions with their zones, the auto-mode
// "default" network and its subnetworks in those regions, with the ranges
// GCE gives auto-mode networks there.
const (
	DefaultRegion = "us-central1"
	DefaultZone   = "us-central1-a"
	// DefaultNetwork is the network instances, firewalls and routes use
	// when none is given.
	DefaultNetwork = "default"
)

// DefaultProjectNumber is the numeric project id New assigns.
const DefaultProjectNumber = 123456789012

// Per-call target pool limits. The API documents none; these are the ones
// the Kubernetes GCE provider learnt to respect: at most 200 instances when
// creating a pool (kubernetes/kubernetes#27829) and at most 1000 per
// addInstance/removeInstance call (kubernetes/kubernetes#87881).
const (
	DefaultTargetPoolInsertLimit = 200
	DefaultTargetPoolCallLimit   = 1000
)

// New returns a fake serving one project and accepting requests bearing
// token. It starts with regions us-central1 (zones a, b, c, f) and
// us-east1 (zones b, c, d), and the auto-mode "default" network with
// subnetworks 10.128.0.0/20 and 10.142.0.0/20 in them.
func New(project, token string) *Server {
	s := &Server{
		http:             fakehttp.New("gce fake"),
		token:            token,
		project:          project,
		projectNumber:    DefaultProjectNumber,
		now:              time.Now,
		waitLimit:        2 * time.Minute,
		nextID:           firstID,
		tpInsertLimit:    DefaultTargetPoolInsertLimit,
		tpCallLimit:      DefaultTargetPoolCallLimit,
		regions:          map[string]*regionState{},
		zones:            map[string]*zoneState{},
		networks:         map[string]*networkState{},
		subnets:          map[string]*subnetState{},
		instances:        map[string]*instanceState{},
		disks:            map[string]*diskState{},
		targetPools:      map[string]*TargetPool{},
		httpHealthChecks: map[string]*HTTPHealthCheck{},
		healthChecks:     map[string]*HealthCheck{},
		forwardingRules:  map[string]*ForwardingRule{},
		addresses:        map[string]*Address{},
		firewalls:        map[string]*Firewall{},
		backendServices:  map[string]*BackendService{},
		instanceGroups:   map[string]*InstanceGroup{},
		routesByPath:     map[string]*Route{},
		ops:              map[string]*operation{},
		busy:             map[string]*operation{},
		requestIDs:       map[string]*operation{},
		usedIPs:          map[string]string{},
		stats:            map[string]*ResourceStats{},
	}
	for _, z := range []string{"a", "b", "c", "f"} {
		s.AddZone("us-central1", "us-central1-"+z)
	}
	for _, z := range []string{"b", "c", "d"} {
		s.AddZone("us-east1", "us-east1-"+z)
	}
	s.AddNetwork(Network{Name: DefaultNetwork, AutoCreateSubnetworks: true})
	s.AddSubnetwork(Subnetwork{Name: DefaultNetwork, Region: "us-central1", Network: DefaultNetwork, IPCidrRange: "10.128.0.0/20"})
	s.AddSubnetwork(Subnetwork{Name: DefaultNetwork, Region: "us-east1", Network: DefaultNetwork, IPCidrRange: "10.142.0.0/20"})

	s.registerOperations()
	s.registerLocations()
	s.registerInstances()
	s.registerDisks()
	s.registerTargetPools()
	s.registerHealthChecks()
	s.registerForwardingRules()
	s.registerAddresses()
	s.registerFirewalls()
	s.registerBackendServices()
	s.registerInstanceGroups()
	s.registerRoutes()
	return s
}

// Start serves the fake on a free port of 127.0.0.1.
func (s *Server) Start() error {
	if err := s.http.Start(s); err != nil {
		return err
	}
	s.mu.Lock()
	s.base = s.http.URL()
	s.mu.Unlock()
	return nil
}

// URL is the endpoint for clients, without a trailing slash, as
// option.WithEndpoint expects ("http://127.0.0.1:PORT"); the REST clients
// append "/compute/v1/projects/...". It is "" before Start.
func (s *Server) URL() string { return s.http.URL() }

// Close stops the server, first releasing any request a Timeout rule or an
// operation wait holds.
func (s *Server) Close() { s.http.Close() }

// Handler returns the fake as an http.Handler, for mounting elsewhere. Mount
// it in an http.Server: abandoned requests abort with http.ErrAbortHandler,
// which the server recovers. Links in responses use the request's host.
func (s *Server) Handler() http.Handler { return s }

// Faults returns the injector every request passes through.
func (s *Server) Faults() *faults.Injector { return s.http.Faults() }

// Project returns the project the fake serves.
func (s *Server) Project() string { return s.project }

// ProjectNumber returns the project's numeric id.
func (s *Server) ProjectNumber() uint64 { return s.projectNumber }

// SetToken changes the accepted bearer token; requests with any other get
// 401, as after a token is revoked.
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// SetOperationDelay sets how long operations stay RUNNING before they are
// DONE and their change takes effect. The default, 0, completes them at the
// next request.
func (s *Server) SetOperationDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opDelay = d
}

// SetSynchronousOperations makes mutations answer with their operation
// already DONE (its change made, or its failure recorded), as the API does
// for some quick changes, so a client never has to poll. It applies while
// the operation delay is 0; operations FailOperations fails still fail.
func (s *Server) SetSynchronousOperations(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncOps = on
}

// SetOperationWaitLimit sets how long an operations wait call holds before
// answering with the operation still RUNNING (the real API: about 2
// minutes, the default).
func (s *Server) SetOperationWaitLimit(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitLimit = d
}

// SetTargetPoolLimits sets how many instances a target pool insert, and an
// addInstance or removeInstance call, may name; more is refused with 400.
// Non-positive values keep the current limit.
func (s *Server) SetTargetPoolLimits(insert, perCall int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if insert > 0 {
		s.tpInsertLimit = insert
	}
	if perCall > 0 {
		s.tpCallLimit = perCall
	}
}

// SetClock replaces the clock behind timestamps and operation delays (not
// the injector's latency or rate limit), so tests can move time without
// sleeping.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// baseLocked is the base URL for links in what Go-side helpers return.
func (s *Server) baseLocked() string {
	if s.base == "" {
		return "https://compute.googleapis.com"
	}
	return s.base
}

// Ids are above 2^53, as real ones are, so a client that decodes them
// through float64 loses precision and shows it.
const (
	firstID = 7_000_000_000_000_000_001
	idStep  = 7919
)

func (s *Server) newIDLocked() uint64 {
	id := s.nextID
	s.nextID += idStep
	return id
}
