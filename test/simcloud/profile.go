package simcloud

import (
	"time"

	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

// Profile is how much like the real cloud a fake behaves: what takes
// time, what reads stale, what lingers and what throttles. The e2e tests,
// the soak and the demo run on Realistic, so polyccm's retry paths are
// exercised as the real APIs force them; a test that needs speed may pick
// Fast, or turn one knob down after applying a profile, and says why.
type Profile struct {
	// Name is shown in test and demo output.
	Name string
	// Provisioning is how long a new load balancer (and a droplet created
	// through the API) stays provisioning: DigitalOcean "new", ELBv2
	// "provisioning". Real clouds take minutes; compressed to seconds.
	Provisioning time.Duration
	// Operation is how long a GCE operation stays RUNNING.
	Operation time.Duration
	// TargetHealth is how long a registered ELBv2 target stays "initial".
	TargetHealth time.Duration
	// Consistency is how long a resource just created may read as not
	// found (EC2 security groups).
	Consistency time.Duration
	// Linger is how long a deleted load balancer keeps its dependencies
	// in use (an NLB's interfaces holding its security group).
	Linger time.Duration
	// Throttling turns on each cloud's throttling buckets at its
	// published rates (the fakes' Throttling).
	Throttling bool
}

// Realistic is the default profile: the real clouds' behaviour,
// compressed from minutes to about a second so the suite stays quick.
var Realistic = Profile{
	Name:         "realistic",
	Provisioning: 2 * time.Second,
	Operation:    300 * time.Millisecond,
	TargetHealth: time.Second,
	Consistency:  500 * time.Millisecond,
	Linger:       2 * time.Second,
	Throttling:   true,
}

// Fast makes every change take effect at the next request and nothing
// throttle: for tests and benchmarks that measure polyccm itself, not its
// patience with the cloud.
var Fast = Profile{Name: "fast"}

// AWS applies the profile to the AWS fake.
func (p Profile) AWS(f *fakeaws.Server) {
	f.SetLoadBalancerActivationDelay(p.Provisioning)
	f.SetTargetHealthDelay(p.TargetHealth)
	f.SetConsistencyDelay(p.Consistency)
	f.SetDependencyLinger(p.Linger)
	if p.Throttling {
		f.Faults().SetFamilies(fakeaws.Throttling)
	} else {
		f.Faults().SetFamilies(nil)
	}
}

// DigitalOcean applies the profile to the DigitalOcean fake.
func (p Profile) DigitalOcean(f *fakedo.Server) {
	f.SetActivationDelay(p.Provisioning)
	f.SetLoadBalancerActivationDelay(p.Provisioning)
	f.SetActionDelay(p.Operation)
	// A firewall change is "waiting" while it reaches the droplets.
	f.SetFirewallSettleDelay(p.Operation)
	if p.Throttling {
		f.Faults().SetFamilies(fakedo.Throttling)
	} else {
		f.Faults().SetFamilies(nil)
	}
}

// GCE applies the profile to the Compute Engine fake.
func (p Profile) GCE(f *fakegce.Server) {
	f.SetOperationDelay(p.Operation)
	if p.Throttling {
		f.Faults().SetFamilies(fakegce.Throttling)
	} else {
		f.Faults().SetFamilies(nil)
	}
}
