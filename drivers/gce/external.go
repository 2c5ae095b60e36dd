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

// The writes of an external load balancer: a legacy HTTP health check, a
// target pool of the nodes' instances, the firewall rules and a forwarding
// rule to the pool. plan decides which of them a sync makes.

// httpHealthCheck is the legacy HTTP health check a target pool uses, on
// kube-proxy's health port.
func httpHealthCheck(spec *lbSpec) *computev1.HttpHealthCheck {
	return &computev1.HttpHealthCheck{
		Name: spec.base + "-hc", Description: description(spec), Port: int64(spec.hcPort), RequestPath: spec.hcPath,
		CheckIntervalSec: 8, TimeoutSec: 1, HealthyThreshold: 1, UnhealthyThreshold: 3,
	}
}

func httpHealthCheckURL(env *environment, spec *lbSpec) string {
	return "projects/" + env.project + "/global/httpHealthChecks/" + spec.base + "-hc"
}

func targetPoolURL(env *environment, spec *lbSpec) string {
	return "projects/" + env.project + "/regions/" + env.region + "/targetPools/" + spec.base
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
	hc := httpHealthCheckURL(env, spec)
	pool := &computepb.TargetPool{Name: &spec.base, Description: ptr(description(spec)), HealthChecks: []string{hc},
		Instances: members[:min(len(members), targetPoolInsertLimit)]}
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
	return l.updateTargetPool(ctx, cl, env, spec, add, remove, !hasURL(cur.GetHealthChecks(), hc))
}

// updateTargetPool changes the pool's membership in chunks (the API limits
// instances per call), and attaches the health check when attach says.
func (l *loadBalancers) updateTargetPool(ctx context.Context, cl *clients, env *environment, spec *lbSpec, add, remove []string, attach bool) error {
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
	if !attach {
		return nil
	}
	hc := httpHealthCheckURL(env, spec)
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

// firewalls open the Service ports to its source ranges and the
// health-check port to Google's health checkers, on the nodes' tags.
func firewalls(env *environment, spec *lbSpec) []*computepb.Firewall {
	proto := strings.ToLower(spec.protocol)
	return []*computepb.Firewall{
		{
			Name: ptr(spec.base + "-fw"), Description: ptr(description(spec)), Network: ptr(networkURL(env)),
			Direction: ptr("INGRESS"), Priority: ptr(int32(1000)), SourceRanges: spec.sources, TargetTags: env.nodeTags,
			Allowed: []*computepb.Allowed{{IPProtocol: &proto, Ports: spec.firewallPorts()}},
		},
		{
			Name: ptr(spec.base + "-hcfw"), Description: ptr(description(spec)), Network: ptr(networkURL(env)),
			Direction: ptr("INGRESS"), Priority: ptr(int32(1000)), SourceRanges: healthCheckRanges, TargetTags: env.nodeTags,
			Allowed: []*computepb.Allowed{{IPProtocol: ptr("tcp"), Ports: []string{strconv.Itoa(int(spec.hcPort))}}},
		},
	}
}

func (l *loadBalancers) insertFirewall(ctx context.Context, cl *clients, env *environment, want *computepb.Firewall) error {
	return l.c.change(ctx, cl, "firewalls.insert", "creating firewall rule "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.firewalls.Insert(ctx, &computepb.InsertFirewallRequest{RequestId: rid, Project: env.project, FirewallResource: want})
	})
}

func (l *loadBalancers) updateFirewall(ctx context.Context, cl *clients, env *environment, want *computepb.Firewall) error {
	return l.c.change(ctx, cl, "firewalls.update", "updating firewall rule "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.firewalls.Update(ctx, &computepb.UpdateFirewallRequest{RequestId: rid, Project: env.project, Firewall: want.GetName(), FirewallResource: want})
	})
}
