package openstack

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

func TestRateLimit(t *testing.T) {
	s := start(t)
	tok := token(t, s)
	// Each service has its own bucket: two requests, half a token a second.
	s.SetRateLimit(2, 0.5)
	for range 2 {
		if r, _ := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/detail", "", nil); r.StatusCode != http.StatusOK {
			t.Fatalf("within the limit: %d", r.StatusCode)
		}
	}
	r, b := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/detail", "", nil)
	if r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("over the limit: %d", r.StatusCode)
	}
	retry, _ := strconv.Atoi(r.Header.Get("Retry-After"))
	if retry < 1 || retry > 2 {
		t.Errorf("Retry-After = %q", r.Header.Get("Retry-After"))
	}
	ol := doc(t, b)["overLimit"].(map[string]any)
	if ol["code"] != 429.0 || ol["message"] != "This request was rate-limited." || ol["retryAfter"] != r.Header.Get("Retry-After") {
		t.Errorf("overLimit = %v", ol)
	}
	// Neutron's bucket is another; drained, it answers in its own words.
	for range 2 {
		raw(t, s, tok, http.MethodGet, "/network/v2.0/ports", "", nil)
	}
	r, b = raw(t, s, tok, http.MethodGet, "/network/v2.0/ports", "", nil)
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Errorf("network: %d %v", r.StatusCode, r.Header)
	}
	jsonEq(t, b, `{"NeutronError": {"type": "HTTPTooManyRequests", "message": "This request was rate-limited.", "detail": ""}}`)
	// 413, as Nova's own limiter answered.
	s.SetThrottleStatus(http.StatusRequestEntityTooLarge)
	r, b = raw(t, s, tok, http.MethodGet, "/compute/v2.1/flavors/1", "", nil)
	if r.StatusCode != http.StatusRequestEntityTooLarge || doc(t, b)["overLimit"].(map[string]any)["code"] != 413.0 || r.Header.Get("Retry-After") == "" {
		t.Errorf("413: %d %s", r.StatusCode, b)
	}
	if got := s.Faults().Throttled(); got != 3 {
		t.Errorf("throttled = %d", got)
	}
	// gophercloud sees the 429 (no backoff function set here).
	s.SetThrottleStatus(http.StatusTooManyRequests)
	s.SetRateLimit(0, 0)
	compute, _ := clients(t, s)
	s.SetRateLimit(1, 0.01)
	servers.List(compute, nil).AllPages(context.Background())
	_, err := servers.List(compute, nil).AllPages(context.Background())
	if !gophercloud.ResponseCodeIs(err, http.StatusTooManyRequests) {
		t.Errorf("gophercloud: %v", err)
	}
	// Off: nothing throttles.
	s.SetRateLimit(0, 0)
	if r, _ := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/detail", "", nil); r.StatusCode != http.StatusOK {
		t.Errorf("off: %d", r.StatusCode)
	}
	if name, l := Throttling(ServersList); name != "compute" || l.RPS != DefaultRefillPerSecond || l.Burst != DefaultRateLimit {
		t.Errorf("Throttling = %s %+v", name, l)
	}
	if name, _ := Throttling("GET /regions/1/network/v2.0/things"); name != "network" {
		t.Errorf("Throttling of an unrouted call = %s", name)
	}
}

func TestFaultInjection(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	_, ids := cluster(s, 2)
	compute, network := clients(t, s)

	s.Faults().FailNext(ServersList, 1, http.StatusServiceUnavailable)
	_, err := servers.List(compute, nil).AllPages(ctx)
	if !gophercloud.ResponseCodeIs(err, http.StatusServiceUnavailable) {
		t.Fatalf("err = %v", err)
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ue) {
		t.Fatalf("err = %T", err)
	}
	jsonEq(t, ue.Body, `{"serviceUnavailable": {"code": 503, "message": "The server is currently unavailable. Please try again at a later time."}}`)
	if _, err := servers.List(compute, nil).AllPages(ctx); err != nil {
		t.Errorf("after the fault: %v", err)
	}
	if got := s.Faults().Responses(ServersList); got[503] != 1 || got[200] != 1 {
		t.Errorf("responses = %v", got)
	}
	// Counters by call.
	for range 3 {
		servers.Get(ctx, compute, ids[0])
	}
	if got := s.Faults().CallCount(ServersGet); got != 3 {
		t.Errorf("gets = %d", got)
	}
	// "compute.*" matches every Nova call and nothing of Neutron's; a
	// 500 is in each service's words.
	id := s.Faults().AddRule(faults.Rule{Match: "compute.*", Status: http.StatusInternalServerError})
	if _, err := servers.Get(ctx, compute, ids[0]).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusInternalServerError) {
		t.Errorf("compute.*: %v", err)
	}
	if _, err := ports.List(network, nil).AllPages(ctx); err != nil {
		t.Errorf("network under compute.*: %v", err)
	}
	s.Faults().RemoveRule(id)
	s.Faults().FailNext(PortsList, 1, http.StatusInternalServerError)
	r, b := raw(t, s, token(t, s), http.MethodGet, "/network/v2.0/ports", "", nil)
	if r.StatusCode != http.StatusInternalServerError {
		t.Errorf("network 500: %d", r.StatusCode)
	}
	jsonEq(t, b, `{"NeutronError": {"type": "HTTPInternalServerError", "message": "Request Failed: internal server error while processing your request.", "detail": ""}}`)
	// Keystone fails in its own format; the client cannot log in.
	s.Faults().FailNext(TokensCreate, 1, http.StatusServiceUnavailable)
	if _, err := gos.AuthenticatedClient(ctx, passwordOpts(s)); !gophercloud.ResponseCodeIs(err, http.StatusServiceUnavailable) {
		t.Errorf("identity 503: %v", err)
	}
	// An injected fault wins over a bad token, as trouble in front of the API.
	s.Faults().FailNext(ServersGet, 1, http.StatusBadGateway)
	if r, _ := raw(t, s, "bogus", http.MethodGet, "/compute/v2.1/servers/x", "", nil); r.StatusCode != http.StatusBadGateway {
		t.Errorf("502 with a bad token: %d", r.StatusCode)
	}
	// A hung request ends when the client gives up.
	s.Faults().AddRule(faults.Rule{Match: ServersGet, Timeout: true, Remaining: 1})
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := servers.Get(tctx, compute, ids[0]).Extract(); err == nil {
		t.Error("hung request answered")
	}
	// Latency applies to every call.
	s.Faults().SetLatency(30 * time.Millisecond)
	start := time.Now()
	servers.Get(ctx, compute, ids[0])
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("latency: %v", d)
	}
}
