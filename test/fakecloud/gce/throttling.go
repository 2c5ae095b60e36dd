package gce

import (
	"strings"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// Throttling gives each call the token bucket Compute Engine throttles it
// by, for faults.Injector.SetFamilies. Compute's API rate quotas are per
// project and per minute, in groups: reads of one resource, list calls,
// operation reads, and mutations ("API rate limits" in the Compute Engine
// documentation; the defaults vary by project). Each group here is a
// bucket holding a minute's quota and refilled evenly over the minute,
// with defaults of the published order: 1,500 reads, 1,500 operation
// reads, 1,500 lists and 1,500 mutations a minute. Token and metadata
// calls are not API calls and belong to no family.
func Throttling(endpoint string) (string, faults.Limit) {
	method, path, ok := strings.Cut(endpoint, " ")
	if !ok || !strings.HasPrefix(path, "/compute/v1/") {
		return "", faults.Limit{}
	}
	perMinute := func(n float64) faults.Limit { return faults.Limit{RPS: n / 60, Burst: int(n)} }
	switch {
	case strings.Contains(path, "/operations/"): // get, and POST .../wait
		return "operation reads", perMinute(1500)
	case method != "GET":
		return "mutations", perMinute(1500)
	case strings.HasSuffix(path, "}") && !strings.Contains(path, "/aggregated/"):
		return "reads", perMinute(1500)
	}
	return "lists", perMinute(1500)
}
