// Package fakehttp is the HTTP side every fake cloud shares: a listener
// on 127.0.0.1 with its lifecycle, the fault injector every request passes
// through (latency, injected errors, timeouts, rate limits), request IDs
// and the encoders. A fake supplies its routing and its wire formats;
// this package does the rest the same way for all of them.
package fakehttp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// Server is one fake's listener and injector. Create it with New, then
// Start it with the fake as the handler.
type Server struct {
	name   string
	faults *faults.Injector
	// stop ends requests the injector holds (Timeout rules, waits) when
	// the server closes, since httptest.Server.Close waits for them.
	stop   context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	ts *httptest.Server
}

// New returns an unstarted server; name ("aws fake") starts its errors.
func New(name string) *Server {
	stop, cancel := context.WithCancel(context.Background())
	return &Server{name: name, faults: faults.New(), stop: stop, cancel: cancel}
}

// Start serves h on a free port of 127.0.0.1.
func (s *Server) Start(h http.Handler) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ts != nil {
		return errors.New(s.name + ": already started")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("%s: listen: %w", s.name, err)
	}
	// httptest.Server rather than http.Server: Close then waits for
	// in-flight handlers, so nothing touches the fake after a test ends.
	s.ts = &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	s.ts.Start()
	return nil
}

// URL is the root of the listener, "http://127.0.0.1:PORT", or "" before
// Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ts == nil {
		return ""
	}
	return s.ts.URL
}

// Close stops the server, first releasing any request the injector holds.
func (s *Server) Close() {
	s.cancel()
	s.mu.Lock()
	ts := s.ts
	s.mu.Unlock()
	if ts != nil {
		ts.Close()
	}
}

// Closing ends when the server closes: waits inside handlers (an
// operation a client waits on) select on it too.
func (s *Server) Closing() <-chan struct{} { return s.stop.Done() }

// Faults is the injector every request passes through.
func (s *Server) Faults() *faults.Injector { return s.faults }

// Intercept passes r through the injector as endpoint (the name its calls
// are counted and matched by, e.g. "GET /v2/droplets/{id}"), with a
// context that also ends when the server closes. It returns the decision
// and r with that context; call done when the request is answered. A
// request whose client gave up while held gets no answer: the handler
// aborts with http.ErrAbortHandler, which breaks the connection, as an API
// that never answered would.
func (s *Server) Intercept(r *http.Request, endpoint string) (d faults.Decision, _ *http.Request, done func()) {
	ctx, cancel := context.WithCancel(r.Context())
	stopAfter := context.AfterFunc(s.stop, cancel)
	done = func() {
		stopAfter()
		cancel()
	}
	d = s.faults.Intercept(ctx, endpoint)
	if d.Abandoned {
		done()
		panic(http.ErrAbortHandler)
	}
	return d, r.WithContext(ctx), done
}

// Record counts an answer to endpoint with its status.
func (s *Server) Record(endpoint string, status int) { s.faults.Record(endpoint, status) }

// RequestID makes a request ID as the clouds do: a version 4 UUID.
func RequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// SetRetryAfter sets the Retry-After header to d in whole seconds, rounded
// up, as the APIs send it; nothing for d <= 0.
func SetRetryAfter(h http.Header, d time.Duration) {
	if d > 0 {
		h.Set("Retry-After", strconv.Itoa(int((d+time.Second-1)/time.Second)))
	}
}

// WriteJSON writes status and body as JSON (no body for nil). A fake that
// cannot encode its own types is broken, and says so loudly.
func WriteJSON(w http.ResponseWriter, status int, body any) {
	if body == nil {
		w.WriteHeader(status)
		return
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic(fmt.Sprintf("fake: encoding %T: %v", body, err))
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// XMLHeader starts every XML document the query APIs send.
const XMLHeader = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

// EncodeXML encodes v as an XML document with its header; like WriteJSON
// it panics on a type the fake cannot encode.
func EncodeXML(v any) []byte {
	b, err := xml.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fake: encoding %T: %v", v, err))
	}
	return append([]byte(XMLHeader), b...)
}
