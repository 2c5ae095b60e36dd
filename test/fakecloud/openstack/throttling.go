package openstack

import (
	"strings"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// OpenStack's services do not throttle by themselves (Nova dropped its
// rate limiter in Newton); clouds that limit do it in front of each API,
// in the load balancer or a WSGI middleware, per service. The defaults
// here are of the order public clouds put there: a bucket of 100 requests
// per service, refilled at 10 a second. Over the limit a service answers
// 429 (SetThrottleStatus for the 413 older Nova sent) with Retry-After
// and its own error document ("overLimit" for Nova).
const (
	DefaultRateLimit       = 100
	DefaultRefillPerSecond = 10.0
)

// Throttling gives each call the bucket of its service, for
// faults.Injector.SetFamilies: "compute", "network", "identity", ...
// Calls no route takes ("GET /compute/...") go by their path.
func Throttling(endpoint string) (string, faults.Limit) {
	return serviceOfEndpoint(endpoint), faults.Limit{RPS: DefaultRefillPerSecond, Burst: DefaultRateLimit}
}

// serviceOfEndpoint reads the service from an endpoint name
// ("compute.servers.list") or an unrouted call ("GET /regions/1/compute/x").
func serviceOfEndpoint(endpoint string) string {
	if _, path, ok := strings.Cut(endpoint, " "); ok {
		if rest, ok := strings.CutPrefix(path, "/regions/"); ok {
			_, path, _ = strings.Cut(rest, "/")
			path = "/" + path
		}
		return serviceOf(path)
	}
	svc, _, _ := strings.Cut(endpoint, ".")
	return svc
}

// SetRateLimit gives every service a bucket of limit requests, refilled
// at perSecond; buckets start full. A limit or rate <= 0 turns them off.
// It replaces the injector's families (Faults().SetFamilies); the
// injector's own SetRateLimit bucket applies on top.
func (s *Server) SetRateLimit(limit int, perSecond float64) {
	if limit <= 0 || perSecond <= 0 {
		s.Faults().SetFamilies(nil)
		return
	}
	s.Faults().SetFamilies(func(endpoint string) (string, faults.Limit) {
		return serviceOfEndpoint(endpoint), faults.Limit{RPS: perSecond, Burst: limit}
	})
}

// SetThrottleStatus sets the status of throttled requests: 429 (the
// default) or 413, as Nova's own limiter answered before Newton.
func (s *Server) SetThrottleStatus(status int) { s.Faults().SetThrottleStatus(status) }
