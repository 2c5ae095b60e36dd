package digitalocean

import (
	"cmp"
	"net/http"
	"strings"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// handlerFunc serves one matched route. It returns the status and the
// document to send as JSON; a nil body sends none. Errors are *apiError
// bodies, to which the router adds the request id.
type handlerFunc func(r *http.Request, p params) (int, any)

// params holds the path's {name} segments.
type params map[string]string

type route struct {
	method  string
	pattern string // as documented, e.g. "/v2/droplets/{id}"
	handle  handlerFunc
}

// handle registers a route. Each resource's file registers its own, so new
// resources (load balancers, ...) slot in without touching the router.
func (s *Server) handle(method, pattern string, h handlerFunc) {
	s.routes.Add(method, pattern, route{method: method, pattern: pattern, handle: h})
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
	rt, p, allowed, pattern := s.match(r.Method, r.URL.Path)
	endpoint := r.Method + " " + cmp.Or(pattern, r.URL.Path)
	rw := &replyWriter{w: w, requestID: fakehttp.RequestID()}
	d, r, done := s.http.Intercept(r, endpoint)
	defer done()
	rw.quota = d.Quota
	status := s.serve(rw, r, d, rt, p, allowed)
	s.http.Record(endpoint, status)
}

func (s *Server) serve(rw *replyWriter, r *http.Request, d faults.Decision, rt *route, p params, allowed []string) int {
	if d.AfterCommit {
		s.commit(r, rt, p)
	}
	switch {
	case d.Throttled || d.Status == http.StatusTooManyRequests:
		return rw.tooManyRequests(d.RetryAfter)
	case d.Status != 0:
		return rw.injected(d.Status, d.RetryAfter)
	case !s.authorized(r):
		return rw.reply(errUnauthorized())
	case rt == nil && len(allowed) > 0:
		rw.w.Header().Set("Allow", strings.Join(allowed, ", "))
		return rw.reply(errMethodNotAllowed())
	case rt == nil:
		return rw.reply(errNotFound())
	default:
		return rw.reply(rt.handle(r, p))
	}
}

// commit serves a request whose answer an AfterCommit rule replaces: the
// API does the work as usual (a create creates) and the answer is dropped,
// as when a 5xx or a broken connection hides the outcome from the client.
// Handlers return their answer rather than write it, so dropping it is
// discarding the return values. A request the API would have refused
// (bad token, unknown route) changes nothing either way.
func (s *Server) commit(r *http.Request, rt *route, p params) {
	if rt == nil || !s.authorized(r) {
		return
	}
	_, _ = rt.handle(r, p)
}

// authorized checks the bearer token. The scheme is case-insensitive, as
// RFC 6750 allows.
func (s *Server) authorized(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return tok == s.token
}
