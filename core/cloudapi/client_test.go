package cloudapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// guard turns a hang into a failure; it never measures speed.
const guard = 20 * time.Second

// httpErr stands in for an SDK error carrying an HTTP status. token is
// what an SDK might hold but must never print.
type httpErr struct {
	status     int
	retryAfter time.Duration
	token      string
}

func (e *httpErr) Error() string { return fmt.Sprintf("server said %d", e.status) }

func status(code int) error { return &httpErr{status: code} }

// classify is a driver classifier: statuses it knows, nothing else, so the
// client's transport fallback is exercised for everything else.
func classify(err error) cloudapi.Classification {
	var h *httpErr
	if errors.As(err, &h) {
		return cloudapi.Classification{Kind: cloudapi.ClassifyHTTPStatus(h.status), Status: h.status, RetryAfter: h.retryAfter}
	}
	return cloudapi.Classification{}
}

var runs atomic.Int64

// uniqueDriver names a client so its metric series belong to this test run
// alone: the registry is process-wide and -count repeats tests.
func uniqueDriver(t *testing.T) string {
	return fmt.Sprintf("%s#%d", t.Name(), runs.Add(1))
}

// newClient is fast: no client-side rate limit to speak of and millisecond
// backoffs.
func newClient(t *testing.T, mod func(*cloudapi.Options)) *cloudapi.Client {
	o := cloudapi.Options{
		Driver:      uniqueDriver(t),
		QPS:         1e6,
		Burst:       1e6,
		Timeout:     guard,
		MaxAttempts: 3,
		BaseBackoff: time.Millisecond,
		MaxBackoff:  2 * time.Millisecond,
		Classify:    classify,
	}
	if mod != nil {
		mod(&o)
	}
	return cloudapi.New(o)
}

// script returns errs[i] on attempt i and the last entry ever after.
type script struct {
	errs  []error
	calls atomic.Int32
}

func (s *script) fn(context.Context) error {
	n := int(s.calls.Add(1))
	if n > len(s.errs) {
		n = len(s.errs)
	}
	return s.errs[n-1]
}

func outcomes(t *testing.T, driver, op string) map[string]float64 {
	t.Helper()
	got, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer,
		"polyccm_cloud_api_requests_total", map[string]string{"driver": driver, "operation": op}, "outcome")
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// gauge reads one gauge series from the legacy registry.
func gauge(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if testutil.LabelsMatch(m, labels) {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func TestDoSuccessFirstTry(t *testing.T) {
	c := newClient(t, nil)
	s := &script{errs: []error{nil}}
	var hadDeadline bool
	err := c.Do(context.Background(), "things.get", func(ctx context.Context) error {
		_, hadDeadline = ctx.Deadline()
		return s.fn(ctx)
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
	if !hadDeadline {
		t.Error("the attempt had no deadline: Options.Timeout not applied")
	}
	if got := outcomes(t, c.Driver(), "things.get"); !maps.Equal(got, map[string]float64{"success": 1}) {
		t.Errorf("outcomes = %v", got)
	}
}

func TestDoRetryPolicy(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name          string
		errs          []error
		notIdempotent bool
		wantKind      cloudapi.Kind // meaningful only with wantErr
		wantErr       bool
		wantCalls     int
		wantStatus    int
	}{
		{name: "throttled then ok", errs: []error{status(429), nil}, wantCalls: 2},
		{name: "5xx then ok", errs: []error{status(500), status(502), nil}, wantCalls: 3},
		{name: "conflict then ok", errs: []error{status(409), nil}, wantCalls: 2},
		{name: "5xx until MaxAttempts", errs: []error{status(503)}, wantErr: true, wantKind: cloudapi.KindUnavailable, wantCalls: 3, wantStatus: 503},
		{name: "throttled until MaxAttempts", errs: []error{status(429)}, wantErr: true, wantKind: cloudapi.KindThrottled, wantCalls: 3, wantStatus: 429},
		{name: "EOF is transport", errs: []error{io.ErrUnexpectedEOF}, wantErr: true, wantKind: cloudapi.KindUnavailable, wantCalls: 3},
		{name: "404 not retried", errs: []error{status(404)}, wantErr: true, wantKind: cloudapi.KindNotFound, wantCalls: 1, wantStatus: 404},
		{name: "400 not retried", errs: []error{status(400)}, wantErr: true, wantKind: cloudapi.KindInvalid, wantCalls: 1, wantStatus: 400},
		{name: "401 not retried", errs: []error{status(401)}, wantErr: true, wantKind: cloudapi.KindUnauthorized, wantCalls: 1, wantStatus: 401},
		{name: "unclassified not retried", errs: []error{boom}, wantErr: true, wantKind: cloudapi.KindUnknown, wantCalls: 1},
		{name: "NotFound helper keeps kind", errs: []error{cloudapi.NotFound("no droplet %d", 7)}, wantErr: true, wantKind: cloudapi.KindNotFound, wantCalls: 1},
		{name: "Invalid helper keeps kind", errs: []error{cloudapi.Invalid("bad id %q", "x")}, wantErr: true, wantKind: cloudapi.KindInvalid, wantCalls: 1},
		{name: "wrapped NotFound helper", errs: []error{fmt.Errorf("get: %w", cloudapi.NotFound("gone"))}, wantErr: true, wantKind: cloudapi.KindNotFound, wantCalls: 1},
		{name: "not idempotent: 5xx not retried", errs: []error{status(500), nil}, notIdempotent: true, wantErr: true, wantKind: cloudapi.KindUnavailable, wantCalls: 1, wantStatus: 500},
		{name: "not idempotent: conflict not retried", errs: []error{status(409), nil}, notIdempotent: true, wantErr: true, wantKind: cloudapi.KindConflict, wantCalls: 1, wantStatus: 409},
		{name: "not idempotent: 429 retried", errs: []error{status(429), status(429), nil}, notIdempotent: true, wantCalls: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, nil)
			s := &script{errs: tt.errs}
			var opts []cloudapi.CallOption
			if tt.notIdempotent {
				opts = append(opts, cloudapi.NotIdempotent())
			}
			err := c.Do(context.Background(), "op", s.fn, opts...)
			if n := int(s.calls.Load()); n != tt.wantCalls {
				t.Errorf("%d attempts, want %d", n, tt.wantCalls)
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Do: %v", err)
				}
				return
			}
			var e *cloudapi.Error
			if !errors.As(err, &e) {
				t.Fatalf("Do returned %T %v, want *cloudapi.Error", err, err)
			}
			if e.Kind != tt.wantKind || cloudapi.KindOf(err) != tt.wantKind {
				t.Errorf("kind %v (KindOf %v), want %v", e.Kind, cloudapi.KindOf(err), tt.wantKind)
			}
			if e.Attempts != tt.wantCalls {
				t.Errorf("Error.Attempts = %d, want %d", e.Attempts, tt.wantCalls)
			}
			if e.Status != tt.wantStatus {
				t.Errorf("Error.Status = %d, want %d", e.Status, tt.wantStatus)
			}
			if e.Driver != c.Driver() || e.Op != "op" {
				t.Errorf("Error names %q %q", e.Driver, e.Op)
			}
			if got := cloudapi.IsNotFound(err); got != (tt.wantKind == cloudapi.KindNotFound) {
				t.Errorf("IsNotFound = %v", got)
			}
			// The SDK's error stays reachable for drivers that inspect it.
			if last := tt.errs[min(tt.wantCalls, len(tt.errs))-1]; !errors.Is(err, last) {
				t.Errorf("%v does not wrap the last attempt's error", err)
			}
		})
	}
}

func TestDoHonoursRetryAfter(t *testing.T) {
	const retryAfter = 100 * time.Millisecond
	c := newClient(t, nil)
	var ends, starts []time.Time
	err := c.Do(context.Background(), "op", func(context.Context) error {
		starts = append(starts, time.Now())
		defer func() { ends = append(ends, time.Now()) }()
		if len(starts) == 1 {
			return &httpErr{status: 429, retryAfter: retryAfter}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if len(starts) != 2 {
		t.Fatalf("%d attempts, want 2", len(starts))
	}
	// A lower bound only: waiting at least RetryAfter is the contract and
	// cannot be flaky; how much longer it took is not checked.
	if gap := starts[1].Sub(ends[0]); gap < retryAfter {
		t.Errorf("retried after %v, before the cloud's Retry-After %v", gap, retryAfter)
	}
}

func TestThrottleHoldsOtherCallers(t *testing.T) {
	const retryAfter = 150 * time.Millisecond
	c := newClient(t, nil)

	var throttledAt time.Time
	aDone := make(chan error, 1)
	go func() {
		first := true
		aDone <- c.Do(context.Background(), "a", func(context.Context) error {
			if first {
				first = false
				defer func() { throttledAt = time.Now() }()
				return &httpErr{status: 429, retryAfter: retryAfter}
			}
			return nil
		})
	}()

	// Wait until the client has recorded the hold-off, so B starts after
	// it; the throttle_holds_total series for this driver says so.
	deadline := time.Now().Add(guard)
	for {
		v, _ := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer,
			"polyccm_cloud_api_throttle_holds_total", map[string]string{"driver": c.Driver()}, "driver")
		if v[c.Driver()] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the throttled call never recorded a hold-off")
		}
		time.Sleep(time.Millisecond)
	}

	var bStart time.Time
	if err := c.Do(context.Background(), "b", func(context.Context) error {
		bStart = time.Now()
		return nil
	}); err != nil {
		t.Fatalf("B: %v", err)
	}
	select {
	case err := <-aDone:
		if err != nil {
			t.Fatalf("A: %v", err)
		}
	case <-time.After(guard):
		t.Fatal("A did not finish")
	}
	// B never saw a 429 itself, yet waited out the Retry-After A got.
	if gap := bStart.Sub(throttledAt); gap < retryAfter {
		t.Errorf("B's call went out %v after A was throttled, within the Retry-After %v", gap, retryAfter)
	}
}

func TestTransportErrorsAreRetried(t *testing.T) {
	// A loopback port nobody listens on: connections are refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	hc := &http.Client{Transport: &http.Transport{Proxy: nil}}
	t.Cleanup(hc.CloseIdleConnections)

	tests := []struct {
		name   string
		mod    func(*cloudapi.Options)
		fn     func(ctx context.Context) error
		wantIs func(error) bool
	}{
		{
			name: "connection refused",
			fn: func(ctx context.Context) error {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v2/droplets", nil)
				if err != nil {
					return err
				}
				resp, err := hc.Do(req)
				if err == nil {
					resp.Body.Close()
					return errors.New("something listens on the closed port")
				}
				return err
			},
			wantIs: func(err error) bool { var u *url.Error; return errors.As(err, &u) },
		},
		{
			name: "per-attempt timeout",
			mod:  func(o *cloudapi.Options) { o.Timeout = 20 * time.Millisecond },
			fn: func(ctx context.Context) error {
				<-ctx.Done()
				return ctx.Err()
			},
			wantIs: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.mod)
			var calls atomic.Int32
			err := c.Do(context.Background(), "op", func(ctx context.Context) error {
				calls.Add(1)
				return tt.fn(ctx)
			})
			if k := cloudapi.KindOf(err); k != cloudapi.KindUnavailable {
				t.Errorf("kind %v (%v), want unavailable", k, err)
			}
			if !tt.wantIs(err) {
				t.Errorf("%v does not carry the transport error", err)
			}
			if n := calls.Load(); n != 3 {
				t.Errorf("%d attempts, want 3 (retried up to MaxAttempts)", n)
			}
			if got := outcomes(t, c.Driver(), "op"); !maps.Equal(got, map[string]float64{"unavailable": 3}) {
				t.Errorf("outcomes = %v", got)
			}
		})
	}
}

func TestCallerCancel(t *testing.T) {
	// A server that holds requests until the test ends, so only the
	// caller's cancellation can end them.
	hold := make(chan struct{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { close(hold); srv.Close() })
	hc := &http.Client{Transport: &http.Transport{Proxy: nil}}
	t.Cleanup(hc.CloseIdleConnections)

	tests := []struct {
		name string
		fn   func(ctx context.Context) error
	}{
		{"fn returns ctx.Err", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }},
		{"fn returns wrapped ctx.Err", func(ctx context.Context) error { <-ctx.Done(); return fmt.Errorf("sdk: %w", ctx.Err()) }},
		{"http request", func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+l.Addr().String()+"/", nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err == nil {
				resp.Body.Close()
				return errors.New("request was answered")
			}
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{})
			var calls atomic.Int32
			done := make(chan error, 1)
			go func() {
				done <- c.Do(ctx, "op", func(ctx context.Context) error {
					if calls.Add(1) == 1 {
						close(started)
					}
					return tt.fn(ctx)
				})
			}()
			select {
			case <-started:
			case <-time.After(guard):
				t.Fatal("the call never started")
			}
			cancel()
			var err error
			select {
			case err = <-done:
			case <-time.After(guard):
				t.Fatal("Do did not return after its caller cancelled")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Do = %v, want it to wrap context.Canceled", err)
			}
			if cloudapi.IsNotFound(err) {
				t.Errorf("a cancelled call reads as not-found: %v", err)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("%d attempts, want 1: a cancelled call is not retried", n)
			}
			// The caller gave up: that is not a cloud failure.
			if got := outcomes(t, c.Driver(), "op"); !maps.Equal(got, map[string]float64{"canceled": 1}) {
				t.Errorf("outcomes = %v, want only canceled", got)
			}
		})
	}
}

func TestCallerCancelDuringBackoff(t *testing.T) {
	// The backoff is an hour: only the cancellation can end the wait.
	c := newClient(t, func(o *cloudapi.Options) { o.BaseBackoff, o.MaxBackoff = time.Hour, time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &script{errs: []error{status(503)}}
	done := make(chan error, 1)
	go func() { done <- c.Do(ctx, "op", s.fn) }()
	// Wait for the failed attempt to be counted, then cancel the backoff.
	deadline := time.Now().Add(guard)
	for outcomes(t, c.Driver(), "op")["unavailable"] != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the first attempt was never counted")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if k := cloudapi.KindOf(err); k != cloudapi.KindUnavailable {
			t.Errorf("Do = %v, want the last attempt's unavailable error", err)
		}
	case <-time.After(guard):
		t.Fatal("Do kept backing off after its caller cancelled")
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

func TestCallerAlreadyCancelled(t *testing.T) {
	c := newClient(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := &script{errs: []error{nil}}
	err := c.Do(ctx, "op", s.fn)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Do = %v, want context.Canceled", err)
	}
	var e *cloudapi.Error
	if !errors.As(err, &e) || e.Attempts != 0 {
		t.Errorf("Do = %#v, want an *Error with 0 attempts", err)
	}
	if n := s.calls.Load(); n != 0 {
		t.Errorf("fn called %d times", n)
	}
}

func TestRateLimitBoundsCalls(t *testing.T) {
	// One call's worth of burst, refilled once an hour: the second call
	// cannot be admitted before its caller's deadline.
	c := newClient(t, func(o *cloudapi.Options) { o.QPS, o.Burst = 1.0/3600, 1 })
	s := &script{errs: []error{nil}}
	if err := c.Do(context.Background(), "op", s.fn); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Do(ctx, "op", s.fn); err == nil {
		t.Error("second call admitted despite the rate limit")
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("fn called %d times, want 1", n)
	}
}

func TestAuthError(t *testing.T) {
	tests := []struct {
		name      string
		then      error
		wantClear bool
	}{
		{"cleared by success", nil, true},
		{"cleared by not found", status(404), true},
		{"cleared by invalid", status(422), true},
		{"kept by unavailable", status(503), false},
		{"kept by throttling", status(429), false},
		{"kept by unclassified", errors.New("boom"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, func(o *cloudapi.Options) { o.MaxAttempts = 1 })
			valid := map[string]string{"driver": c.Driver()}
			if c.AuthError() != nil {
				t.Fatal("a new client reports an auth error")
			}
			if v, ok := gauge(t, "polyccm_cloud_api_credentials_valid", valid); !ok || v != 1 {
				t.Errorf("credentials_valid = %v (present %v), want 1", v, ok)
			}
			_ = c.Do(context.Background(), "op", func(context.Context) error { return status(403) })
			if k := cloudapi.KindOf(c.AuthError()); k != cloudapi.KindUnauthorized {
				t.Fatalf("after a 403, AuthError = %v", c.AuthError())
			}
			if v, _ := gauge(t, "polyccm_cloud_api_credentials_valid", valid); v != 0 {
				t.Errorf("credentials_valid = %v after a 403, want 0", v)
			}
			_ = c.Do(context.Background(), "op", func(context.Context) error { return tt.then })
			got := c.AuthError()
			if tt.wantClear != (got == nil) {
				t.Errorf("AuthError = %v, want cleared %v", got, tt.wantClear)
			}
			want := 0.0
			if tt.wantClear {
				want = 1
			}
			if v, _ := gauge(t, "polyccm_cloud_api_credentials_valid", valid); v != want {
				t.Errorf("credentials_valid = %v, want %v", v, want)
			}
		})
	}
}

// A 403 on a call marked ResourcePermission is the caller's to handle: it
// is returned, and the credentials are not marked rejected.
func TestResourcePermissionLeavesCredentials(t *testing.T) {
	c := newClient(t, func(o *cloudapi.Options) { o.MaxAttempts = 1 })
	err := c.Do(context.Background(), "op", func(context.Context) error { return status(403) }, cloudapi.ResourcePermission())
	if k := cloudapi.KindOf(err); k != cloudapi.KindUnauthorized {
		t.Errorf("err = %v, want an unauthorized error returned", err)
	}
	if got := c.AuthError(); got != nil {
		t.Errorf("AuthError = %v after a resource's 403, want none", got)
	}
}

func TestRequestMetricOutcomes(t *testing.T) {
	tests := []struct {
		name string
		errs []error
		want map[string]float64
	}{
		{"success", []error{nil}, map[string]float64{"success": 1}},
		{"not found", []error{status(404)}, map[string]float64{"not_found": 1}},
		{"retried", []error{status(503), status(429), nil}, map[string]float64{"unavailable": 1, "throttled": 1, "success": 1}},
		{"unauthorized", []error{status(401)}, map[string]float64{"unauthorized": 1}},
		{"invalid", []error{cloudapi.Invalid("no")}, map[string]float64{"invalid": 1}},
		{"conflict exhausted", []error{status(409)}, map[string]float64{"conflict": 3}},
		{"unclassified", []error{errors.New("?")}, map[string]float64{"error": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, nil)
			_ = c.Do(context.Background(), "things.list", (&script{errs: tt.errs}).fn)
			if got := outcomes(t, c.Driver(), "things.list"); !maps.Equal(got, tt.want) {
				t.Errorf("outcomes = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	c := newClient(t, nil)
	err := c.Do(context.Background(), "droplets.get", func(context.Context) error {
		return &httpErr{status: 503, token: "Bearer s3cr3t"}
	})
	msg := err.Error()
	want := c.Driver() + " droplets.get: unavailable (HTTP 503) after 3 attempts: server said 503"
	if msg != want {
		t.Errorf("Error() = %q, want %q", msg, want)
	}
	for _, secret := range []string{"s3cr3t", "Bearer", "Authorization"} {
		if strings.Contains(msg, secret) {
			t.Errorf("Error() %q leaks %q", msg, secret)
		}
	}

	tests := []struct {
		err  *cloudapi.Error
		want string
	}{
		{&cloudapi.Error{Driver: "do", Op: "droplets.list", Kind: cloudapi.KindNotFound, Status: 404, Attempts: 1, Err: errors.New("nope")},
			"do droplets.list: not_found (HTTP 404): nope"},
		{&cloudapi.Error{Driver: "do", Op: "x", Kind: cloudapi.KindUnknown, Attempts: 2, Err: errors.New("?")},
			"do x: error after 2 attempts: ?"},
		{&cloudapi.Error{Driver: "do", Op: "x", Kind: cloudapi.Kind(99), Err: errors.New("?")},
			"do x: error: ?"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	unavailable := &cloudapi.Error{Kind: cloudapi.KindUnavailable, Err: errors.New("503")}
	notFound := &cloudapi.Error{Kind: cloudapi.KindNotFound, Err: errors.New("404")}
	tests := []struct {
		name string
		err  error
		want cloudapi.Kind
	}{
		{"nil", nil, cloudapi.KindUnknown},
		{"plain", errors.New("x"), cloudapi.KindUnknown},
		{"Error", unavailable, cloudapi.KindUnavailable},
		{"wrapped Error", fmt.Errorf("listing: %w", notFound), cloudapi.KindNotFound},
		{"twice wrapped Error", fmt.Errorf("a: %w", fmt.Errorf("b: %w", notFound)), cloudapi.KindNotFound},
		{"NotFound helper", cloudapi.NotFound("gone"), cloudapi.KindNotFound},
		{"wrapped Invalid helper", fmt.Errorf("parse: %w", cloudapi.Invalid("bad")), cloudapi.KindInvalid},
		{"joined", errors.Join(errors.New("x"), notFound), cloudapi.KindNotFound},
		{"flattened with %v", fmt.Errorf("lost: %v", notFound), cloudapi.KindUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cloudapi.KindOf(tt.err); got != tt.want {
				t.Errorf("KindOf = %v, want %v", got, tt.want)
			}
			if got := cloudapi.IsNotFound(tt.err); got != (tt.want == cloudapi.KindNotFound) {
				t.Errorf("IsNotFound = %v", got)
			}
		})
	}
}

func TestClassifyHTTPStatus(t *testing.T) {
	tests := []struct {
		status int
		want   cloudapi.Kind
	}{
		{200, cloudapi.KindUnknown},
		{304, cloudapi.KindUnknown},
		{400, cloudapi.KindInvalid},
		{401, cloudapi.KindUnauthorized},
		{403, cloudapi.KindUnauthorized},
		{404, cloudapi.KindNotFound},
		{408, cloudapi.KindUnavailable},
		{409, cloudapi.KindConflict},
		{412, cloudapi.KindConflict},
		{422, cloudapi.KindInvalid},
		{429, cloudapi.KindThrottled},
		{500, cloudapi.KindUnavailable},
		{503, cloudapi.KindUnavailable},
	}
	for _, tt := range tests {
		if got := cloudapi.ClassifyHTTPStatus(tt.status); got != tt.want {
			t.Errorf("ClassifyHTTPStatus(%d) = %v, want %v", tt.status, got, tt.want)
		}
	}
}

func TestClassifyTransport(t *testing.T) {
	tests := []struct {
		name string
		err  error
		ok   bool
	}{
		{"deadline", context.DeadlineExceeded, true},
		{"wrapped deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"canceled", context.Canceled, true},
		{"op error", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")}, true},
		{"url error", &url.Error{Op: "Get", URL: "http://x", Err: errors.New("reset")}, true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"EOF", io.EOF, true},
		{"other", errors.New("x"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, ok := cloudapi.ClassifyTransport(tt.err)
			if ok != tt.ok {
				t.Fatalf("ClassifyTransport ok = %v, want %v", ok, tt.ok)
			}
			want := cloudapi.KindUnknown
			if ok {
				want = cloudapi.KindUnavailable
			}
			if k != want {
				t.Errorf("kind = %v, want %v", k, want)
			}
		})
	}
}

func TestNewRequiresClassifier(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New without a Classifier did not panic")
		}
	}()
	cloudapi.New(cloudapi.Options{Driver: "x"})
}

func TestConcurrentDo(t *testing.T) {
	// Exercised under -race: the shared hold-off and auth state.
	c := newClient(t, nil)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			errs := []error{nil}
			switch i % 3 {
			case 1:
				errs = []error{&httpErr{status: 429, retryAfter: time.Millisecond}, nil}
			case 2:
				errs = []error{status(401)}
			}
			_ = c.Do(context.Background(), "op", (&script{errs: errs}).fn)
			_ = c.AuthError()
		})
	}
	wg.Wait()
	got := outcomes(t, c.Driver(), "op")
	total := 0.0
	for _, v := range got {
		total += v
	}
	// 17 calls throttle once, so 67 attempts.
	if total != 67 {
		t.Errorf("outcomes = %v, want 67 attempts counted", got)
	}
}

// After Close no attempt reaches the cloud, not even a retry of a call
// already under way.
func TestClosedClientCallsNothing(t *testing.T) {
	c := cloudapi.New(cloudapi.Options{Driver: "fake", Classify: func(error) cloudapi.Classification {
		return cloudapi.Classification{Kind: cloudapi.KindUnavailable}
	}, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxAttempts: 5})
	calls := 0
	err := c.Do(context.Background(), "op", func(context.Context) error {
		calls++
		c.Close() // SIGTERM arrives while the first attempt fails
		return errors.New("503")
	})
	if calls != 1 || !errors.Is(err, cloudapi.ErrClosed) {
		t.Errorf("%d attempts, err %v; want 1 and ErrClosed", calls, err)
	}
	err = c.Do(context.Background(), "op", func(context.Context) error { calls++; return nil })
	if calls != 1 || !errors.Is(err, cloudapi.ErrClosed) {
		t.Errorf("a call after Close: %d attempts, err %v", calls, err)
	}
}
