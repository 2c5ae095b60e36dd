package digitalocean

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

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
	endpoint := r.Method + " " + cmpOr(pattern, r.URL.Path)
	rw := &replyWriter{w: w, requestID: newRequestID()}

	// Release held requests when the server closes, not only when the
	// client gives up.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.stop, cancel)()

	d := s.faults.Intercept(ctx, endpoint)
	if d.Abandoned {
		// Break the connection rather than answer: if the server is
		// closing under a waiting client, that is what the client would
		// see of a real API that never answered.
		panic(http.ErrAbortHandler)
	}
	rw.quota = d.Quota
	status := s.serve(rw, r, d, rt, p, allowed)
	s.faults.Record(endpoint, status)
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

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // UUID v4, like the real x-request-id
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// writeJSON is the one place bodies are encoded.
func writeJSON(w http.ResponseWriter, status int, body any) {
	if body == nil {
		w.WriteHeader(status)
		return
	}
	b, err := json.Marshal(body)
	if err != nil {
		// A fake that cannot encode its own types is broken; say so loudly.
		panic(fmt.Sprintf("digitalocean fake: encoding %T: %v", body, err))
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
