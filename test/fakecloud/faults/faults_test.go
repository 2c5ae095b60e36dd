package faults

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

const ep = "GET /v2/droplets/{id}"

// fakeClock drives the token bucket without sleeping.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newWithClock() (*Injector, *fakeClock) {
	c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	i := New()
	i.now = c.now
	return i, c
}

func TestNoRulesProceeds(t *testing.T) {
	i := New()
	d := i.Intercept(context.Background(), ep)
	if d.Status != 0 || d.Abandoned || d.Throttled || d.Quota.Enabled {
		t.Fatalf("decision = %+v, want plain proceed", d)
	}
}

func TestProbability(t *testing.T) {
	const n = 20000
	run := func(seed int64) []bool {
		i := New()
		i.SetSeed(seed)
		i.AddRule(Rule{Match: ep, Probability: 0.3, Status: 503})
		out := make([]bool, n)
		for k := range out {
			out[k] = i.Intercept(context.Background(), ep).Status == 503
		}
		return out
	}
	a := run(42)
	failed := 0
	for _, f := range a {
		if f {
			failed++
		}
	}
	if frac := float64(failed) / n; frac < 0.28 || frac > 0.32 {
		t.Errorf("failure fraction = %.3f, want about 0.3", frac)
	}

	// The same seed replays the same sequence; another seed does not.
	b, c := run(42), run(43)
	same, differs := true, false
	for k := range a {
		same = same && a[k] == b[k]
		differs = differs || a[k] != c[k]
	}
	if !same {
		t.Error("same seed gave a different sequence")
	}
	if !differs {
		t.Error("different seeds gave the same sequence")
	}
}

func TestZeroProbabilityMeansAlways(t *testing.T) {
	i := New()
	i.AddRule(Rule{Match: ep, Status: 500})
	for k := 0; k < 50; k++ {
		if got := i.Intercept(context.Background(), ep).Status; got != 500 {
			t.Fatalf("request %d: status %d, want 500", k, got)
		}
	}
}

func TestRemainingExpiresRule(t *testing.T) {
	i := New()
	id := i.FailNext(ep, 2, 500)
	var got []int
	for k := 0; k < 4; k++ {
		got = append(got, i.Intercept(context.Background(), ep).Status)
	}
	want := []int{500, 500, 0, 0}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("statuses = %v, want %v", got, want)
		}
	}
	if _, ok := i.Rules()[id]; ok {
		t.Error("expired rule still installed")
	}
	if i.Injected() != 2 {
		t.Errorf("Injected = %d, want 2", i.Injected())
	}
}

func TestRemainingCountsOnlyFiredRequests(t *testing.T) {
	i := New()
	i.AddRule(Rule{Match: ep, Probability: 0.5, Status: 500, Remaining: 3})
	fired := 0
	for k := 0; k < 1000; k++ {
		if i.Intercept(context.Background(), ep).Status == 500 {
			fired++
		}
	}
	if fired != 3 {
		t.Errorf("rule fired %d times, want exactly 3", fired)
	}
}

func TestMatching(t *testing.T) {
	cases := []struct {
		match, endpoint string
		want            bool
	}{
		{"GET /v2/droplets", "GET /v2/droplets", true},
		{"GET /v2/droplets", "GET /v2/droplets/{id}", false},
		{"GET /v2/droplets*", "GET /v2/droplets/{id}", true},
		{"GET /v2/droplets*", "GET /v2/droplets", true},
		{"GET /v2/droplets*", "POST /v2/droplets", false},
		{"GET *", "GET /v2/account", true},
		{"GET *", "DELETE /v2/droplets/{id}", false},
		{"", "DELETE /v2/droplets/{id}", true},
		{"*", "POST /v2/droplets/{id}/actions", true},
	}
	for _, c := range cases {
		i := New()
		i.AddRule(Rule{Match: c.match, Probability: 1, Status: 503})
		got := i.Intercept(context.Background(), c.endpoint).Status == 503
		if got != c.want {
			t.Errorf("Match %q vs %q: fired=%v, want %v", c.match, c.endpoint, got, c.want)
		}
	}
}

func TestFirstFiringRuleWinsAndLatenciesAdd(t *testing.T) {
	i := New()
	i.AddRule(Rule{Match: "*", Latency: 30 * time.Millisecond})
	first := i.AddRule(Rule{Match: ep, Status: 500, RetryAfter: 2 * time.Second})
	i.AddRule(Rule{Match: ep, Status: 503})
	start := time.Now()
	d := i.Intercept(context.Background(), ep)
	if d.Status != 500 || d.RetryAfter != 2*time.Second {
		t.Fatalf("decision = %+v, want rule %d's 500", d, first)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Errorf("returned after %v, want the latency-only rule's 30ms", el)
	}
}

func TestRemoveAndClearRules(t *testing.T) {
	i := New()
	a := i.AddRule(Rule{Match: ep, Status: 500})
	i.AddRule(Rule{Match: ep, Status: 503})
	i.RemoveRule(a)
	if got := i.Intercept(context.Background(), ep).Status; got != 503 {
		t.Fatalf("after RemoveRule status = %d, want 503", got)
	}
	i.ClearRules()
	if got := i.Intercept(context.Background(), ep).Status; got != 0 {
		t.Fatalf("after ClearRules status = %d, want 0", got)
	}
	i.RemoveRule(12345) // unknown ids are ignored
}

func TestGlobalLatency(t *testing.T) {
	i := New()
	i.SetLatency(40 * time.Millisecond)
	start := time.Now()
	if d := i.Intercept(context.Background(), ep); d.Status != 0 || d.Abandoned {
		t.Fatalf("decision = %+v", d)
	}
	if el := time.Since(start); el < 40*time.Millisecond {
		t.Errorf("returned after %v, want >= 40ms", el)
	}
}

func TestTimeoutHangsUntilClientGivesUp(t *testing.T) {
	i := New()
	i.AddRule(Rule{Match: ep, Timeout: true})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	d := i.Intercept(ctx, ep)
	if !d.Abandoned {
		t.Fatalf("decision = %+v, want Abandoned", d)
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Errorf("returned after %v, before the client gave up", el)
	}
	if got := i.Responses(ep)[NoResponse]; got != 1 {
		t.Errorf("Responses[NoResponse] = %d, want 1", got)
	}
}

func TestLatencyAbandonedWhenClientGivesUp(t *testing.T) {
	i := New()
	i.SetLatency(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if d := i.Intercept(ctx, ep); !d.Abandoned {
		t.Fatalf("decision = %+v, want Abandoned", d)
	}
}

func TestRateLimit(t *testing.T) {
	i, clock := newWithClock()
	i.SetRateLimit(1, 2)

	for k := 0; k < 2; k++ {
		d := i.Intercept(context.Background(), ep)
		if d.Status != 0 {
			t.Fatalf("request %d within burst throttled: %+v", k, d)
		}
		if d.Quota.Limit != 2 || d.Quota.Remaining != 1-k {
			t.Errorf("request %d quota = %+v, want limit 2 remaining %d", k, d.Quota, 1-k)
		}
	}
	d := i.Intercept(context.Background(), ep)
	if !d.Throttled || d.Status != 429 {
		t.Fatalf("third request = %+v, want throttled 429", d)
	}
	if d.RetryAfter != time.Second {
		t.Errorf("RetryAfter = %v, want 1s", d.RetryAfter)
	}
	if d.Quota.Remaining != 0 || !d.Quota.Reset.Equal(clock.now().Add(2*time.Second)) {
		t.Errorf("quota = %+v, want remaining 0 and reset in 2s", d.Quota)
	}

	clock.advance(500 * time.Millisecond)
	if d := i.Intercept(context.Background(), ep); !d.Throttled || d.RetryAfter != 500*time.Millisecond {
		t.Fatalf("half a token later = %+v, want throttled with 500ms to wait", d)
	}
	clock.advance(500 * time.Millisecond)
	if d := i.Intercept(context.Background(), ep); d.Status != 0 {
		t.Fatalf("after refill = %+v, want proceed", d)
	}
	if i.Throttled() != 2 {
		t.Errorf("Throttled = %d, want 2", i.Throttled())
	}

	// A bucket never holds more than its burst, however long it idles.
	clock.advance(time.Hour)
	i.SetThrottleStatus(503)
	for k := 0; k < 2; k++ {
		i.Intercept(context.Background(), ep)
	}
	if d := i.Intercept(context.Background(), ep); d.Status != 503 {
		t.Fatalf("over burst after idling = %+v, want the configured 503", d)
	}

	i.SetRateLimit(0, 0)
	if d := i.Intercept(context.Background(), ep); d.Status != 0 || d.Quota.Enabled {
		t.Fatalf("after turning off = %+v", d)
	}
}

func TestThrottledRequestsSkipRules(t *testing.T) {
	i, _ := newWithClock()
	i.SetRateLimit(1, 1)
	i.AddRule(Rule{Match: ep, Status: 500, Remaining: 5})
	i.Intercept(context.Background(), ep) // spends the token, and one rule firing
	if d := i.Intercept(context.Background(), ep); !d.Throttled {
		t.Fatalf("decision = %+v, want throttled", d)
	}
	if got := i.Rules(); len(got) != 1 {
		t.Fatal("rule vanished")
	}
	for _, r := range i.Rules() {
		if r.Remaining != 4 {
			t.Errorf("Remaining = %d, want 4: a throttled request must not use the rule up", r.Remaining)
		}
	}
}

func TestCounters(t *testing.T) {
	i := New()
	ctx := context.Background()
	i.Intercept(ctx, "GET /v2/droplets")
	i.Record("GET /v2/droplets", 200)
	for k := 0; k < 3; k++ {
		i.Intercept(ctx, ep)
	}
	i.Record(ep, 200)
	i.Record(ep, 404)
	i.Record(ep, 404)

	if got := i.Total(); got != 4 {
		t.Errorf("Total = %d, want 4", got)
	}
	if got := i.CallCount(ep); got != 3 {
		t.Errorf("CallCount = %d, want 3", got)
	}
	calls := i.Calls()
	if len(calls) != 2 || calls["GET /v2/droplets"] != 1 || calls[ep] != 3 {
		t.Errorf("Calls = %v", calls)
	}
	if got := i.Responses(ep); len(got) != 2 || got[200] != 1 || got[404] != 2 {
		t.Errorf("Responses = %v", got)
	}
	if got := i.Endpoints(); len(got) != 2 || got[0] != "GET /v2/droplets" || got[1] != ep {
		t.Errorf("Endpoints = %v", got)
	}

	// Returned maps are copies.
	calls[ep] = 100
	if i.CallCount(ep) != 3 {
		t.Error("Calls leaked the internal map")
	}

	i.Reset()
	if i.Total() != 0 || i.CallCount(ep) != 0 || len(i.Responses(ep)) != 0 || len(i.Calls()) != 0 {
		t.Error("Reset left counts behind")
	}
}

func TestConcurrentUse(t *testing.T) {
	i := New()
	i.AddRule(Rule{Match: "*", Probability: 0.5, Status: 500, Remaining: 100})
	i.SetRateLimit(1e9, 1000)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 200; k++ {
				d := i.Intercept(context.Background(), ep)
				i.Record(ep, max(d.Status, 200))
			}
		}()
	}
	wg.Wait()
	if i.Total() != 1600 || i.CallCount(ep) != 1600 {
		t.Errorf("Total = %d, CallCount = %d, want 1600", i.Total(), i.CallCount(ep))
	}
	if got := i.Responses(ep)[500]; got != 100 {
		t.Errorf("500s = %d, want the rule's 100", got)
	}
}

func TestAfterCommit(t *testing.T) {
	i, _ := newWithClock()
	ctx := context.Background()
	i.AddRule(Rule{Match: ep, Status: 500, AfterCommit: true, Remaining: 1})
	if d := i.Intercept(ctx, ep); d.Status != 500 || !d.AfterCommit || d.Throttled {
		t.Errorf("decision = %+v, want 500 after commit", d)
	}
	if d := i.Intercept(ctx, ep); d.Status != 0 || d.AfterCommit {
		t.Errorf("after the rule expired: %+v", d)
	}

	// Without a status there is nothing to fail with: latency only.
	i.AddRule(Rule{Match: ep, AfterCommit: true, Remaining: 1})
	if d := i.Intercept(ctx, ep); d.Status != 0 || d.AfterCommit {
		t.Errorf("status-less rule: %+v", d)
	}

	// A plain failure is not after commit.
	i.FailNext(ep, 1, 503)
	if d := i.Intercept(ctx, ep); d.Status != 503 || d.AfterCommit {
		t.Errorf("plain failure: %+v", d)
	}

	// The rate limiter refuses before the API sees anything.
	i.AddRule(Rule{Match: ep, Status: 500, AfterCommit: true})
	i.SetRateLimit(1, 1)
	i.Intercept(ctx, ep)
	if d := i.Intercept(ctx, ep); !d.Throttled || d.AfterCommit {
		t.Errorf("throttled: %+v", d)
	}
	if i.Injected() != 3 {
		t.Errorf("Injected = %d, want 3", i.Injected())
	}
}

func TestFamiliesHaveTheirOwnBuckets(t *testing.T) {
	i, clock := newWithClock()
	// As EC2: reads and writes draw from different buckets.
	i.SetFamilies(func(endpoint string) (string, Limit) {
		switch {
		case strings.HasPrefix(endpoint, "ec2 Describe"):
			return "ec2 describe", Limit{RPS: 1, Burst: 2}
		case strings.HasPrefix(endpoint, "ec2 "):
			return "ec2 mutate", Limit{RPS: 1, Burst: 1}
		}
		return "", Limit{}
	})
	call := func(ep string) Decision { return i.Intercept(context.Background(), ep) }
	if d := call("ec2 CreateTags"); d.Status != 0 {
		t.Fatalf("first mutation throttled: %+v", d)
	}
	if d := call("ec2 DeleteTags"); !d.Throttled {
		t.Fatalf("second mutation = %+v, want throttled (burst 1)", d)
	}
	for k := 0; k < 2; k++ {
		if d := call("ec2 DescribeInstances"); d.Status != 0 {
			t.Fatalf("describe %d throttled with the mutation bucket empty: %+v", k, d)
		}
	}
	if d := call("ec2 DescribeSubnets"); !d.Throttled || d.Quota.Limit != 2 {
		t.Fatalf("third describe = %+v, want throttled by the describe bucket", d)
	}
	for k := 0; k < 5; k++ {
		if d := call("sts GetCallerIdentity"); d.Status != 0 {
			t.Fatalf("a call of no family throttled: %+v", d)
		}
	}
	clock.advance(time.Second)
	if d := call("ec2 CreateTags"); d.Status != 0 {
		t.Fatalf("mutation after refill = %+v", d)
	}
	// The account-wide bucket still applies on top.
	i.SetRateLimit(1, 1)
	call("sts GetCallerIdentity")
	if d := call("sts GetCallerIdentity"); !d.Throttled {
		t.Fatalf("account bucket not applied: %+v", d)
	}
	i.SetFamilies(nil)
	i.SetRateLimit(0, 0)
	for k := 0; k < 3; k++ {
		if d := call("ec2 CreateTags"); d.Status != 0 {
			t.Fatalf("families off but throttled: %+v", d)
		}
	}
}
