// Package openstack is an in-memory fake of an OpenStack cloud that speaks
// its wire formats: Keystone v3 (identity), Nova v2.1 (compute), Neutron
// v2.0 (network), Octavia v2 (load-balancer) and Cinder v3 (block
// storage), with the paths, JSON
// documents, microversions,
// pagination links, error bodies, status codes and request-ID headers of
// the real services, so gophercloud (or any other client) works against it
// unchanged. It is written for a driver that must stand in for
// kubernetes/cloud-provider-openstack, and serves what that CCM reads.
//
// Every service is on one listener. Keystone's catalog points each service
// at a sub-path of the same root, as devstack puts them behind one host:
//
//	/identity         Keystone (clients authenticate at AuthURL, /identity/v3)
//	/compute/v2.1     Nova
//	/network          Neutron (its API under /network/v2.0)
//	/load-balancer    Octavia (its API under /load-balancer/v2)
//	/volume/v3        Cinder (volumev3; the catalog's URL ends in the project)
//
// Regions added with AddRegion are served under /regions/<n>/, each with
// its own servers, ports, networks, routers and volumes, and share
// Keystone, as regions do.
//
// The JSON types are written from the API references rather than taken
// from gophercloud, so tests against the fake are an independent check of
// the client's decoding.
//
// Every request passes through a faults.Injector (Faults) for latency,
// injected errors, timeouts and rate limiting, and is counted under the
// name of its call, e.g. "compute.servers.list" (see the endpoint
// constants). OpenStack services do not throttle by themselves, so no rate
// limit is on until SetRateLimit or the injector's families turn one on.
//
// Servers, networks, routers, volumes and flavors are made with knobs
// (AddServer, AddNetwork, AddRouter, AddVolume, AddFlavor), as a
// cluster's machines are made outside it; the API writes what a CCM
// writes: Keystone's tokens, a router's routes, ports' address pairs,
// security groups and tags, floating IPs, and Octavia's load balancers,
// which knobs can also make (AddFloatingIP, AddSecurityGroup,
// AddLoadBalancer). Octavia's provisioning takes time: see
// SetLoadBalancerProvisioningDelay.
package openstack

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"github.com/polyccm/polyccm/test/fakecloud/pathmatch"
)

// Server is a fake OpenStack cloud. Create it with New, then Start it, or
// mount Handler in a server of your own.
type Server struct {
	http   *fakehttp.Server
	routes pathmatch.Routes[route]

	mu  sync.Mutex
	now func() time.Time

	account  Account
	regions  []string // regions[0] is served at the root, regions[k] under /regions/k
	appCreds map[string]*appCredState
	tokens   map[string]*tokenState
	// disabled refuses every credential, as a disabled user is refused.
	disabled      bool
	tokenLifetime time.Duration
	maxMicro      microversion

	servers  map[string]*serverState
	flavors  map[string]*Flavor
	networks map[string]*networkState
	subnets  map[string]*subnetState
	ports    map[string]*portState
	routers  map[string]*routerState
	volumes  map[string]*volumeState
	// netExts are the aliases of the Neutron extensions offered.
	netExts    []string
	routeQuota int // Neutron's quota_router_route; negative for none
	fips       map[string]*fipState
	sgs        map[string]*sgState
	sgRules    map[string]*sgRuleState
	defaultSGs map[string]string // each region's default security group, made when first needed
	oct        octaviaStore
	imageID    string // the image every server booted from
	seq        int64  // Nova's internal instance ids: ties in created_at sort by them
	nextMAC    int
}

// New returns a fake cloud with the identity of a, whose zero fields get
// defaults (see Account), and devstack's m1.* flavors.
func New(a Account) *Server {
	s := &Server{
		http:          fakehttp.New("openstack fake"),
		now:           time.Now,
		account:       a.withDefaults(),
		appCreds:      map[string]*appCredState{},
		tokens:        map[string]*tokenState{},
		tokenLifetime: DefaultTokenLifetime,
		maxMicro:      maxMicroversion,
		servers:       map[string]*serverState{},
		flavors:       map[string]*Flavor{},
		networks:      map[string]*networkState{},
		subnets:       map[string]*subnetState{},
		ports:         map[string]*portState{},
		routers:       map[string]*routerState{},
		volumes:       map[string]*volumeState{},
		netExts:       slices.Clone(defaultNetworkExtensions),
		routeQuota:    DefaultRouteQuota,
		fips:          map[string]*fipState{},
		sgs:           map[string]*sgState{},
		sgRules:       map[string]*sgRuleState{},
		defaultSGs:    map[string]string{},
		oct:           newOctaviaStore(),
		imageID:       newUUID(),
	}
	s.regions = []string{s.account.Region}
	for _, f := range defaultFlavors {
		s.AddFlavor(f)
	}
	s.registerVersions()
	s.registerKeystone()
	s.registerServers()
	s.registerFlavors()
	s.registerNetworks()
	s.registerPorts()
	s.registerRouters()
	s.registerExtensions()
	s.registerFloatingIPs()
	s.registerSecurityGroups()
	s.registerVolumes()
	s.registerOctavia()
	return s
}

// Start serves the fake on a free port of 127.0.0.1.
func (s *Server) Start() error { return s.http.Start(s) }

// URL is the root of the listener, "http://127.0.0.1:PORT", or "" before
// Start.
func (s *Server) URL() string { return s.http.URL() }

// AuthURL is Keystone's v3 endpoint, what clients are configured with
// (auth-url, OS_AUTH_URL): URL()+"/identity/v3".
func (s *Server) AuthURL() string { return s.URL() + "/identity/v3" }

// Close stops the server, first releasing any request a Timeout rule holds.
func (s *Server) Close() { s.http.Close() }

// Handler returns the fake as an http.Handler, for mounting elsewhere.
// Mount it in an http.Server: abandoned requests abort with
// http.ErrAbortHandler, which the server recovers.
func (s *Server) Handler() http.Handler { return s }

// Faults returns the injector every request passes through.
func (s *Server) Faults() *faults.Injector { return s.http.Faults() }

// SetClock replaces the clock behind timestamps and token expiry (not the
// injector's latency or rate limit), so tests can move time without
// sleeping.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// Regions lists the regions the catalog offers; the first is Account's.
func (s *Server) Regions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.regions)
}

// AddRegion adds a region to the catalog, with its own Nova and Neutron
// under /regions/<n>/ and no servers or networks of its own yet. It
// panics on a region the cloud has already: a mistake in the calling test.
func (s *Server) AddRegion(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == "" || slices.Contains(s.regions, name) {
		panic(fmt.Sprintf("openstack fake: region %q is empty or taken", name))
	}
	s.regions = append(s.regions, name)
}

// regionLocked resolves a spec's region: "" is the first.
func (s *Server) regionLocked(name string) string {
	if name == "" {
		return s.regions[0]
	}
	if !slices.Contains(s.regions, name) {
		panic("openstack fake: unknown region " + name)
	}
	return name
}

// regionPrefixLocked is where a region's services are served, relative to the
// root: "" for the first region, "/regions/<n>" for the others. An index
// rather than the name keeps the path free of anything that looks like a
// version ("v2" in "dev2"), which clients strip when they discover one.
func (s *Server) regionPrefixLocked(region string) string {
	k := slices.Index(s.regions, region)
	if k <= 0 {
		return ""
	}
	return fmt.Sprintf("/regions/%d", k)
}

// newUUID makes a resource ID as Nova and Neutron do: a version 4 UUID.
func newUUID() string { return fakehttp.RequestID() }

// newHexID makes an ID as Keystone does: a UUID's 32 hex digits.
func newHexID() string {
	var b []byte
	for _, c := range newUUID() {
		if c != '-' {
			b = append(b, byte(c))
		}
	}
	return string(b)
}

// stamp is a time as Nova and Neutron write it: second precision, "Z".
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// stampMicro is a time as Keystone writes it: microseconds, "Z".
func stampMicro(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// stampNoZone is a time as Nova's OS-SRV-USG fields write it: microseconds,
// no zone.
func stampNoZone(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000") }
