// Package faults injects failures, latency and rate limiting into fake cloud
// APIs, and counts what each fake answered. It knows nothing about any
// cloud's wire format: a fake asks the Injector what to do with a request,
// writes the answer in its own cloud's format, and reports the status back.
//
// A fake's handler needs three steps:
//
//	d := inj.Intercept(ctx, "GET /v2/droplets/{id}") // waits out any latency
//	switch {
//	case d.Abandoned:
//		return // the client gave up; the injector already counted it
//	case d.Status != 0:
//		if d.AfterCommit {
//			serve(discard, r) // the work happens; its answer is lost
//		}
//		writeCloudError(w, d) // d.Throttled: use the cloud's throttling error
//	default:
//		serve(w, r)
//	}
//	inj.Record("GET /v2/droplets/{id}", statusWritten)
//
// Endpoint keys are "METHOD /route/pattern" (the pattern, not the concrete
// path), so counts and rules address a route rather than one resource.
//
// Tests then configure the injector:
//
//	inj.AddRule(faults.Rule{Match: "GET /v2/droplets*", Probability: 0.2, Status: 503})
//	inj.FailNext("POST /v2/droplets/{id}/actions", 2, 500)
//	inj.AddRule(faults.Rule{Match: "GET /v2/account", Timeout: true})
//	inj.SetLatency(20 * time.Millisecond)
//	inj.SetRateLimit(5, 10) // 5 requests/s, bursts of 10
//
// and assert on CallCount, Responses, Throttled and friends. Randomness comes
// from a seeded generator (SetSeed), so a failing run can be replayed.
//
// # Failures after commit
//
// A failure normally stands for trouble in front of the API: the request is
// refused and nothing changes. A rule with AfterCommit stands for the worse
// case of an API that did the work and then failed to answer, as when a 5xx
// or a dropped connection hides whether a create went through:
//
//	inj.AddRule(faults.Rule{Match: "POST /v2/load_balancers", Status: 500, AfterCommit: true, Remaining: 1})
//
// The Decision then has AfterCommit set along with Status: the fake serves
// the request as usual, discards its answer and sends the injected error in
// its place. Clients must cope by looking before they retry.
package faults

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultSeed seeds a new Injector, so runs are reproducible unless a test
// asks otherwise.
const DefaultSeed = 1

// NoResponse is the status under which Responses counts requests the client
// abandoned (its context ended) while the injector was holding them.
const NoResponse = 0

// Rule injects a fault into matching requests.
type Rule struct {
	// Match selects requests by endpoint key, e.g. "GET /v2/droplets/{id}".
	// A trailing "*" makes it a prefix match ("GET /v2/droplets*" also
	// matches "GET /v2/droplets/{id}/actions"); "" and "*" match everything.
	Match string
	// Probability is the chance, 0..1, that a matching request gets the
	// fault. 0 means 1 (always), so that a rule fires unless told otherwise.
	Probability float64
	// Status is the HTTP status to fail with (e.g. 429, 500, 503). 0 means
	// no error: the rule only adds Latency.
	Status int
	// RetryAfter is what the fake should report in Retry-After for this
	// failure; 0 leaves it to the fake's default.
	RetryAfter time.Duration
	// Latency is extra delay before answering.
	Latency time.Duration
	// Remaining, if > 0, is how many more times the rule fires before it
	// expires and is removed. Requests the probability roll spares do not
	// count.
	Remaining int
	// Timeout hangs the request until the client gives up (its context is
	// done), simulating an API that never answers. Fakes should pass
	// Intercept a context that also ends when they shut down, or closing
	// them waits for the hung request.
	Timeout bool
	// AfterCommit makes the failure happen after the request took effect:
	// the fake processes it normally (a create creates) and only then
	// answers with Status instead, so the client cannot tell whether it
	// worked. It needs a Status; Timeout rules ignore it.
	AfterCommit bool
}

func (r Rule) matches(endpoint string) bool {
	switch {
	case r.Match == "" || r.Match == "*":
		return true
	case strings.HasSuffix(r.Match, "*"):
		return strings.HasPrefix(endpoint, strings.TrimSuffix(r.Match, "*"))
	default:
		return endpoint == r.Match
	}
}

// Decision is what Intercept tells a fake to do with one request.
type Decision struct {
	// Status is the HTTP status to fail with; 0 means serve normally.
	Status int
	// Throttled says Status comes from the rate limiter: answer with the
	// cloud's throttling error.
	Throttled bool
	// AfterCommit says to serve the request normally first, so its effects
	// happen, then discard that answer and fail with Status. It is only set
	// with a non-zero Status, never with Throttled.
	AfterCommit bool
	// RetryAfter is how long the client should wait before retrying: the
	// time until the rate limiter has a token, or the rule's RetryAfter.
	RetryAfter time.Duration
	// Abandoned says the client gave up while the request was held (latency
	// or Timeout). Write nothing and do not call Record: it is counted
	// already, under NoResponse.
	Abandoned bool
	// Quota is the rate limiter's state after this request, for the fake's
	// rate-limit headers.
	Quota Quota
}

// Quota describes the token bucket after a request.
type Quota struct {
	// Enabled is false when no rate limit is set; the other fields are then
	// zero and the fake reports its cloud's nominal limits.
	Enabled bool
	// Limit is the bucket's capacity (the burst).
	Limit int
	// Rate is how many tokens a second refill it.
	Rate float64
	// Remaining is how many whole tokens are left.
	Remaining int
	// Reset is when the bucket will be full again.
	Reset time.Time
}

// Injector decides, per request, whether to delay, fail or throttle it, and
// counts the outcome. It is safe for concurrent use; the zero value is not
// usable, call New.
type Injector struct {
	mu      sync.Mutex
	rng     *rand.Rand
	now     func() time.Time // replaced in tests to drive the token bucket
	latency time.Duration

	rules  []*ruleEntry // in id order
	nextID int

	bucket         bucket
	family         func(endpoint string) (string, Limit)
	families       map[string]*bucket
	throttleStatus int

	calls     map[string]int
	responses map[string]map[int]int
	total     int
	throttled int
	injected  int
}

type ruleEntry struct {
	id int
	Rule
}

// New returns an Injector with no rules, no latency and no rate limit,
// seeded with DefaultSeed.
func New() *Injector {
	i := &Injector{
		now:            time.Now,
		throttleStatus: 429,
		calls:          map[string]int{},
		responses:      map[string]map[int]int{},
	}
	i.SetSeed(DefaultSeed)
	return i
}

// SetSeed reseeds the generator behind Rule.Probability.
func (i *Injector) SetSeed(seed int64) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.rng = rand.New(rand.NewPCG(uint64(seed), 0))
}

// AddRule installs a rule and returns its id. Rules are evaluated in the
// order they were added.
func (i *Injector) AddRule(r Rule) int {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.nextID++
	i.rules = append(i.rules, &ruleEntry{id: i.nextID, Rule: r})
	return i.nextID
}

// FailNext makes the next n requests matching match fail with status, and
// returns the rule's id.
func (i *Injector) FailNext(match string, n, status int) int {
	return i.AddRule(Rule{Match: match, Probability: 1, Status: status, Remaining: n})
}

// RemoveRule removes a rule; removing an unknown or expired id is a no-op.
func (i *Injector) RemoveRule(id int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.removeLocked(id)
}

func (i *Injector) removeLocked(id int) {
	for k, e := range i.rules {
		if e.id == id {
			i.rules = append(i.rules[:k], i.rules[k+1:]...)
			return
		}
	}
}

// ClearRules removes every rule.
func (i *Injector) ClearRules() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.rules = nil
}

// Rules returns the rules still in force, keyed by id.
func (i *Injector) Rules() map[int]Rule {
	i.mu.Lock()
	defer i.mu.Unlock()
	out := make(map[int]Rule, len(i.rules))
	for _, e := range i.rules {
		out[e.id] = e.Rule
	}
	return out
}

// SetLatency adds d to every request, before any rule's latency.
func (i *Injector) SetLatency(d time.Duration) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.latency = d
}

// SetRateLimit turns on a token bucket refilling at rps tokens per second
// and holding at most burst (at least 1); the bucket starts full. rps <= 0
// turns rate limiting off.
func (i *Injector) SetRateLimit(rps float64, burst int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if rps <= 0 {
		i.bucket = bucket{}
		return
	}
	burst = max(burst, 1)
	i.bucket = bucket{rps: rps, burst: burst, tokens: float64(burst), last: i.now()}
}

// Limit is one token bucket's shape: it refills at RPS tokens a second and
// holds at most Burst.
type Limit struct {
	RPS   float64
	Burst int
}

// SetFamilies throttles the way real clouds do, with a bucket per family
// of calls rather than one for everything: family names the bucket a
// request endpoint takes its token from, and that bucket's Limit (read when
// the bucket is first used; each bucket starts full). A family of "" or a
// Limit with RPS <= 0 leaves the request to the account-wide bucket of
// SetRateLimit alone. A request must pass both buckets. nil turns family
// buckets off.
func (i *Injector) SetFamilies(family func(endpoint string) (string, Limit)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.family = family
	i.families = map[string]*bucket{}
}

// familyLocked is the family bucket endpoint draws from, or nil.
func (i *Injector) familyLocked(endpoint string) *bucket {
	if i.family == nil {
		return nil
	}
	name, l := i.family(endpoint)
	if name == "" || l.RPS <= 0 {
		return nil
	}
	b := i.families[name]
	if b == nil {
		burst := max(l.Burst, 1)
		b = &bucket{rps: l.RPS, burst: burst, tokens: float64(burst), last: i.now()}
		i.families[name] = b
	}
	return b
}

// SetThrottleStatus sets the status of rate-limited requests (default 429;
// some clouds throttle with 400 or 503).
func (i *Injector) SetThrottleStatus(status int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.throttleStatus = status
}

// Intercept counts a request to endpoint and decides its fate. It has
// already waited out any latency (or, for a Timeout rule, until ctx is done)
// when it returns. See Decision for what the fake must do next.
func (i *Injector) Intercept(ctx context.Context, endpoint string) Decision {
	d, wait, hang := i.decide(endpoint)

	if wait > 0 || hang {
		var timer <-chan time.Time
		if !hang {
			t := time.NewTimer(wait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-timer:
		case <-ctx.Done():
			i.Record(endpoint, NoResponse)
			return Decision{Abandoned: true, Quota: d.Quota}
		}
	}
	return d
}

// decide does all bookkeeping under the lock; the caller sleeps outside it.
func (i *Injector) decide(endpoint string) (d Decision, wait time.Duration, hang bool) {
	i.mu.Lock()
	defer i.mu.Unlock()

	i.total++
	i.calls[endpoint]++
	wait = i.latency

	for _, b := range []*bucket{&i.bucket, i.familyLocked(endpoint)} {
		if b == nil || !b.enabled() {
			continue
		}
		ok, retry := b.take(i.now())
		d.Quota = b.quota(i.now())
		if !ok {
			i.throttled++
			d.Status, d.Throttled, d.RetryAfter = i.throttleStatus, true, retry
			return d, wait, false
		}
	}

	for k := 0; k < len(i.rules); k++ {
		e := i.rules[k]
		if !e.matches(endpoint) || !i.roll(e.Probability) {
			continue
		}
		wait += e.Latency
		if e.Remaining > 0 {
			e.Remaining--
			if e.Remaining == 0 {
				i.removeLocked(e.id)
				k--
			}
		}
		if e.Timeout {
			i.injected++
			return d, wait, true
		}
		if e.Status != 0 {
			i.injected++
			d.Status, d.RetryAfter, d.AfterCommit = e.Status, e.RetryAfter, e.AfterCommit
			return d, wait, false
		}
	}
	return d, wait, false
}

func (i *Injector) roll(p float64) bool {
	if p <= 0 || p >= 1 {
		return true
	}
	return i.rng.Float64() < p
}

// Record counts the status a fake answered endpoint with. Call it once per
// response written, including injected failures.
func (i *Injector) Record(endpoint string, status int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	m := i.responses[endpoint]
	if m == nil {
		m = map[int]int{}
		i.responses[endpoint] = m
	}
	m[status]++
}

// Calls returns the number of requests per endpoint key.
func (i *Injector) Calls() map[string]int {
	i.mu.Lock()
	defer i.mu.Unlock()
	out := make(map[string]int, len(i.calls))
	for k, v := range i.calls {
		out[k] = v
	}
	return out
}

// Endpoints returns the endpoint keys seen so far, sorted.
func (i *Injector) Endpoints() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	out := make([]string, 0, len(i.calls))
	for k := range i.calls {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CallCount returns the number of requests to one endpoint key.
func (i *Injector) CallCount(endpoint string) int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.calls[endpoint]
}

// Responses returns how often endpoint was answered with each status.
func (i *Injector) Responses(endpoint string) map[int]int {
	i.mu.Lock()
	defer i.mu.Unlock()
	out := make(map[int]int, len(i.responses[endpoint]))
	for k, v := range i.responses[endpoint] {
		out[k] = v
	}
	return out
}

// Total returns the number of requests intercepted.
func (i *Injector) Total() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.total
}

// Throttled returns the number of requests the rate limiter rejected.
func (i *Injector) Throttled() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.throttled
}

// Injected returns the number of requests a rule failed or hung.
func (i *Injector) Injected() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.injected
}

// Reset zeroes the counters. Rules, latency and the rate limit stay.
func (i *Injector) Reset() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.calls = map[string]int{}
	i.responses = map[string]map[int]int{}
	i.total, i.throttled, i.injected = 0, 0, 0
}

// bucket is a token bucket; the zero value is disabled.
type bucket struct {
	rps    float64
	burst  int
	tokens float64
	last   time.Time
}

func (b *bucket) enabled() bool { return b.rps > 0 }

func (b *bucket) refill(now time.Time) {
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = math.Min(float64(b.burst), b.tokens+elapsed*b.rps)
		b.last = now
	}
}

// take spends a token, or says how long until one is available.
func (b *bucket) take(now time.Time) (bool, time.Duration) {
	b.refill(now)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, seconds((1 - b.tokens) / b.rps)
}

func (b *bucket) quota(now time.Time) Quota {
	return Quota{
		Enabled:   true,
		Limit:     b.burst,
		Rate:      b.rps,
		Remaining: int(b.tokens),
		Reset:     now.Add(seconds((float64(b.burst) - b.tokens) / b.rps)),
	}
}

func seconds(s float64) time.Duration {
	return time.Duration(math.Ceil(s * float64(time.Second)))
}
