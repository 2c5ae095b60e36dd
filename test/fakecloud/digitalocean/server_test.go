package digitalocean

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

func TestAccount(t *testing.T) {
	_, c := start(t)
	a, _, err := c.Account.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != "active" || a.UUID == "" || a.Email == "" || !a.EmailVerified || a.DropletLimit == 0 {
		t.Errorf("account = %+v", a)
	}
}

func TestBadTokenIs401(t *testing.T) {
	s, _ := start(t)
	check := func(c *godo.Client) {
		t.Helper()
		_, _, err := c.Account.Get(context.Background())
		e := apiErr(t, err, http.StatusUnauthorized)
		if e.Message != "Unable to authenticate you" {
			t.Errorf("message = %q", e.Message)
		}
	}
	check(client(t, s, "wrong"))

	// Revoking the token locks out its holder; the new one works.
	s.SetToken("rotated")
	check(client(t, s, testToken))
	if _, _, err := client(t, s, "rotated").Account.Get(context.Background()); err != nil {
		t.Fatal(err)
	}

	// No Authorization header at all, and on an unknown path too.
	resp, err := http.Get(s.URL() + "v2/account")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d", resp.StatusCode)
	}
	resp, err = http.Get(s.URL() + "v2/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token on unknown path: %d", resp.StatusCode)
	}
}

func TestRouting(t *testing.T) {
	s, _ := start(t)
	d := s.AddDroplet(Droplet{})
	cases := []struct {
		method, path string
		status       int
		id           string
	}{
		{"GET", "/v2/nothing", 404, "not_found"},
		{"GET", "/v2/droplets/abc", 404, "not_found"},
		{"GET", "/v2/droplets/-1", 404, "not_found"},
		{"GET", "/v2/droplets/", 404, "not_found"},
		{"GET", "/v2/droplets/" + strconv.Itoa(d.ID) + "/", 404, "not_found"},
		{"PUT", "/v2/droplets/" + strconv.Itoa(d.ID), 405, "method_not_allowed"},
		{"DELETE", "/v2/account", 405, "method_not_allowed"},
	}
	for _, c := range cases {
		resp, body := raw(t, s, c.method, c.path, "")
		m := decode(t, body)
		if resp.StatusCode != c.status || m["id"] != c.id || m["message"] == "" || m["request_id"] != resp.Header.Get("X-Request-Id") {
			t.Errorf("%s %s: %d %s", c.method, c.path, resp.StatusCode, body)
		}
	}
	resp, _ := raw(t, s, "PUT", "/v2/droplets/1", "")
	if got := resp.Header.Get("Allow"); got != "DELETE, GET" {
		t.Errorf("Allow = %q", got)
	}
	// Counted under the route's pattern with the method used.
	if got := s.Faults().Responses("PUT /v2/droplets/{id}")[405]; got != 2 {
		t.Errorf("405s counted = %d, want 2", got)
	}
}

func TestCountersByEndpointPattern(t *testing.T) {
	s, c := start(t)
	ds := addN(s, 3, Droplet{})
	ctx := context.Background()
	for _, d := range ds {
		if _, _, err := c.Droplets.Get(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
	}
	c.Droplets.Get(ctx, 999)
	c.Droplets.List(ctx, nil)
	c.DropletActions.PowerOff(ctx, ds[0].ID)

	f := s.Faults()
	want := map[string]int{
		"GET /v2/droplets/{id}":          4,
		"GET /v2/droplets":               1,
		"POST /v2/droplets/{id}/actions": 1,
	}
	for ep, n := range want {
		if got := f.CallCount(ep); got != n {
			t.Errorf("CallCount(%q) = %d, want %d", ep, got, n)
		}
	}
	if got := f.Responses("GET /v2/droplets/{id}"); got[200] != 3 || got[404] != 1 {
		t.Errorf("responses = %v, want 3×200 1×404", got)
	}
	if got := f.Responses("POST /v2/droplets/{id}/actions"); got[201] != 1 {
		t.Errorf("action responses = %v", got)
	}
	if f.Total() != 6 || len(f.Calls()) != 3 {
		t.Errorf("Total = %d, Calls = %v", f.Total(), f.Calls())
	}
}

func TestInjected429CarriesRetryAfter(t *testing.T) {
	s, c := start(t)
	d := s.AddDroplet(Droplet{})
	s.Faults().AddRule(faults.Rule{Match: "GET /v2/droplets/{id}", Status: 429, RetryAfter: 3 * time.Second, Remaining: 1})

	_, resp, err := c.Droplets.Get(context.Background(), d.ID)
	e := apiErr(t, err, http.StatusTooManyRequests)
	if e.Message != "API Rate limit exceeded." {
		t.Errorf("message = %q", e.Message)
	}
	if got := resp.Header.Get("Retry-After"); got != "3" {
		t.Errorf("Retry-After = %q, want 3", got)
	}
	if resp.Rate.Remaining != 0 {
		t.Errorf("RateLimit-Remaining = %d, want 0", resp.Rate.Remaining)
	}
	if _, _, err := c.Droplets.Get(context.Background(), d.ID); err != nil {
		t.Fatalf("rule should have expired: %v", err)
	}
	if got := s.Faults().Responses("GET /v2/droplets/{id}"); got[429] != 1 || got[200] != 1 {
		t.Errorf("responses = %v", got)
	}
}

func TestInjectedServerErrors(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	cases := []struct {
		status int
		id     string
	}{
		{500, "server_error"},
		{503, "service_unavailable"},
		{502, "bad_gateway"},
	}
	for _, tc := range cases {
		s.Faults().FailNext("GET /v2/account", 1, tc.status)
		_, resp, err := c.Account.Get(ctx)
		e := apiErr(t, err, tc.status)
		if e.Message == "" || e.RequestID == "" {
			t.Errorf("%d: error = %+v", tc.status, e)
		}
		_, body := raw(t, s, "GET", "/v2/account", "")
		if decode(t, body)["account"] == nil {
			t.Errorf("%d: fault outlived its rule: %s", tc.status, body)
		}
		if resp.Header.Get("Retry-After") != "" {
			t.Errorf("%d: unexpected Retry-After", tc.status)
		}
	}
	s.Faults().FailNext("GET /v2/account", 1, 500)
	_, body := raw(t, s, "GET", "/v2/account", "")
	if m := decode(t, body); m["id"] != "server_error" || m["message"] != "Unexpected server-side error" {
		t.Errorf("500 body = %s", body)
	}
}

// An injected 403 reads like DigitalOcean's answer to a token lacking a
// scope, not like the busy load balancer's 403, which clients wait out.
func TestInjected403IsAScopeError(t *testing.T) {
	s, c := start(t)
	s.Faults().FailNext("GET /v2/account", 1, http.StatusForbidden)
	_, _, err := c.Account.Get(context.Background())
	if e := apiErr(t, err, http.StatusForbidden); e.Message != "You are not authorized to perform this operation" {
		t.Errorf("403 message = %q", e.Message)
	}
}

func TestRateLimit(t *testing.T) {
	s, c := start(t)
	s.Faults().SetRateLimit(0.01, 2) // a token per 100s: the third call is over
	ctx := context.Background()

	for k := 0; k < 2; k++ {
		_, resp, err := c.Account.Get(ctx)
		if err != nil {
			t.Fatalf("call %d: %v", k, err)
		}
		// The limit is an hourly one: 0.01/s is 36 an hour.
		if resp.Rate.Limit != 36 || resp.Rate.Remaining != 1-k {
			t.Errorf("call %d rate = %+v", k, resp.Rate)
		}
	}
	_, resp, err := c.Account.Get(ctx)
	apiErr(t, err, http.StatusTooManyRequests)
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if ra < 99 || ra > 100 {
		t.Errorf("Retry-After = %q, want about 100s", resp.Header.Get("Retry-After"))
	}
	if resp.Rate.Remaining != 0 || resp.Rate.Reset.Before(time.Now().Add(100*time.Second)) {
		t.Errorf("rate = %+v", resp.Rate)
	}
	if s.Faults().Throttled() != 1 {
		t.Errorf("Throttled = %d", s.Faults().Throttled())
	}
}

// With DigitalOcean's own throttling on, the headers say what the real
// API says: 5000 requests an hour.
func TestRateLimitHeadersUnderThrottling(t *testing.T) {
	s, c := start(t)
	s.Faults().SetFamilies(Throttling)
	_, resp, err := c.Account.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Rate.Limit != 5000 || resp.Rate.Remaining != 249 {
		t.Errorf("rate = %+v, want limit 5000 and 249 of the 250 burst left", resp.Rate)
	}
}

func TestStandardHeaders(t *testing.T) {
	s, c := start(t)
	d := s.AddDroplet(Droplet{})
	for _, call := range []func() (*godo.Response, error){
		func() (*godo.Response, error) { _, r, err := c.Droplets.Get(context.Background(), d.ID); return r, err },
		func() (*godo.Response, error) { _, r, err := c.Droplets.Get(context.Background(), 1); return r, err },
		func() (*godo.Response, error) { return c.Droplets.Delete(context.Background(), d.ID) },
	} {
		resp, _ := call()
		h := resp.Header
		if h.Get("Content-Type") != "application/json; charset=utf-8" || h.Get("X-Request-Id") == "" {
			t.Errorf("%d: headers %v", resp.StatusCode, h)
		}
		if resp.Rate.Limit != nominalRateLimit || resp.Rate.Remaining != nominalRateLimit || resp.Rate.Reset.IsZero() {
			t.Errorf("%d: rate %+v", resp.StatusCode, resp.Rate)
		}
	}
}

func TestLatency(t *testing.T) {
	s, c := start(t)
	s.Faults().SetLatency(50 * time.Millisecond)
	start := time.Now()
	if _, _, err := c.Account.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Errorf("answered in %v, want >= 50ms", el)
	}
}

func TestTimeoutRule(t *testing.T) {
	s, c := start(t)
	s.Faults().AddRule(faults.Rule{Match: "GET /v2/account", Timeout: true})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, _, err := c.Account.Get(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want the client's deadline", err)
	}
	// A request still held when the server closes must not block Close.
	go c.Account.Get(context.Background())
	waitFor(t, func() bool { return s.Faults().CallCount("GET /v2/account") == 2 })
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a held request")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWireShape(t *testing.T) {
	s, _ := start(t)
	d := s.AddDroplet(Droplet{IPv6: "2001:db8::7"})

	resp, body := raw(t, s, "GET", "/v2/droplets", "")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	root := decode(t, body)
	// One page: links is an empty object, meta has the total.
	if links, ok := root["links"].(map[string]any); !ok || len(links) != 0 {
		t.Errorf("links = %v, want {}", root["links"])
	}
	if root["meta"].(map[string]any)["total"] != float64(1) {
		t.Errorf("meta = %v", root["meta"])
	}

	w := root["droplets"].([]any)[0].(map[string]any)
	for _, key := range []string{"kernel", "next_backup_window"} {
		if v, ok := w[key]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", key, v, ok)
		}
	}
	for _, key := range []string{"backup_ids", "snapshot_ids", "volume_ids", "features", "tags"} {
		if _, ok := w[key].([]any); !ok {
			t.Errorf("%s = %#v, want an array", key, w[key])
		}
	}
	if w["id"] != float64(d.ID) || w["locked"] != false || w["size_slug"] != defaultSize || w["vpc_uuid"] != d.VPCUUID {
		t.Errorf("droplet = %v", w)
	}
	if _, err := time.Parse(time.RFC3339, w["created_at"].(string)); err != nil {
		t.Errorf("created_at: %v", err)
	}
	size := w["size"].(map[string]any)
	for _, key := range []string{"slug", "memory", "vcpus", "disk", "price_monthly", "price_hourly", "regions", "available", "transfer", "description"} {
		if _, ok := size[key]; !ok {
			t.Errorf("size lacks %s", key)
		}
	}
	region := w["region"].(map[string]any)
	for _, key := range []string{"slug", "name", "sizes", "available", "features"} {
		if _, ok := region[key]; !ok {
			t.Errorf("region lacks %s", key)
		}
	}
	nets := w["networks"].(map[string]any)
	v4 := nets["v4"].([]any)
	if len(v4) != 2 || v4[0].(map[string]any)["type"] != "private" || v4[1].(map[string]any)["type"] != "public" {
		t.Errorf("v4 = %v", v4)
	}
	v6 := nets["v6"].([]any)[0].(map[string]any)
	if v6["netmask"] != float64(64) || v6["type"] != "public" || v6["ip_address"] != "2001:db8::7" {
		t.Errorf("v6 = %v", v6)
	}

	// Multi-page links are absolute, and page 1 has only next and last.
	addN(s, 2, Droplet{})
	_, body = raw(t, s, "GET", "/v2/droplets?per_page=2&tag_name=", "")
	pages := decode(t, body)["links"].(map[string]any)["pages"].(map[string]any)
	want := s.URL() + "v2/droplets?page=2&per_page=2&tag_name="
	if len(pages) != 2 || pages["next"] != want || pages["last"] != want {
		t.Errorf("pages = %v, want next and last = %s", pages, want)
	}

	resp, body = raw(t, s, "DELETE", "/v2/droplets/"+strconv.Itoa(d.ID), "")
	if resp.StatusCode != 204 || len(body) != 0 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("delete: %d %q %v", resp.StatusCode, body, resp.Header)
	}
}
