package gce

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// call is one request as a handler sees it.
type call struct {
	r    *http.Request
	rt   *route
	p    params
	base string // scheme://host the client reached us at, for links
}

// handlerFunc serves one matched route and returns the status and the
// document to send as JSON; a nil body sends an empty one. Handlers run
// with the server's lock held, after due operations have completed,
// unless their route is registered with handleUnlocked.
type handlerFunc func(c *call) (int, any)

// params holds the path's {name} segments.
type params map[string]string

type route struct {
	method   string
	pattern  string // as in the discovery document, e.g. "/compute/v1/projects/{project}/zones/{zone}/instances"
	handle   handlerFunc
	unlocked bool
	mutating bool // starts an operation: requestId applies
}

const apiPrefix = "/compute/v1/"

// handle registers a route under /compute/v1/; pattern is the discovery
// document's flatPath ("projects/{project}/zones/{zone}/instances").
func (s *Server) handle(method, pattern string, h handlerFunc) *route {
	return s.routes.Add(method, apiPrefix+pattern, route{method: method, pattern: apiPrefix + pattern, handle: h})
}

// handleOp registers a route that starts an operation.
func (s *Server) handleOp(method, pattern string, h handlerFunc) {
	s.handle(method, pattern, h).mutating = true
}

// handleUnlocked registers a route whose handler takes the lock itself
// (operation waits, which must not hold it while they wait).
func (s *Server) handleUnlocked(method, pattern string, h handlerFunc) {
	s.handle(method, pattern, h).unlocked = true
}

func (s *Server) match(method, path string) (*route, params, []string, string) {
	rt, p, allowed, pattern := s.routes.Match(method, path)
	return rt, p, allowed, pattern
}

// ServeHTTP takes a request through fault injection, authentication and
// routing, in that order: injected failures stand for trouble in front of
// the API, so they win over a bad token, and a bad token wins over an
// unknown path. A request the client abandons while held by the injector
// gets no answer: the handler aborts with http.ErrAbortHandler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == TokenPath {
		// The OAuth endpoint is oauth2.googleapis.com, not the API: no
		// API faults, and it issues the tokens rather than checking them.
		s.serveToken(w, r)
		return
	}
	rt, p, allowed, pattern := s.match(r.Method, r.URL.Path)
	endpoint := r.Method + " " + cmp.Or(pattern, r.URL.Path)

	d, r, done := s.http.Intercept(r, endpoint)
	defer done()
	c := &call{r: r, p: p, base: baseURL(r)}
	s.mu.Lock()
	if s.base == "" {
		s.base = c.base
	}
	s.mu.Unlock()
	status := s.serve(w, c, d, rt, allowed)
	s.http.Record(endpoint, status)
}

func (s *Server) serve(w http.ResponseWriter, c *call, d faults.Decision, rt *route, allowed []string) int {
	if d.AfterCommit {
		// The API does the work as usual (an insert starts its
		// operation) and the answer is lost.
		s.dispatch(c, rt, nil)
	}
	var status int
	var body any
	switch {
	case d.Throttled:
		status, body = errRateLimited(d.Status, s.projectNumber)
	case d.Status != 0:
		status, body = errInjected(d.Status, s.projectNumber)
	default:
		status, body = s.dispatch(c, rt, allowed)
	}
	return reply(w, d.RetryAfter, status, body)
}

// dispatch authenticates and routes a request. allowed is nil when the
// answer will be discarded (AfterCommit).
func (s *Server) dispatch(c *call, rt *route, allowed []string) (int, any) {
	if missing, ok := s.authorized(c.r); !ok {
		return errUnauthenticated(missing)
	}
	if rt == nil && len(allowed) > 0 {
		return newError(http.StatusMethodNotAllowed, "httpMethodNotAllowed", fmt.Sprintf("HTTP method %s is not supported by this URL", c.r.Method))
	}
	if rt == nil {
		return newError(http.StatusNotFound, "notFound", fmt.Sprintf("The requested URL %s was not found on this server.", c.r.URL.Path))
	}
	c.rt = rt
	if rt.unlocked {
		return rt.handle(c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	if status, body := s.checkScopeLocked(rt, c.p); status != 0 {
		return status, body
	}
	if rt.mutating {
		if status, body := s.replayLocked(c); status != 0 {
			return status, body
		}
	}
	return rt.handle(c)
}

// checkScopeLocked refuses requests for another project (404, as for a
// project that does not exist) and for unknown zones and regions (400, in
// the API's words). A get of the zone or region itself is left to its
// handler, which answers 404.
func (s *Server) checkScopeLocked(rt *route, p params) (int, any) {
	if proj, ok := p["project"]; ok && proj != s.project {
		return errNotFound("projects/" + proj)
	}
	self := strings.HasSuffix(rt.pattern, "/zones/{zone}") || strings.HasSuffix(rt.pattern, "/regions/{region}")
	if z, ok := p["zone"]; ok && !self && s.zones[z] == nil {
		return errInvalidField("zone", z, "Unknown zone.")
	}
	if rg, ok := p["region"]; ok && !self && s.regions[rg] == nil {
		return errInvalidField("region", rg, "Unknown region.")
	}
	return 0, nil
}

// authorized checks the bearer token; missing says no credentials came at
// all.
func (s *Server) authorized(r *http.Request) (missing, ok bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return true, false
	}
	scheme, tok, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return false, tok == s.token
}

// reply writes a handler's result and returns the status written.
func reply(w http.ResponseWriter, retryAfter time.Duration, status int, body any) int {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=UTF-8")
	h.Set("Vary", "Origin, X-Origin, Referer")
	if status == http.StatusUnauthorized {
		challenge := `Bearer realm="https://accounts.google.com/"`
		if e, ok := body.(*apiError); ok && e.Error.Errors[0].Reason == "authError" {
			challenge += `, error="invalid_token"`
		}
		h.Set("WWW-Authenticate", challenge)
	}
	fakehttp.SetRetryAfter(h, retryAfter)
	fakehttp.WriteJSON(w, status, body)
	return status
}

// baseURL is the absolute root the client reached us at, without a
// trailing slash.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
