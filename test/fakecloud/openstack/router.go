package openstack

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// The services, by the first segment of their paths (and their catalog
// types, but for Cinder's "volumev3").
const (
	svcIdentity     = "identity"
	svcCompute      = "compute"
	svcNetwork      = "network"
	svcLoadBalancer = "load-balancer"
	svcVolume       = "volume"
	svcImage        = "image"
)

// The names calls are counted and matched by in Faults (CallCount, rules:
// "compute.*" matches every Nova call). A request no route takes is
// counted as "METHOD /path", as in the other fakes.
const (
	IdentityVersions = "identity.versions"      // GET /identity
	IdentityVersion  = "identity.version"       // GET /identity/v3
	TokensCreate     = "identity.tokens.create" // POST /identity/v3/auth/tokens
	TokensGet        = "identity.tokens.get"    // GET /identity/v3/auth/tokens
	TokensCheck      = "identity.tokens.check"  // HEAD /identity/v3/auth/tokens
	TokensRevoke     = "identity.tokens.revoke" // DELETE /identity/v3/auth/tokens

	ComputeVersions = "compute.versions"     // GET /compute
	ComputeVersion  = "compute.version"      // GET /compute/v2.1
	ServersList     = "compute.servers.list" // GET /compute/v2.1/servers/detail
	ServersGet      = "compute.servers.get"  // GET /compute/v2.1/servers/{id}
	FlavorsList     = "compute.flavors.list" // GET /compute/v2.1/flavors/detail
	FlavorsGet      = "compute.flavors.get"  // GET /compute/v2.1/flavors/{id}

	NetworkVersions = "network.versions"      // GET /network
	NetworksList    = "network.networks.list" // GET /network/v2.0/networks
	NetworksGet     = "network.networks.get"  // GET /network/v2.0/networks/{id}
	SubnetsList     = "network.subnets.list"  // GET /network/v2.0/subnets
	SubnetsGet      = "network.subnets.get"   // GET /network/v2.0/subnets/{id}
	PortsList       = "network.ports.list"    // GET /network/v2.0/ports
	PortsGet        = "network.ports.get"     // GET /network/v2.0/ports/{id}
	PortsUpdate     = "network.ports.update"  // PUT /network/v2.0/ports/{id}

	PortTagsReplace = "network.ports.tags.replace" // PUT /network/v2.0/ports/{id}/tags
	PortTagsAdd     = "network.ports.tags.add"     // PUT /network/v2.0/ports/{id}/tags/{tag}
	PortTagsDelete  = "network.ports.tags.delete"  // DELETE /network/v2.0/ports/{id}/tags/{tag}

	FloatingIPsList   = "network.floatingips.list"   // GET /network/v2.0/floatingips
	FloatingIPsCreate = "network.floatingips.create" // POST /network/v2.0/floatingips
	FloatingIPsGet    = "network.floatingips.get"    // GET /network/v2.0/floatingips/{id}
	FloatingIPsUpdate = "network.floatingips.update" // PUT /network/v2.0/floatingips/{id}
	FloatingIPsDelete = "network.floatingips.delete" // DELETE /network/v2.0/floatingips/{id}

	SecurityGroupsList   = "network.security-groups.list"   // GET /network/v2.0/security-groups
	SecurityGroupsCreate = "network.security-groups.create" // POST /network/v2.0/security-groups
	SecurityGroupsGet    = "network.security-groups.get"    // GET /network/v2.0/security-groups/{id}
	SecurityGroupsUpdate = "network.security-groups.update" // PUT /network/v2.0/security-groups/{id}
	SecurityGroupsDelete = "network.security-groups.delete" // DELETE /network/v2.0/security-groups/{id}

	SecurityGroupRulesList   = "network.security-group-rules.list"   // GET /network/v2.0/security-group-rules
	SecurityGroupRulesCreate = "network.security-group-rules.create" // POST /network/v2.0/security-group-rules
	SecurityGroupRulesGet    = "network.security-group-rules.get"    // GET /network/v2.0/security-group-rules/{id}
	SecurityGroupRulesDelete = "network.security-group-rules.delete" // DELETE /network/v2.0/security-group-rules/{id}

	RoutersList              = "network.routers.list"               // GET /network/v2.0/routers
	RoutersGet               = "network.routers.get"                // GET /network/v2.0/routers/{id}
	RoutersUpdate            = "network.routers.update"             // PUT /network/v2.0/routers/{id}
	RoutersAddExtraRoutes    = "network.routers.add_extraroutes"    // PUT /network/v2.0/routers/{id}/add_extraroutes
	RoutersRemoveExtraRoutes = "network.routers.remove_extraroutes" // PUT /network/v2.0/routers/{id}/remove_extraroutes
	ExtensionsList           = "network.extensions.list"            // GET /network/v2.0/extensions
	ExtensionsGet            = "network.extensions.get"             // GET /network/v2.0/extensions/{alias}

	// Octavia's paths are under /load-balancer/v2/lbaas.
	LoadBalancerVersions      = "load-balancer.versions"              // GET /load-balancer
	LoadBalancersList         = "load-balancer.loadbalancers.list"    // GET .../loadbalancers
	LoadBalancersCreate       = "load-balancer.loadbalancers.create"  // POST .../loadbalancers
	LoadBalancersGet          = "load-balancer.loadbalancers.get"     // GET .../loadbalancers/{id}
	LoadBalancersUpdate       = "load-balancer.loadbalancers.update"  // PUT .../loadbalancers/{id}
	LoadBalancersDelete       = "load-balancer.loadbalancers.delete"  // DELETE .../loadbalancers/{id}[?cascade=true]
	LoadBalancersStatus       = "load-balancer.loadbalancers.status"  // GET .../loadbalancers/{id}/status (or /statuses)
	ListenersList             = "load-balancer.listeners.list"        // GET .../listeners
	ListenersCreate           = "load-balancer.listeners.create"      // POST .../listeners
	ListenersGet              = "load-balancer.listeners.get"         // GET .../listeners/{id}
	ListenersUpdate           = "load-balancer.listeners.update"      // PUT .../listeners/{id}
	ListenersDelete           = "load-balancer.listeners.delete"      // DELETE .../listeners/{id}
	PoolsList                 = "load-balancer.pools.list"            // GET .../pools
	PoolsCreate               = "load-balancer.pools.create"          // POST .../pools
	PoolsGet                  = "load-balancer.pools.get"             // GET .../pools/{id}
	PoolsUpdate               = "load-balancer.pools.update"          // PUT .../pools/{id}
	PoolsDelete               = "load-balancer.pools.delete"          // DELETE .../pools/{id}
	MembersList               = "load-balancer.members.list"          // GET .../pools/{pool}/members
	MembersCreate             = "load-balancer.members.create"        // POST .../pools/{pool}/members
	MembersBatchUpdate        = "load-balancer.members.batch_update"  // PUT .../pools/{pool}/members
	MembersGet                = "load-balancer.members.get"           // GET .../pools/{pool}/members/{id}
	MembersUpdate             = "load-balancer.members.update"        // PUT .../pools/{pool}/members/{id}
	MembersDelete             = "load-balancer.members.delete"        // DELETE .../pools/{pool}/members/{id}
	HealthMonitorsList        = "load-balancer.healthmonitors.list"   // GET .../healthmonitors
	HealthMonitorsCreate      = "load-balancer.healthmonitors.create" // POST .../healthmonitors
	HealthMonitorsGet         = "load-balancer.healthmonitors.get"    // GET .../healthmonitors/{id}
	HealthMonitorsUpdate      = "load-balancer.healthmonitors.update" // PUT .../healthmonitors/{id}
	HealthMonitorsDelete      = "load-balancer.healthmonitors.delete" // DELETE .../healthmonitors/{id}
	LoadBalancerProvidersList = "load-balancer.providers.list"        // GET .../providers
	LoadBalancerFlavorsList   = "load-balancer.flavors.list"          // GET .../flavors

	// Cinder's paths may carry the project ("/volume/v3/{project_id}/volumes",
	// as the catalog gives them) or not (from 3.67); both count alike.
	VolumeVersions = "volume.versions"     // GET /volume
	ImageVersions  = "image.versions"      // GET /image (Glance's API is not served)
	VolumesList    = "volume.volumes.list" // GET /volume/v3/{project_id}/volumes/detail
	VolumesGet     = "volume.volumes.get"  // GET /volume/v3/{project_id}/volumes/{id}
)

// handlerFunc serves one matched route. It returns the status and the
// document to send as JSON; a nil body sends none. A *headed body also
// sets response headers.
type handlerFunc func(c *call) (int, any)

// params holds the path's {name} segments.
type params map[string]string

type route struct {
	service string
	name    string // what the call is counted and matched by, e.g. "compute.servers.list"
	// public routes answer without a token: version documents, and
	// Keystone's token issue, which checks credentials of its own.
	public bool
	slash  bool // also served with a trailing slash
	handle handlerFunc
}

// call is one request as a handler sees it.
type call struct {
	r      *http.Request
	p      params
	region string
	// root is scheme://host and the region's prefix, what links start with.
	root string
	// host is scheme://host alone, for Keystone, which every region shares.
	host string
	mv   microversion // the microversion asked for, of Nova or Cinder; zero elsewhere
}

// handle registers a route; pattern is the path from the region's root,
// e.g. "/compute/v2.1/servers/{id}". Each resource's file registers its own.
func (s *Server) handle(service, method, pattern, name string, h handlerFunc) *route {
	return s.routes.Add(method, pattern, route{service: service, name: name, handle: h})
}

// handlePublic registers a route answered without a token.
func (s *Server) handlePublic(service, method, pattern, name string, h handlerFunc) {
	s.handle(service, method, pattern, name, h).public = true
}

// match routes a path. Version documents are also found with a trailing
// slash, as the services serve them (pathmatch treats "/x/" as "/x" in
// patterns but not in paths).
func (s *Server) match(method, path string) (*route, params, []string) {
	rt, p, allowed, _ := s.routes.Match(method, path)
	if rt == nil && len(path) > 1 && strings.HasSuffix(path, "/") {
		if rt2, p2, _, _ := s.routes.Match(method, strings.TrimSuffix(path, "/")); rt2 != nil && rt2.slash {
			return rt2, p2, nil
		}
	}
	return rt, p, allowed
}

// ServeHTTP takes a request through fault injection, authentication and
// routing, in that order: injected failures stand for trouble in front of
// the API, so they win over a bad token; keystonemiddleware checks the
// token before the service routes, so a bad token wins over an unknown
// path. A request the client abandons while held by the injector gets no
// answer: the handler aborts with http.ErrAbortHandler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	region, prefix, path, known := s.splitRegion(r.URL.Path)
	var rt *route
	var p params
	var allowed []string
	if known {
		rt, p, allowed = s.match(r.Method, path)
	}
	endpoint := r.Method + " " + r.URL.Path
	if rt != nil {
		endpoint = rt.name
	}
	d, r, done := s.http.Intercept(r, endpoint)
	defer done()
	host := scheme(r) + "://" + r.Host
	c := &call{r: r, p: p, region: region, root: host + prefix, host: host}
	rw := &replyWriter{w: w, service: serviceOf(path), requestID: "req-" + newUUID(), keystone: host + "/identity"}
	status := s.serve(rw, c, d, rt, known, allowed)
	s.http.Record(endpoint, status)
}

func (s *Server) serve(rw *replyWriter, c *call, d faults.Decision, rt *route, known bool, allowed []string) int {
	if d.AfterCommit {
		s.commit(c, rt)
	}
	switch {
	case d.Throttled || d.Status == http.StatusTooManyRequests || d.Status == http.StatusRequestEntityTooLarge:
		retry := max(d.RetryAfter, minRetryAfter)
		setRetryAfter(rw.w.Header(), retry)
		return rw.reply(errOverLimit(rw.service, d.Status, retry))
	case d.Status != 0:
		setRetryAfter(rw.w.Header(), d.RetryAfter)
		return rw.reply(errStatus(rw.service, d.Status))
	case rt == nil && (!known || rw.service == svcIdentity || rw.service == ""):
		// Keystone routes before it authenticates; paths of no
		// service have nothing in front that checks tokens.
		return rw.reply(errNoRoute(rw.service, allowed))
	case (rt == nil || !rt.public) && !s.authorized(c.r):
		return rw.reply(errUnauthorized())
	case rt == nil:
		return rw.reply(errNoRoute(rw.service, allowed))
	}
	if versioned(rt) {
		mv, status, body := s.microversionFor(rt.service, c.r)
		if status != 0 {
			return rw.reply(status, body)
		}
		c.mv, rw.mv = mv, &mv
	}
	// Octavia's operations whose time has come are done before anything
	// is read or changed.
	s.settle()
	return rw.reply(rt.handle(c))
}

// commit serves a request whose answer an AfterCommit rule replaces: the
// service does the work as usual (a token is issued) and the answer is
// dropped. The body is buffered so the request can be read again.
func (s *Server) commit(c *call, rt *route) {
	if rt == nil || (!rt.public && !s.authorized(c.r)) {
		return
	}
	body, _ := io.ReadAll(c.r.Body)
	c.r.Body = io.NopCloser(bytes.NewReader(body))
	cc := *c
	cc.r = c.r.Clone(c.r.Context())
	cc.r.Body = io.NopCloser(bytes.NewReader(body))
	if versioned(rt) {
		mv, status, _ := s.microversionFor(rt.service, cc.r)
		if status != 0 {
			return
		}
		cc.mv = mv
	}
	s.settle()
	_, _ = rt.handle(&cc)
}

// versioned says whether a route's service reads a microversion from the
// request: Nova's and Cinder's APIs do, their version documents do not.
func versioned(rt *route) bool {
	return !rt.public && (rt.service == svcCompute || rt.service == svcVolume)
}

// microversionFor reads the microversion a request asks of the service.
func (s *Server) microversionFor(service string, r *http.Request) (microversion, int, any) {
	if service == svcVolume {
		return requestedVolumeMicroversion(r)
	}
	return s.requestedMicroversion(r)
}

// splitRegion takes the region's prefix off a path: the first region is
// served at the root, the others under /regions/<n>. known is false for a
// region index the cloud does not have.
func (s *Server) splitRegion(path string) (region, prefix, rest string, known bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	after, ok := strings.CutPrefix(path, "/regions/")
	if !ok {
		return s.regions[0], "", path, true
	}
	idx, rest, _ := strings.Cut(after, "/")
	k, err := strconv.Atoi(idx)
	if err != nil || k < 1 || k >= len(s.regions) || idx != strconv.Itoa(k) {
		return "", "", path, false
	}
	return s.regions[k], "/regions/" + idx, "/" + rest, true
}

// serviceOf names the service a path belongs to, by its first segment.
func serviceOf(path string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	switch first {
	case svcIdentity, svcCompute, svcNetwork, svcLoadBalancer, svcVolume:
		return first
	}
	return ""
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}
