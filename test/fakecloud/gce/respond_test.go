package gce

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"google.golang.org/api/option"
)

const getInstanceKey = "GET /compute/v1/projects/{project}/zones/{zone}/instances/{instance}"

func getInstance(c *compute.InstancesClient, ctx context.Context) error {
	_, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: testProject, Zone: zone, Instance: "n"})
	return err
}

func TestUnauthenticated(t *testing.T) {
	s := start(t)
	s.AddInstance(Instance{Name: "n"})
	ctx := context.Background()

	bad, err := compute.NewInstancesRESTClient(ctx, opts(s, "wrong")...)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	e := apiErr(t, getInstance(bad, ctx), http.StatusUnauthorized, "authError")
	if e.Message != msgInvalidCredentials || !strings.Contains(e.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("error = %+v", e)
	}

	none, err := compute.NewInstancesRESTClient(ctx, option.WithEndpoint(s.URL()), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	if e := apiErr(t, getInstance(none, ctx), http.StatusUnauthorized, "required"); e.Message != msgMissingCredentials {
		t.Errorf("message = %q", e.Message)
	}

	// Revoking the token locks its holder out.
	good := client(t, s, compute.NewInstancesRESTClient)
	if err := getInstance(good, ctx); err != nil {
		t.Fatal(err)
	}
	s.SetToken("rotated")
	apiErr(t, getInstance(good, ctx), http.StatusUnauthorized, "authError")

	// The wire form.
	resp, b := raw(t, s, "GET", "/compute/v1/projects/"+testProject+"/zones/"+zone+"/instances/n", "")
	m := decode(t, b)["error"].(map[string]any)
	item := m["errors"].([]any)[0].(map[string]any)
	if resp.StatusCode != 401 || m["status"] != "UNAUTHENTICATED" || item["domain"] != "global" || item["location"] != "Authorization" ||
		resp.Header.Get("Content-Type") != "application/json; charset=UTF-8" {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

func TestInjectedFailuresAreCounted(t *testing.T) {
	s := start(t)
	s.AddInstance(Instance{Name: "n"})
	c := client(t, s, compute.NewInstancesRESTClient)
	ctx := context.Background()
	inj := s.Faults()

	// 429: the client does not retry it; the body is the quota error.
	inj.FailNext(getInstanceKey, 1, http.StatusTooManyRequests)
	e := apiErr(t, getInstance(c, ctx), http.StatusTooManyRequests, "rateLimitExceeded")
	if !strings.Contains(e.Message, "Quota exceeded for quota metric 'Queries'") || !strings.Contains(e.Body, `"domain":"usageLimits"`) {
		t.Errorf("429 = %+v", e)
	}

	// 503: the client retries (its default policy) and succeeds.
	inj.FailNext(getInstanceKey, 1, http.StatusServiceUnavailable)
	if err := getInstance(c, ctx); err != nil {
		t.Errorf("after one 503: %v", err)
	}
	// 500: not retried.
	inj.FailNext(getInstanceKey, 1, http.StatusInternalServerError)
	apiErr(t, getInstance(c, ctx), http.StatusInternalServerError, "backendError")
	// 403.
	inj.FailNext(getInstanceKey, 1, http.StatusForbidden)
	apiErr(t, getInstance(c, ctx), http.StatusForbidden, "forbidden")

	if got := inj.Responses(getInstanceKey); got[429] != 1 || got[503] != 1 || got[500] != 1 || got[403] != 1 || got[200] != 1 {
		t.Errorf("responses = %v", got)
	}
	if inj.CallCount(getInstanceKey) != 5 || inj.Injected() != 4 {
		t.Errorf("calls %d, injected %d", inj.CallCount(getInstanceKey), inj.Injected())
	}

	// The rate limiter throttles with the same quota error.
	inj.SetRateLimit(0.001, 1)
	if err := getInstance(c, ctx); err != nil {
		t.Fatal(err)
	}
	apiErr(t, getInstance(c, ctx), http.StatusTooManyRequests, "rateLimitExceeded")
	if inj.Throttled() != 1 {
		t.Errorf("throttled %d", inj.Throttled())
	}
	inj.SetRateLimit(0, 0)

	// A hung request ends when the client gives up.
	inj.AddRule(faults.Rule{Match: getInstanceKey, Timeout: true, Remaining: 1})
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := getInstance(c, tctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: %v", err)
	}
}

func TestUnknownRoutesAndBadBodies(t *testing.T) {
	s := start(t)
	resp, b := raw(t, s, "GET", "/compute/v1/projects/"+testProject+"/nothing", "")
	if resp.StatusCode != 404 {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	resp, _ = raw(t, s, "PUT", "/compute/v1/projects/"+testProject+"/zones/"+zone+"/instances", "")
	if resp.StatusCode != 405 {
		t.Errorf("wrong method: %d", resp.StatusCode)
	}
	if s.Faults().CallCount("PUT /compute/v1/projects/{project}/zones/{zone}/instances") != 1 {
		t.Errorf("405 not counted by pattern: %v", s.Faults().Endpoints())
	}
	resp, b = raw(t, s, "POST", "/compute/v1/projects/"+testProject+"/global/firewalls", `{"name":"a","allowed":[{"IPProtocol":"tcp"}],"bogus":1}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), `Unknown name \"bogus\"`) {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	resp, b = raw(t, s, "POST", "/compute/v1/projects/"+testProject+"/global/firewalls", `{"name":`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "parseError") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}
