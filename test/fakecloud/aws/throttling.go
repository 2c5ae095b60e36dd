package aws

import (
	"strings"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// Throttling gives each call the token bucket AWS throttles it by, for
// faults.Injector.SetFamilies. The fake counts calls as "SERVICE Action"
// (see Faults); the buckets follow the services' documentation:
//
//   - EC2 throttles each API on its own bucket ("Request throttling for
//     the Amazon EC2 API"): non-mutating actions (Describe*, Get*) hold
//     100 tokens refilled at 20 a second, mutating actions 200 refilled
//     at 5, so a burst of writes drains long before a burst of reads.
//   - ELBv2 shares one bucket among its non-mutating actions, 40 tokens
//     refilled at 10 a second ("Request throttling for the ELB API"), and
//     gives each mutating action its own; the published per-action figures
//     vary, and 20 tokens at 5 a second is the order of the lower ones.
//   - Classic ELB (API version 1) is throttled the same way, but "each
//     ELB API version has its own bucket and tokens" (same page): its
//     describes share a bucket of 40 at 10 a second apart from ELBv2's,
//     and each mutation has its own of 20 at 5.
//   - STS has its own account-wide quota, 600 requests a second.
//
// IMDS is not throttled by these buckets (it limits per instance, by
// packets), so its calls belong to no family.
func Throttling(endpoint string) (string, faults.Limit) {
	service, action, ok := strings.Cut(endpoint, " ")
	if !ok {
		return "", faults.Limit{}
	}
	reads := strings.HasPrefix(action, "Describe") || strings.HasPrefix(action, "Get")
	switch service {
	case "ec2":
		if reads {
			return endpoint, faults.Limit{RPS: 20, Burst: 100}
		}
		return endpoint, faults.Limit{RPS: 5, Burst: 200}
	case "elbv2":
		if reads {
			return "elbv2 describe", faults.Limit{RPS: 10, Burst: 40}
		}
		return endpoint, faults.Limit{RPS: 5, Burst: 20}
	case "elb":
		if reads {
			return "elb describe", faults.Limit{RPS: 10, Burst: 40}
		}
		return endpoint, faults.Limit{RPS: 5, Burst: 20}
	case "sts":
		return "sts", faults.Limit{RPS: 600, Burst: 600}
	}
	return "", faults.Limit{}
}
