// Package cloudapi is the one place every cloud API call goes through: a
// client-side rate limit, a per-attempt timeout, retries with backoff for
// throttling and transient failures, error classification, a shared hold-off
// when the cloud says "slow down", credential-failure reporting and
// Prometheus metrics. Drivers wrap each SDK call in Client.Do and supply a
// Classifier; they never retry or count calls themselves.
package cloudapi

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
)

// Options configure a Client.
type Options struct {
	Driver string
	// QPS and Burst bound the calls polyccm makes, before the cloud has to.
	QPS   float64
	Burst int
	// Timeout bounds one attempt.
	Timeout time.Duration
	// MaxAttempts bounds attempts for retryable failures (default 4).
	MaxAttempts int
	// BaseBackoff and MaxBackoff shape the exponential backoff between
	// attempts (defaults 250ms and 8s).
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// Classify maps the driver's SDK errors; required.
	Classify Classifier
	// AuthHint tells the operator what to check when credentials are
	// rejected, e.g. "check drivers.digitalocean.token".
	AuthHint string
	// Upstream are the driver's upstream CCM's metric families, fed by
	// the same calls (upstream.go). The families that read HTTP requests
	// see those the driver's clients send through Client.Transport.
	Upstream []UpstreamFamily
}

// Client runs cloud calls for one driver. It is safe for concurrent use.
type Client struct {
	o       Options
	limiter *rate.Limiter
	up      *upstream // nil without upstream families

	// closed refuses every attempt from then on: polyccm is handing over
	// to another leader, which must be the only one calling the cloud.
	closed atomic.Bool

	mu          sync.Mutex
	holdUntil   time.Time // no attempts before this: the cloud asked us to wait
	authErr     error     // set while the latest call was rejected for credentials
	lastAuthLog time.Time
}

// New returns a Client. Zero values in o get safe defaults.
func New(o Options) *Client {
	if o.Classify == nil {
		panic("cloudapi: Options.Classify is required")
	}
	if o.QPS <= 0 {
		o.QPS = 10
	}
	if o.Burst <= 0 {
		o.Burst = 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 4
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 250 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 8 * time.Second
	}
	registerMetrics()
	authValid.WithLabelValues(o.Driver).Set(1)
	return &Client{o: o, limiter: rate.NewLimiter(rate.Limit(o.QPS), o.Burst), up: newUpstream(o.Upstream)}
}

// ErrClosed is why a call made after Close did not reach the cloud.
var ErrClosed = errors.New("polyccm is shutting down; no more cloud calls")

// Close refuses every later attempt, including the retries of calls under
// way, without calling the cloud. The runner closes the client on
// SIGTERM, before it gives up the Lease: a batch or retry still pending
// must not reach the cloud after the next leader has started.
func (c *Client) Close() { c.closed.Store(true) }

// Driver is the name of the driver this client calls for.
func (c *Client) Driver() string { return c.o.Driver }

type callOptions struct {
	notIdempotent bool
	creates       bool
	permission    bool
}

// CallOption changes how one call is made.
type CallOption func(*callOptions)

// NotIdempotent marks a call that must not be repeated when its outcome is
// unknown (a create that may have happened). Only throttled attempts, which
// the cloud did not process, are retried.
func NotIdempotent() CallOption { return func(o *callOptions) { o.notIdempotent = true } }

// ResourcePermission marks a call whose 401/403 speaks of a permission on
// that one resource (one in another project, such as a Shared VPC host's
// firewall rules) rather than of the credentials: the error is returned
// as usual, but the credentials are not marked rejected, so the rest of
// polyccm's work goes on and nothing logs a credential failure.
func ResourcePermission() CallOption { return func(o *callOptions) { o.permission = true } }

// Creates marks a call that makes a new resource. Under a context from
// WithoutCreates it is not made, and Do returns ErrCreateSkipped.
func Creates() CallOption { return func(o *callOptions) { o.creates = true } }

type noCreatesKey struct{}

// WithoutCreates returns a context under which calls marked Creates are
// refused. A load balancer's node update uses it: it may race with the
// Service's deletion and must never bring back what the deletion removed.
func WithoutCreates(ctx context.Context) context.Context {
	return context.WithValue(ctx, noCreatesKey{}, true)
}

// MayCreate reports whether calls marked Creates are made under ctx. A
// driver whose create path does work before its first create (reading
// dependencies, changing rules) checks it to stop early.
func MayCreate(ctx context.Context) bool {
	no, _ := ctx.Value(noCreatesKey{}).(bool)
	return !no
}

// WithCreates lifts WithoutCreates for resources the cluster shares rather
// than one Service's load balancer owns (GCE's per-zone instance groups):
// the node sync makes the group of a zone that gained its first Node.
func WithCreates(ctx context.Context) context.Context {
	return context.WithValue(ctx, noCreatesKey{}, false)
}

// ErrReadOnly is what a call refused by a read-only transport (polyccm
// plan: core/readonly) wraps. It is never retried.
var ErrReadOnly = errors.New("refused: polyccm plan makes no change to the cloud")

// ErrCreateSkipped is returned for a Creates call under WithoutCreates.
var ErrCreateSkipped = errors.New("not creating: this pass only updates what exists")

// AttemptTimeout is the bound on one attempt (cloudAPI.timeout). A driver
// whose SDK does not pass the context to every request bounds its HTTP
// client with it too.
func (c *Client) AttemptTimeout() time.Duration { return c.o.Timeout }

// Do runs fn, the SDK call named op (e.g. "droplets.list"), under the
// client's rate limit, timeout and retry policy. It returns nil or an
// *Error. A KindNotFound result is a normal answer, not a failure.
func (c *Client) Do(ctx context.Context, op string, fn func(ctx context.Context) error, opts ...CallOption) error {
	if c.up == nil {
		return c.do(ctx, op, fn, nil, opts...)
	}
	start := time.Now()
	rec, bind, done := c.up.begin()
	defer done()
	err := c.do(ctx, op, fn, bind, opts...)
	c.up.end(op, start, rec, err)
	return err
}

// do is Do; bind, when not nil, ties each attempt's context to the call's
// upstream record.
func (c *Client) do(ctx context.Context, op string, fn func(ctx context.Context) error, bind func(context.Context) context.Context, opts ...CallOption) error {
	var co callOptions
	for _, o := range opts {
		o(&co)
	}
	if co.creates && !MayCreate(ctx) {
		return ErrCreateSkipped
	}
	var last *Error
	for attempt := 1; ; attempt++ {
		if err := c.wait(ctx); err != nil {
			if last != nil {
				return last
			}
			return &Error{Driver: c.o.Driver, Op: op, Kind: KindUnavailable, Attempts: attempt - 1, Err: err}
		}
		// Checked after the wait: a call held by the rate limit or a
		// hold-off must not go out once the client is closed.
		if c.closed.Load() {
			return &Error{Driver: c.o.Driver, Op: op, Kind: KindUnavailable, Attempts: attempt - 1, Err: ErrClosed}
		}
		start := time.Now()
		actx, cancel := context.WithTimeout(ctx, c.o.Timeout)
		if bind != nil {
			actx = bind(actx)
		}
		err := fn(actx)
		cancel()
		elapsed := time.Since(start)

		if err == nil {
			observe(c.o.Driver, op, "success", elapsed)
			c.setAuth(nil, op)
			return nil
		}
		cl := c.classify(err)
		if c.up != nil {
			c.up.failedAttempt(op, cl)
		}
		if cl.Kind == KindUnavailable && ctx.Err() != nil {
			// The caller gave up; that says nothing about the cloud.
			observe(c.o.Driver, op, "canceled", elapsed)
			return &Error{Driver: c.o.Driver, Op: op, Kind: KindUnavailable, Attempts: attempt, Err: ctx.Err()}
		}
		observe(c.o.Driver, op, cl.Kind.String(), elapsed)
		last = &Error{Driver: c.o.Driver, Op: op, Kind: cl.Kind, Status: cl.Status, RetryAfter: cl.RetryAfter, Attempts: attempt, Err: err}
		switch cl.Kind {
		case KindUnauthorized:
			if !co.permission {
				c.setAuth(last, op)
			}
		case KindNotFound, KindInvalid:
			// The cloud answered; the credentials work.
			c.setAuth(nil, op)
		}
		if cl.Kind == KindThrottled {
			c.holdOff(cl.RetryAfter)
		}
		retry := cl.Kind.retryable()
		if co.notIdempotent && cl.Kind != KindThrottled {
			retry = false
		}
		if !retry || attempt >= c.o.MaxAttempts {
			return last
		}
		retries.WithLabelValues(c.o.Driver, op, cl.Kind.String()).Inc()
		if err := sleep(ctx, c.backoff(attempt, cl.RetryAfter)); err != nil {
			return last
		}
	}
}

func (c *Client) classify(err error) Classification {
	// Errors made by this package's helpers carry their own kind.
	var s *statusError
	if errors.As(err, &s) {
		return Classification{Kind: s.kind}
	}
	if errors.Is(err, ErrReadOnly) {
		// Refused before reaching the cloud; repeating it changes nothing.
		return Classification{Kind: KindUnknown}
	}
	cl := c.o.Classify(err)
	if cl.Kind == KindUnknown {
		if k, ok := ClassifyTransport(err); ok {
			cl.Kind = k
		}
	}
	return cl
}

// wait blocks until the shared hold-off has passed and the limiter admits
// the call.
func (c *Client) wait(ctx context.Context) error {
	// Loop: another throttled call may extend the hold-off while we sleep.
	for {
		c.mu.Lock()
		hold := time.Until(c.holdUntil)
		c.mu.Unlock()
		if hold <= 0 {
			break
		}
		if err := sleep(ctx, hold); err != nil {
			return err
		}
	}
	return c.limiter.Wait(ctx)
}

// holdOff makes every caller of this client pause after the cloud
// throttled us, instead of each discovering the limit on its own.
func (c *Client) holdOff(retryAfter time.Duration) {
	if retryAfter <= 0 {
		retryAfter = c.o.BaseBackoff
	}
	retryAfter = min(retryAfter, maxRetryAfter)
	until := time.Now().Add(retryAfter)
	c.mu.Lock()
	if until.After(c.holdUntil) {
		c.holdUntil = until
	}
	c.mu.Unlock()
	throttleHolds.WithLabelValues(c.o.Driver).Inc()
}

func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := c.o.BaseBackoff << (attempt - 1)
	if d > c.o.MaxBackoff || d <= 0 {
		d = c.o.MaxBackoff
	}
	// Full jitter between d/2 and d spreads retries of many callers.
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	if retryAfter > d {
		d = min(retryAfter, maxRetryAfter)
	}
	return d
}

// maxRetryAfter caps what a cloud's Retry-After can make polyccm wait, so
// a bogus header cannot stall it.
const maxRetryAfter = time.Minute

func (c *Client) setAuth(err *Error, op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		if c.authErr != nil {
			klog.InfoS("Cloud API accepts our credentials again", "driver", c.o.Driver, "operation", op)
			authValid.WithLabelValues(c.o.Driver).Set(1)
		}
		c.authErr = nil
		return
	}
	if c.authErr == nil {
		authValid.WithLabelValues(c.o.Driver).Set(0)
	}
	c.authErr = err
	// Loud but not flooding: once a minute while it lasts.
	if time.Since(c.lastAuthLog) > time.Minute {
		c.lastAuthLog = time.Now()
		klog.ErrorS(err, "Cloud API rejected polyccm's credentials; nothing will be changed or deleted until it accepts them",
			"driver", c.o.Driver, "operation", op, "whatToCheck", c.o.AuthHint)
	}
}

// AuthError returns the last credential rejection while it is current:
// nil once any later call is answered normally.
func (c *Client) AuthError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.authErr == nil {
		return nil
	}
	return c.authErr
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Call is Do for SDK calls that return a value: the value of the attempt
// that succeeded, or the error.
func Call[T any](ctx context.Context, c *Client, op string, fn func(ctx context.Context) (T, error), opts ...CallOption) (T, error) {
	var out T
	err := c.Do(ctx, op, func(ctx context.Context) error {
		v, err := fn(ctx)
		if err == nil {
			out = v
		}
		return err
	}, opts...)
	return out, err
}
