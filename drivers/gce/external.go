package gce

import (
	"context"
	"errors"
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

func (l *loadBalancers) ensureExternal(ctx context.Context, cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, cur *computepb.ForwardingRule) (string, error) {
	hc, err := l.ensureHTTPHealthCheck(ctx, cl, env, spec)
	if err != nil {
		return "", err
	}
	pool, err := l.ensureTargetPool(ctx, cl, env, spec, hc, byZone)
	if err != nil {
		return "", err
	}
	if err := l.ensureFirewalls(ctx, cl, env, spec); err != nil {
		return "", err
	}
	want := spec.forwardingRule()
	want.Target, want.NetworkTier = &pool, &spec.tier
	return l.ensureForwardingRule(ctx, cl, env, spec, want, cur)
}

// ensureHTTPHealthCheck keeps the legacy HTTP health check a target pool
// uses on kube-proxy's health port.
func (l *loadBalancers) ensureHTTPHealthCheck(ctx context.Context, cl *clients, env *environment, spec *lbSpec) (string, error) {
	name := spec.base + "-hc"
	want := &computev1.HttpHealthCheck{
		Name: name, Description: description(spec), Port: int64(spec.hcPort), RequestPath: spec.hcPath,
		CheckIntervalSec: 8, TimeoutSec: 1, HealthyThreshold: 1, UnhealthyThreshold: 3,
	}
	cur, err := call(ctx, l.c, "httpHealthChecks.get", func(ctx context.Context) (*computev1.HttpHealthCheck, error) {
		return cl.httpHealth.Get(env.project, name).Context(ctx).Do()
	})
	switch {
	case cloudapi.IsNotFound(err):
		rid := newRequestID()
		op, err := call(ctx, l.c, "httpHealthChecks.insert", func(ctx context.Context) (*computev1.Operation, error) {
			return cl.httpHealth.Insert(env.project, want).RequestId(rid).Context(ctx).Do()
		}, cloudapi.Creates())
		if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
			return "", fmt.Errorf("creating health check %s: %w", name, err)
		}
		if err == nil {
			if err := l.c.wait(ctx, cl, globalOperation(env.project, op.Name), "creating health check "+name); err != nil {
				return "", err
			}
		}
	case err != nil:
		return "", err
	case cur.Port != want.Port || cur.RequestPath != want.RequestPath:
		rid := newRequestID()
		op, err := call(ctx, l.c, "httpHealthChecks.update", func(ctx context.Context) (*computev1.Operation, error) {
			return cl.httpHealth.Update(env.project, name, want).RequestId(rid).Context(ctx).Do()
		})
		if err != nil {
			return "", fmt.Errorf("updating health check %s: %w", name, err)
		}
		if err := l.c.wait(ctx, cl, globalOperation(env.project, op.Name), "updating health check "+name); err != nil {
			return "", err
		}
	}
	return "projects/" + env.project + "/global/httpHealthChecks/" + name, nil
}

// ensureTargetPool keeps the pool of node instances, changing membership
// in chunks (the API limits instances per call).
func (l *loadBalancers) ensureTargetPool(ctx context.Context, cl *clients, env *environment, spec *lbSpec, hc string, byZone map[string][]string) (string, error) {
	want := map[string]bool{}
	for zone, names := range byZone {
		for _, n := range names {
			want[instanceURL(env.project, zone, n)] = true
		}
	}
	url := "projects/" + env.project + "/regions/" + env.region + "/targetPools/" + spec.base
	get := func(ctx context.Context) (*computepb.TargetPool, error) {
		return cl.targetPools.Get(ctx, &computepb.GetTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: spec.base})
	}
	cur, err := call(ctx, l.c, "targetPools.get", get)
	if cloudapi.IsNotFound(err) {
		members := slices.Sorted(maps.Keys(want))
		pool := &computepb.TargetPool{Name: &spec.base, Description: ptr(description(spec)), HealthChecks: []string{hc},
			Instances: members[:min(len(members), targetPoolInsertLimit)]}
		if err := l.c.change(ctx, cl, "targetPools.insert", "creating target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.targetPools.Insert(ctx, &computepb.InsertTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPoolResource: pool})
		}); err != nil {
			return "", err
		}
		if len(members) <= targetPoolInsertLimit {
			return url, nil
		}
		// The other members are added like any new ones.
		cur, err = call(ctx, l.c, "targetPools.get", get)
	}
	if err != nil {
		return "", err
	}
	have := map[string]bool{}
	for _, u := range cur.GetInstances() {
		have[shortURL(u)] = true
	}
	add, remove := loadbalancers.Delta(want, have, strings.Compare)
	for chunk := range slices.Chunk(add, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "targetPools.addInstance", "adding instances to target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.targetPools.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPool: spec.base,
				TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: refs}})
		}); err != nil {
			return "", err
		}
	}
	for chunk := range slices.Chunk(remove, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "targetPools.removeInstance", "removing instances from target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.targetPools.RemoveInstance(ctx, &computepb.RemoveInstanceTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPool: spec.base,
				TargetPoolsRemoveInstanceRequestResource: &computepb.TargetPoolsRemoveInstanceRequest{Instances: refs}})
		}); err != nil {
			return "", err
		}
	}
	if !slices.ContainsFunc(cur.GetHealthChecks(), func(h string) bool { return shortURL(h) == hc }) {
		if err := l.c.change(ctx, cl, "targetPools.addHealthCheck", "attaching the health check to target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.targetPools.AddHealthCheck(ctx, &computepb.AddHealthCheckTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPool: spec.base,
				TargetPoolsAddHealthCheckRequestResource: &computepb.TargetPoolsAddHealthCheckRequest{HealthChecks: []*computepb.HealthCheckReference{{HealthCheck: &hc}}}})
		}); err != nil {
			return "", err
		}
	}
	return url, nil
}

func refsOf(urls []string) []*computepb.InstanceReference {
	out := make([]*computepb.InstanceReference, len(urls))
	for i, u := range urls {
		out[i] = &computepb.InstanceReference{Instance: ptr(u)}
	}
	return out
}

// ensureFirewalls opens the Service ports to its source ranges and the
// health-check port to Google's health checkers, on the nodes' tags.
func (l *loadBalancers) ensureFirewalls(ctx context.Context, cl *clients, env *environment, spec *lbSpec) error {
	if len(env.nodeTags) == 0 {
		return errors.New("gce: the nodes' network tags are unknown; set drivers.gce.nodeTags so firewall rules reach them")
	}
	proto := strings.ToLower(spec.protocol)
	rules := []*computepb.Firewall{
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
	for _, want := range rules {
		cur, err := call(ctx, l.c, "firewalls.get", func(ctx context.Context) (*computepb.Firewall, error) {
			return cl.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.project, Firewall: want.GetName()})
		})
		switch {
		case cloudapi.IsNotFound(err):
			if err := l.c.change(ctx, cl, "firewalls.insert", "creating firewall rule "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
				return cl.firewalls.Insert(ctx, &computepb.InsertFirewallRequest{RequestId: rid, Project: env.project, FirewallResource: want})
			}); err != nil {
				return err
			}
		case err != nil:
			return err
		case !sameFirewall(cur, want):
			if err := l.c.change(ctx, cl, "firewalls.update", "updating firewall rule "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
				return cl.firewalls.Update(ctx, &computepb.UpdateFirewallRequest{RequestId: rid, Project: env.project, Firewall: want.GetName(), FirewallResource: want})
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

func sameFirewall(cur, want *computepb.Firewall) bool {
	sortedEq := func(a, b []string) bool {
		a, b = slices.Clone(a), slices.Clone(b)
		slices.Sort(a)
		slices.Sort(b)
		return slices.Equal(a, b)
	}
	if !sortedEq(cur.GetSourceRanges(), want.GetSourceRanges()) || !sortedEq(cur.GetTargetTags(), want.GetTargetTags()) || len(cur.GetAllowed()) != len(want.GetAllowed()) {
		return false
	}
	for i := range want.GetAllowed() {
		c, w := cur.GetAllowed()[i], want.GetAllowed()[i]
		if !strings.EqualFold(c.GetIPProtocol(), w.GetIPProtocol()) || !sortedEq(c.GetPorts(), w.GetPorts()) {
			return false
		}
	}
	return true
}
