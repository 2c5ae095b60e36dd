package hetzner

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

func TestRateLimit(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	s.SetRateLimit(3, 0.5)
	for i := range 3 {
		_, resp, err := c.Server.List(ctx, hcloud.ServerListOpts{})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Meta.Ratelimit.Limit != 3 || resp.Meta.Ratelimit.Remaining != 2-i {
			t.Errorf("request %d: %+v", i, resp.Meta.Ratelimit)
		}
	}
	_, resp, err := c.Server.List(ctx, hcloud.ServerListOpts{})
	e := apiErr(t, err, hcloud.ErrorCodeRateLimitExceeded, http.StatusTooManyRequests)
	if e.Message != "limit of 3 requests per hour reached" || resp.Meta.Ratelimit.Remaining != 0 {
		t.Errorf("429: %q %+v", e.Message, resp.Meta.Ratelimit)
	}
	// Full again in 6 s: 3 tokens at half a token a second.
	if d := time.Until(resp.Meta.Ratelimit.Reset); d < 4*time.Second || d > 7*time.Second {
		t.Errorf("RateLimit-Reset in %v", d)
	}
	if s.Faults().Throttled() != 1 {
		t.Errorf("throttled = %d", s.Faults().Throttled())
	}
	// Off: the nominal limit is reported, nothing throttles.
	s.SetRateLimit(0, 0)
	r, _ := raw(t, s, "GET", "/v1/servers", "")
	if r.StatusCode != 200 || r.Header.Get("RateLimit-Limit") != "3600" || r.Header.Get("RateLimit-Remaining") != "3600" {
		t.Errorf("off: %d %v", r.StatusCode, r.Header)
	}
	// The default bucket: 3,600, refilled one a second.
	if name, l := Throttling("GET /v1/servers"); name == "" || l.RPS != 1 || l.Burst != 3600 {
		t.Errorf("Throttling = %s %+v", name, l)
	}
}

func TestFaultInjection(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	s.Faults().FailNext("GET /v1/servers/{id}", 1, http.StatusServiceUnavailable)
	_, _, err := c.Server.GetByID(ctx, 7)
	e := apiErr(t, err, hcloud.ErrorCodeServiceError, http.StatusServiceUnavailable)
	if e.Response().Header.Get("X-Correlation-Id") == "" {
		t.Error("no correlation id")
	}
	if sv, _, err := c.Server.GetByID(ctx, 7); sv != nil || err != nil {
		t.Errorf("after the fault: %v %v", sv, err)
	}
	if got := s.Faults().Responses("GET /v1/servers/{id}"); got[503] != 1 || got[404] != 1 {
		t.Errorf("responses = %v", got)
	}
	// An injected 429 is the API's own throttling answer.
	s.Faults().FailNext("GET /v1/servers", 1, http.StatusTooManyRequests)
	_, err = c.Server.All(ctx)
	apiErr(t, err, hcloud.ErrorCodeRateLimitExceeded, http.StatusTooManyRequests)

	// A create whose answer is lost still creates.
	s.Faults().AddRule(faults.Rule{Match: "POST /v1/load_balancers", Status: 502, AfterCommit: true, Remaining: 1})
	_, _, err = c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "lost",
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, Location: &hcloud.Location{Name: "fsn1"}})
	apiErr(t, err, hcloud.ErrorCodeBadGateway, http.StatusBadGateway)
	if lbs := s.LoadBalancers(); len(lbs) != 1 || lbs[0].Name != "lost" {
		t.Errorf("load balancers = %v", lbs)
	}
	// A hung request ends when the client gives up.
	s.Faults().AddRule(faults.Rule{Match: "GET /v1/networks", Timeout: true, Remaining: 1})
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Network.All(tctx); err == nil {
		t.Error("hung request answered")
	}
}
