package gce

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	computev1 "google.golang.org/api/compute/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// targetPoolChunk is how many instances one addInstance/removeInstance
// call carries.
const targetPoolChunk = 1000

// targetPoolInsertLimit is how many instances a target pool can be created
// with (kubernetes/kubernetes#27829); the rest are added after.
const targetPoolInsertLimit = 200

// The writes of an external load balancer: a legacy HTTP health check (the
// nodes' shared one, or the Service's own with externalTrafficPolicy
// Local), a target pool of the nodes' instances, the firewall rules and a
// forwarding rule to the pool. plan decides which of them a sync makes.

// Health check timing, upstream's (gce.go); larger values an operator set
// are kept.
const (
	hcInterval  = 8
	hcTimeout   = 1
	hcHealthy   = 1
	hcUnhealthy = 3
)

// httpHealthCheck is the legacy HTTP health check a target pool uses;
// upstream's makeHTTPHealthCheck describes it by its own name.
func httpHealthCheck(spec *lbSpec, cur *computev1.HttpHealthCheck) *computev1.HttpHealthCheck {
	hc := &computev1.HttpHealthCheck{
		Name: spec.hcName, Description: serviceDescription(spec.hcName), Port: int64(spec.hcPort), RequestPath: spec.hcPath,
		CheckIntervalSec: hcInterval, TimeoutSec: hcTimeout, HealthyThreshold: hcHealthy, UnhealthyThreshold: hcUnhealthy,
	}
	if cur != nil {
		hc.CheckIntervalSec = max(hc.CheckIntervalSec, cur.CheckIntervalSec)
		hc.TimeoutSec = max(hc.TimeoutSec, cur.TimeoutSec)
		hc.HealthyThreshold = max(hc.HealthyThreshold, cur.HealthyThreshold)
		hc.UnhealthyThreshold = max(hc.UnhealthyThreshold, cur.UnhealthyThreshold)
	}
	return hc
}

// httpHealthView is what polyccm sets of a legacy health check.
type httpHealthView struct {
	Description        string `json:"description"`
	Port               int64  `json:"port"`
	RequestPath        string `json:"requestPath"`
	CheckIntervalSec   int64  `json:"checkIntervalSec"`
	TimeoutSec         int64  `json:"timeoutSec"`
	HealthyThreshold   int64  `json:"healthyThreshold"`
	UnhealthyThreshold int64  `json:"unhealthyThreshold"`
}

func viewHTTPHealthCheck(hc *computev1.HttpHealthCheck) httpHealthView {
	return httpHealthView{hc.Description, hc.Port, hc.RequestPath, hc.CheckIntervalSec, hc.TimeoutSec, hc.HealthyThreshold, hc.UnhealthyThreshold}
}

func httpHealthCheckURL(env *environment, name string) string {
	return "projects/" + env.project + "/global/httpHealthChecks/" + name
}

func targetPoolURL(env *environment, spec *lbSpec) string {
	return "projects/" + env.project + "/regions/" + env.region + "/targetPools/" + spec.base
}

// poolNeedsRecreate: a target pool's session affinity cannot change in
// place.
func poolNeedsRecreate(pool *computepb.TargetPool, spec *lbSpec) bool {
	return pool.GetSessionAffinity() != "" && pool.GetSessionAffinity() != spec.affinity
}

func (l *loadBalancers) planExternal(p *lbPlan, cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, obs *observed, replace bool) {
	hc := httpHealthCheck(spec, obs.httpHC)
	createOrUpdate(p, kindHTTPHealth, hc.Name, obs.httpHC != nil,
		func() []loadbalancers.Field {
			return loadbalancers.Diff(viewHTTPHealthCheck(obs.httpHC), viewHTTPHealthCheck(hc))
		},
		func(ctx context.Context) error { return l.insertHTTPHealthCheck(ctx, cl, env, hc) },
		func(ctx context.Context) error { return l.updateHTTPHealthCheck(ctx, cl, env, hc) })

	want := poolMembers(env, byZone)
	pool := obs.pool
	if pool != nil && replace && poolNeedsRecreate(pool, spec) {
		d := l.deleter(cl, env, spec)
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindPool, Name: spec.base,
			Fields: []loadbalancers.Field{{Name: "sessionAffinity", From: pool.GetSessionAffinity(), To: spec.affinity}}, Apply: d.targetPool})
		pool = nil
	}
	if pool == nil {
		p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindPool, Name: spec.base,
			Fields: memberFields(slices.Sorted(maps.Keys(want)), nil),
			Apply:  func(ctx context.Context) error { return l.createTargetPool(ctx, cl, env, spec, want) }})
		return
	}
	add, remove := loadbalancers.Delta(want, urlSet(pool.GetInstances()), strings.Compare)
	fields := memberFields(add, remove)
	hcURL := httpHealthCheckURL(env, spec.hcName)
	have := shortURLs(pool.GetHealthChecks())
	var detach []string
	for _, u := range have {
		if u != hcURL {
			detach = append(detach, u)
		}
	}
	attach := !slices.Contains(have, hcURL)
	if attach || len(detach) > 0 {
		fields = append(fields, loadbalancers.Field{Name: "healthChecks", From: listOrNone(have), To: hcURL})
	}
	p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindPool, Name: spec.base, Fields: fields,
		Apply: func(ctx context.Context) error {
			return l.updateTargetPool(ctx, cl, env, spec, add, remove, detach, attach)
		}})
}

// insertHTTPHealthCheck goes through the discovery-based client, so it
// waits on the operation itself; an existing check counts as made.
func (l *loadBalancers) insertHTTPHealthCheck(ctx context.Context, cl *clients, env *environment, want *computev1.HttpHealthCheck) error {
	rid := newRequestID()
	op, err := call(ctx, l.c, "httpHealthChecks.insert", func(ctx context.Context) (*computev1.Operation, error) {
		return cl.httpHealth.Insert(env.project, want).RequestId(rid).Context(ctx).Do()
	}, cloudapi.Creates())
	if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
		return fmt.Errorf("creating health check %s: %w", want.Name, err)
	}
	if err != nil {
		return nil
	}
	return l.c.wait(ctx, cl, globalOperation(env.project, op.Name), "creating health check "+want.Name)
}

func (l *loadBalancers) updateHTTPHealthCheck(ctx context.Context, cl *clients, env *environment, want *computev1.HttpHealthCheck) error {
	rid := newRequestID()
	op, err := call(ctx, l.c, "httpHealthChecks.update", func(ctx context.Context) (*computev1.Operation, error) {
		return cl.httpHealth.Update(env.project, want.Name, want).RequestId(rid).Context(ctx).Do()
	})
	if err != nil {
		return fmt.Errorf("updating health check %s: %w", want.Name, err)
	}
	return l.c.wait(ctx, cl, globalOperation(env.project, op.Name), "updating health check "+want.Name)
}

// poolMembers are the short URLs of the nodes' instances.
func poolMembers(env *environment, byZone map[string][]string) map[string]bool {
	want := map[string]bool{}
	for zone, names := range byZone {
		for _, n := range names {
			want[instanceURL(env.project, zone, n)] = true
		}
	}
	return want
}

// createTargetPool makes the pool with its members. A pool is created with
// at most targetPoolInsertLimit instances; the others are added like any
// new ones, to the pool as it is read back.
func (l *loadBalancers) createTargetPool(ctx context.Context, cl *clients, env *environment, spec *lbSpec, want map[string]bool) error {
	members := slices.Sorted(maps.Keys(want))
	hc := httpHealthCheckURL(env, spec.hcName)
	pool := &computepb.TargetPool{Name: &spec.base, Description: ptr(serviceDescription(spec.service)), HealthChecks: []string{hc},
		SessionAffinity: &spec.affinity, Instances: members[:min(len(members), targetPoolInsertLimit)]}
	if err := l.c.change(ctx, cl, "targetPools.insert", "creating target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.targetPools.Insert(ctx, &computepb.InsertTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPoolResource: pool})
	}); err != nil {
		return err
	}
	if len(members) <= targetPoolInsertLimit {
		return nil
	}
	cur, err := l.getTargetPool(ctx, cl, env, spec.base)
	if err != nil {
		return err
	}
	if cur == nil {
		return fmt.Errorf("target pool %s was created but is not there yet", spec.base)
	}
	add, remove := loadbalancers.Delta(want, urlSet(cur.GetInstances()), strings.Compare)
	return l.updateTargetPool(ctx, cl, env, spec, add, remove, nil, !hasURL(cur.GetHealthChecks(), hc))
}

// updateTargetPool changes the pool's membership in chunks (the API limits
// instances per call), detaches the health checks in detach and attaches
// the Service's when attach says (a pool takes one health check, so the
// old goes first).
func (l *loadBalancers) updateTargetPool(ctx context.Context, cl *clients, env *environment, spec *lbSpec, add, remove, detach []string, attach bool) error {
	for chunk := range slices.Chunk(add, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "targetPools.addInstance", "adding instances to target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.targetPools.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPool: spec.base,
				TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: refs}})
		}); err != nil {
			return err
		}
	}
	for chunk := range slices.Chunk(remove, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "targetPools.removeInstance", "removing instances from target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.targetPools.RemoveInstance(ctx, &computepb.RemoveInstanceTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPool: spec.base,
				TargetPoolsRemoveInstanceRequestResource: &computepb.TargetPoolsRemoveInstanceRequest{Instances: refs}})
		}); err != nil {
			return err
		}
	}
	if len(detach) > 0 {
		var refs []*computepb.HealthCheckReference
		for _, u := range detach {
			refs = append(refs, &computepb.HealthCheckReference{HealthCheck: ptr(u)})
		}
		if err := l.c.change(ctx, cl, "targetPools.removeHealthCheck", "detaching health checks from target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.targetPools.RemoveHealthCheck(ctx, &computepb.RemoveHealthCheckTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPool: spec.base,
				TargetPoolsRemoveHealthCheckRequestResource: &computepb.TargetPoolsRemoveHealthCheckRequest{HealthChecks: refs}})
		}); err != nil {
			return err
		}
	}
	if !attach {
		return nil
	}
	hc := httpHealthCheckURL(env, spec.hcName)
	return l.c.change(ctx, cl, "targetPools.addHealthCheck", "attaching the health check to target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.targetPools.AddHealthCheck(ctx, &computepb.AddHealthCheckTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPool: spec.base,
			TargetPoolsAddHealthCheckRequestResource: &computepb.TargetPoolsAddHealthCheckRequest{HealthChecks: []*computepb.HealthCheckReference{{HealthCheck: &hc}}}})
	})
}

// urlSet is a set of resource URLs in their short form.
func urlSet(urls []string) map[string]bool {
	out := map[string]bool{}
	for _, u := range urls {
		out[shortURL(u)] = true
	}
	return out
}

func hasURL(urls []string, want string) bool {
	return slices.ContainsFunc(urls, func(u string) bool { return shortURL(u) == want })
}

func refsOf(urls []string) []*computepb.InstanceReference {
	out := make([]*computepb.InstanceReference, len(urls))
	for i, u := range urls {
		out[i] = &computepb.InstanceReference{Instance: ptr(u)}
	}
	return out
}

// firewallFor is the firewall rule name of the Service, for its address
// ip, at priority (allowPriority): the traffic rule opens the Service
// ports to its source ranges, the health check's rule opens the health
// check port to Google's checkers, on the nodes' tags, described as
// upstream describes them.
func firewallFor(env *environment, spec *lbSpec, name, ip string, v6 bool, priority int32) *computepb.Firewall {
	fw := &computepb.Firewall{
		Name: &name, Description: ptr(firewallDescription(spec.service, ip)), Network: ptr(networkURL(env)),
		Direction: ptr("INGRESS"), Priority: &priority, TargetTags: spec.targetTags,
	}
	if name == firewallName(spec.base) || name == ipv6Name(firewallName(spec.base)) {
		proto := strings.ToLower(spec.protocol)
		fw.SourceRanges = spec.sources
		if v6 {
			fw.SourceRanges = spec.sources6
		}
		fw.Allowed = []*computepb.Allowed{{IPProtocol: &proto, Ports: spec.firewallPorts()}}
		fw.DestinationRanges = []string{destination(ip, v6)}
		return fw
	}
	fw.SourceRanges = hcRanges(env, v6)
	fw.Allowed = []*computepb.Allowed{{IPProtocol: ptr("tcp"), Ports: []string{strconv.Itoa(int(spec.hcPort))}}}
	switch {
	case spec.internal:
		fw.Description = ptr("")
	case spec.hcShared:
		fw.Description = ptr(nodesFirewallDescription(spec.cid))
	default:
		fw.DestinationRanges = []string{ip}
	}
	return fw
}

// insertFirewall makes a firewall rule; left reports a change the Shared
// VPC host project refused and its admin was asked to make.
func (l *loadBalancers) insertFirewall(ctx context.Context, cl *clients, env *environment, spec *lbSpec, want *computepb.Firewall) (left bool, err error) {
	err = l.c.change(ctx, cl, "firewalls.insert", "creating firewall rule "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.firewalls.Insert(ctx, &computepb.InsertFirewallRequest{RequestId: rid, Project: env.networkProject, FirewallResource: want})
	}, firewallOpts(env)...)
	return leftToAdmin(env, err), l.xpnFallback(env, spec, err, gcloudFirewallCreate(env, want))
}

// updateFirewall replaces a firewall rule with want, its priority too (a
// PUT without one resets it to 1000); left as for insertFirewall.
func (l *loadBalancers) updateFirewall(ctx context.Context, cl *clients, env *environment, spec *lbSpec, want *computepb.Firewall) (left bool, err error) {
	err = l.c.change(ctx, cl, "firewalls.update", "updating firewall rule "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.firewalls.Update(ctx, &computepb.UpdateFirewallRequest{RequestId: rid, Project: env.networkProject, Firewall: want.GetName(), FirewallResource: want})
	}, firewallOpts(env)...)
	return leftToAdmin(env, err), l.xpnFallback(env, spec, err, gcloudFirewallUpdate(env, want))
}
