package hetzner

import "github.com/polyccm/polyccm/test/fakecloud/faults"

// The project's rate limit as the API reference documents it: a bucket of
// 3,600 requests, refilled one request a second, for every endpoint
// together. Every answer reports it in RateLimit-Limit (the capacity),
// RateLimit-Remaining and RateLimit-Reset (the Unix time the bucket is
// full again); an empty bucket answers 429 rate_limit_exceeded.
const (
	DefaultRateLimit       = 3600
	DefaultRefillPerSecond = 1.0
)

// Throttling gives each call the bucket Hetzner Cloud throttles it by,
// for faults.Injector.SetFamilies: one per project, for every endpoint.
func Throttling(endpoint string) (string, faults.Limit) {
	return "project", faults.Limit{RPS: DefaultRefillPerSecond, Burst: DefaultRateLimit}
}

// SetRateLimit sets the project's bucket: limit requests, refilled at
// perSecond; the bucket starts full. A limit or rate <= 0 turns it off
// (the headers then report the nominal 3,600). It replaces the injector's
// families (Faults().SetFamilies), which the simulated cloud's profile
// also sets; the injector's own SetRateLimit bucket applies on top.
func (s *Server) SetRateLimit(limit int, perSecond float64) {
	if limit <= 0 || perSecond <= 0 {
		s.Faults().SetFamilies(nil)
		return
	}
	s.Faults().SetFamilies(func(string) (string, faults.Limit) {
		return "project", faults.Limit{RPS: perSecond, Burst: limit}
	})
}

// quotaLimit is the limit a 429's message names.
func quotaLimit(q faults.Quota) int {
	if q.Enabled {
		return q.Limit
	}
	return DefaultRateLimit
}
