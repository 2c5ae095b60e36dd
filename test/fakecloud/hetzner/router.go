package hetzner

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// handlerFunc serves one matched route. It returns the status and the
// document to send as JSON; a nil body sends none. Errors are *apiError
// documents.
type handlerFunc func(r *http.Request, p params) (int, any)

// params holds the path's {name} segments.
type params map[string]string

type route struct {
	pattern string // as documented, e.g. "/v1/servers/{id}"
	handle  handlerFunc
}

// handle registers a route. Each resource's file registers its own.
func (s *Server) handle(method, pattern string, h handlerFunc) {
	s.routes.Add(method, pattern, route{pattern: pattern, handle: h})
}

// ServeHTTP takes a request through fault injection, authentication and
// routing, in that order: injected failures stand for trouble in front of
// the API, so they win over a bad token, and a bad token wins over an
// unknown path. A request the client abandons while held by the injector
// gets no answer: the handler aborts with http.ErrAbortHandler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, p, _, pattern := s.routes.Match(r.Method, r.URL.Path)
	endpoint := r.Method + " " + cmp.Or(pattern, r.URL.Path)
	rw := &replyWriter{w: w, correlationID: correlationID()}
	d, r, done := s.http.Intercept(r, endpoint)
	defer done()
	rw.quota = d.Quota
	status := s.serve(rw, r, d, rt, p)
	s.http.Record(endpoint, status)
}

func (s *Server) serve(rw *replyWriter, r *http.Request, d faults.Decision, rt *route, p params) int {
	if d.AfterCommit {
		s.commit(r, rt, p)
	}
	switch {
	case d.Throttled || d.Status == http.StatusTooManyRequests:
		return rw.reply(errRateLimited(quotaLimit(d.Quota)))
	case d.Status != 0:
		fakehttp.SetRetryAfter(rw.w.Header(), d.RetryAfter)
		return rw.reply(errStatus(d.Status))
	case !s.authorized(r):
		return rw.reply(errUnauthorized())
	case rt == nil:
		// The API answers unknown paths and methods alike with not_found.
		return rw.reply(errNotFound("not found"))
	default:
		return rw.reply(rt.handle(r, p))
	}
}

// commit serves a request whose answer an AfterCommit rule replaces: the
// API does the work as usual (a create creates) and the answer is dropped,
// as when a 5xx or a broken connection hides the outcome from the client.
// The body is buffered so the request can be read again if needed.
func (s *Server) commit(r *http.Request, rt *route, p params) {
	if rt == nil || !s.authorized(r) {
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	c := r.Clone(r.Context())
	c.Body = io.NopCloser(bytes.NewReader(body))
	_, _ = rt.handle(c, p)
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

// parseID reads a path ID: a positive decimal integer.
func parseID(v string) (int64, bool) {
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.ParseInt(v, 10, 64)
	return id, err == nil && id > 0
}

// decode reads a JSON request body into v. An empty body decodes as {}
// (actions without parameters send none). It returns the error answer,
// or 0 when the body was fine.
func decode(r *http.Request, v any) (int, any) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return errJSON()
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return errInvalid(te.Field, "is invalid")
		}
		return errJSON()
	}
	return 0, nil
}
