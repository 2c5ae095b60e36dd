package cloudapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Upstream metrics: the series each driver's upstream CCM exports about
// its cloud calls, under upstream's names, label names and label values,
// so that dashboards and alerts survive a switch (docs/metrics.md). They
// are written here, from the same observations as polyccm's own
// polyccm_cloud_api_* series; a driver only picks its upstream's family
// (AWSAPI, GCEAPI, DigitalOceanFirewallAPI, HCloudAPI) and says how its
// operation names map onto upstream's label values
// (drivers/<cloud>/metrics.go, through driver.Driver.UpstreamMetrics).

// UpstreamFamily is one upstream CCM's set of cloud API metrics. The
// families are this package's own types: what a series means is decided
// once, here, not by each driver.
type UpstreamFamily interface {
	// register adds the family's metrics to the registry /metrics serves.
	register()
	// finished sees every call that made at least one attempt, once it
	// ended: success, or the error of its last attempt.
	finished(o *observation)
	// failedAttempt sees each attempt the cloud or the transport failed,
	// retried or not.
	failedAttempt(op string, cl Classification)
	// exchange sees every HTTP request the driver's clients sent through
	// Client.Transport, and requests reports whether the family needs it.
	exchange(x *exchange)
	requests() bool
	// tag, when not nil, puts a call's id on requests an SDK builds
	// without the caller's context (see GCEAPI.Tag).
	tagger() func(ctx context.Context, header, value string) context.Context
}

// observation is one call as a family sees it.
type observation struct {
	op      string
	elapsed time.Duration // from the call's start: rate limit, every attempt, backoff
	err     error         // nil on success
	kind    Kind          // of err
	status  int           // the cloud's HTTP status for the last attempt; 0 if none came
	http    *exchange     // the last HTTP request of the call, when the transport saw it
}

// exchange is one HTTP request through Client.Transport.
type exchange struct {
	req     *http.Request // the request as sent; read only
	status  int           // 0: no response
	err     error         // the transport's error
	elapsed time.Duration
}

// callRecord collects what the transport saw of one call.
type callRecord struct {
	mu   sync.Mutex
	last *exchange
}

func (r *callRecord) set(x *exchange) {
	r.mu.Lock()
	r.last = x
	r.mu.Unlock()
}

func (r *callRecord) get() *exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

type callRecordKey struct{}

// callHeader carries a call's id on requests built without the caller's
// context; the transport removes it before the request leaves.
const callHeader = "X-Polyccm-Call"

// upstream is a client's families, with what its calls need of them.
type upstream struct {
	families []UpstreamFamily
	http     bool
	tag      func(ctx context.Context, header, value string) context.Context

	nextID atomic.Uint64
	calls  sync.Map // id -> *callRecord, while tagged calls run
}

func newUpstream(fams []UpstreamFamily) *upstream {
	if len(fams) == 0 {
		return nil
	}
	u := &upstream{families: fams}
	for _, f := range fams {
		f.register()
		u.http = u.http || f.requests()
		if t := f.tagger(); t != nil {
			u.tag = t
		}
	}
	return u
}

// begin starts recording a call. The returned function binds the record
// to one attempt's context.
func (u *upstream) begin() (*callRecord, func(ctx context.Context) context.Context, func()) {
	rec := &callRecord{}
	if !u.http {
		return rec, func(ctx context.Context) context.Context { return ctx }, func() {}
	}
	if u.tag == nil {
		return rec, func(ctx context.Context) context.Context { return context.WithValue(ctx, callRecordKey{}, rec) }, func() {}
	}
	id := strconv.FormatUint(u.nextID.Add(1), 10)
	u.calls.Store(id, rec)
	bind := func(ctx context.Context) context.Context {
		return u.tag(context.WithValue(ctx, callRecordKey{}, rec), callHeader, id)
	}
	return rec, bind, func() { u.calls.Delete(id) }
}

// end hands a finished call to the families. Calls that never reached
// the cloud (refused after Close, cancelled while waiting, creates
// skipped) are not calls upstream would have made.
func (u *upstream) end(op string, start time.Time, rec *callRecord, err error) {
	o := &observation{op: op, elapsed: time.Since(start), err: err, http: rec.get()}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Attempts == 0 {
			return
		}
		o.kind, o.status = e.Kind, e.Status
	}
	if o.http != nil && o.http.status != 0 {
		o.status = o.http.status
	}
	for _, f := range u.families {
		f.finished(o)
	}
}

func (u *upstream) failedAttempt(op string, cl Classification) {
	for _, f := range u.families {
		f.failedAttempt(op, cl)
	}
}

// Transport returns what wraps the transport of every HTTP client the
// driver calls its cloud with (driver.Deps.Transport), so the upstream
// families that read HTTP requests (the status a DigitalOcean call was
// answered with, the zone of a GCE call, Hetzner's per-endpoint counts)
// see them. Nil when the driver's families need none: its clients stay
// exactly as the driver builds them.
func (c *Client) Transport() func(http.RoundTripper) http.RoundTripper {
	if c.up == nil || !c.up.http {
		return nil
	}
	return func(next http.RoundTripper) http.RoundTripper { return &observed{next: next, up: c.up} }
}

type observed struct {
	next http.RoundTripper
	up   *upstream
}

func (t *observed) RoundTrip(req *http.Request) (*http.Response, error) {
	rec, _ := req.Context().Value(callRecordKey{}).(*callRecord)
	if id := req.Header.Get(callHeader); id != "" {
		if rec == nil {
			if r, ok := t.up.calls.Load(id); ok {
				rec = r.(*callRecord)
			}
		}
		// A RoundTripper must not change the caller's request.
		req = req.Clone(req.Context())
		req.Header.Del(callHeader)
	}
	x := &exchange{req: req}
	for _, f := range t.up.families {
		if f.requests() {
			inFlight(f, 1)
		}
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	x.elapsed = time.Since(start)
	x.err = err
	if resp != nil {
		x.status = resp.StatusCode
	}
	for _, f := range t.up.families {
		if f.requests() {
			inFlight(f, -1)
			f.exchange(x)
		}
	}
	if rec != nil {
		rec.set(x)
	}
	return resp, err
}

// inFlight tells a family that counts requests under way (Hetzner's) of
// one more or one fewer.
func inFlight(f UpstreamFamily, d float64) {
	if g, ok := f.(interface{ inFlight(float64) }); ok {
		g.inFlight(d)
	}
}

// familyBase gives a family the hooks it does not use.
type familyBase struct{}

func (familyBase) failedAttempt(string, Classification) {}
func (familyBase) exchange(*exchange)                   {}
func (familyBase) requests() bool                       { return false }
func (familyBase) tagger() func(context.Context, string, string) context.Context {
	return nil
}
