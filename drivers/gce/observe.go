package gce

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	computev1 "google.golang.org/api/compute/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// observed is what one sync read of the Service's load balancer: every
// resource it may change, nil (or absent from a map) where GCE has none.
// Planning works from it alone.
type observed struct {
	rule *computepb.ForwardingRule
	// switched: the rule is missing or of the other scheme, so what the
	// other scheme alone uses is deleted first (old says what exists).
	switched bool
	old      oldScheme

	// External (target pool) load balancers.
	httpHC *computev1.HttpHealthCheck
	pool   *computepb.TargetPool
	// Internal (backend service) load balancers.
	regionHC *computepb.HealthCheck
	groups   map[string]*groupState // by zone, for the zones with nodes
	bs       *computepb.BackendService
	// Both.
	firewalls map[string]*computepb.Firewall // by name
}

// groupState is the cluster's instance group of one zone.
type groupState struct {
	exists  bool
	members map[string]bool // short instance URLs
}

// oldScheme is what exists of the other scheme's load balancer of the
// Service, observed only on a switch.
type oldScheme struct {
	pool, httpHC bool // external leftovers, the Service being internal now
	bs, regionHC bool // internal leftovers, the Service being external now
	// groupZones are the zones of the cluster's instance groups, listed
	// when no other internal load balancer of the cluster is left to use
	// them.
	groupZones []string
}

// observe reads the Service's resources other than the forwarding rule,
// which the caller read first (fr: nil when there is none). It changes
// nothing.
func (l *loadBalancers) observe(ctx context.Context, cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, fr *computepb.ForwardingRule, switched bool) (*observed, error) {
	if len(env.nodeTags) == 0 {
		// Checked before anything is changed: without tags the firewall
		// rules would reach no node.
		return nil, errors.New("gce: the nodes' network tags are unknown; set drivers.gce.nodeTags so firewall rules reach them")
	}
	obs := &observed{rule: fr, switched: switched, firewalls: map[string]*computepb.Firewall{}}
	if switched {
		if err := l.observeOldScheme(ctx, cl, env, spec, obs); err != nil {
			return nil, err
		}
	}
	var err error
	if spec.internal {
		if obs.regionHC, err = l.getRegionHealthCheck(ctx, cl, env, spec.base+"-hc"); err != nil {
			return nil, err
		}
		obs.groups = map[string]*groupState{}
		for _, zone := range slices.Sorted(maps.Keys(byZone)) {
			if obs.groups[zone], err = l.observeGroup(ctx, cl, env, zone); err != nil {
				return nil, err
			}
		}
		if obs.bs, err = l.getBackendService(ctx, cl, env, spec.base); err != nil {
			return nil, err
		}
	} else {
		if obs.httpHC, err = l.getHTTPHealthCheck(ctx, cl, env, spec.base+"-hc"); err != nil {
			return nil, err
		}
		if obs.pool, err = l.getTargetPool(ctx, cl, env, spec.base); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{spec.base + "-fw", spec.base + "-hcfw"} {
		fw, err := l.getFirewall(ctx, cl, env, name)
		if err != nil {
			return nil, err
		}
		if fw != nil {
			obs.firewalls[name] = fw
		}
	}
	return obs, nil
}

// observeOldScheme finds what the other scheme's load balancer left. With
// no rule to show the old scheme (a pass may have stopped after deleting
// it), both schemes' leftovers are looked for the same way.
func (l *loadBalancers) observeOldScheme(ctx context.Context, cl *clients, env *environment, spec *lbSpec, obs *observed) error {
	if spec.internal {
		pool, err := l.getTargetPool(ctx, cl, env, spec.base)
		if err != nil {
			return err
		}
		hc, err := l.getHTTPHealthCheck(ctx, cl, env, spec.base+"-hc")
		if err != nil {
			return err
		}
		obs.old.pool, obs.old.httpHC = pool != nil, hc != nil
		return nil
	}
	services, err := l.clusterBackendServices(ctx, cl, env)
	if err != nil {
		return err
	}
	obs.old.bs = slices.Contains(services, spec.base)
	hc, err := l.getRegionHealthCheck(ctx, cl, env, spec.base+"-hc")
	if err != nil {
		return err
	}
	obs.old.regionHC = hc != nil
	// The groups are shared: they go only with the cluster's last
	// internal load balancer.
	if slices.ContainsFunc(services, func(s string) bool { return s != spec.base }) {
		return nil
	}
	obs.old.groupZones, err = l.groupZones(ctx, cl, env)
	return err
}

// orNil turns a definitive not-found into no resource.
func orNil[T any](v *T, err error) (*T, error) {
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	return v, err
}

func (l *loadBalancers) getHTTPHealthCheck(ctx context.Context, cl *clients, env *environment, name string) (*computev1.HttpHealthCheck, error) {
	return orNil(call(ctx, l.c, "httpHealthChecks.get", func(ctx context.Context) (*computev1.HttpHealthCheck, error) {
		return cl.httpHealth.Get(env.project, name).Context(ctx).Do()
	}))
}

func (l *loadBalancers) getTargetPool(ctx context.Context, cl *clients, env *environment, name string) (*computepb.TargetPool, error) {
	return orNil(call(ctx, l.c, "targetPools.get", func(ctx context.Context) (*computepb.TargetPool, error) {
		return cl.targetPools.Get(ctx, &computepb.GetTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: name})
	}))
}

func (l *loadBalancers) getRegionHealthCheck(ctx context.Context, cl *clients, env *environment, name string) (*computepb.HealthCheck, error) {
	return orNil(call(ctx, l.c, "regionHealthChecks.get", func(ctx context.Context) (*computepb.HealthCheck, error) {
		return cl.regionHealth.Get(ctx, &computepb.GetRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: name})
	}))
}

func (l *loadBalancers) getBackendService(ctx context.Context, cl *clients, env *environment, name string) (*computepb.BackendService, error) {
	return orNil(call(ctx, l.c, "regionBackendServices.get", func(ctx context.Context) (*computepb.BackendService, error) {
		return cl.backendServices.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: name})
	}))
}

func (l *loadBalancers) getFirewall(ctx context.Context, cl *clients, env *environment, name string) (*computepb.Firewall, error) {
	return orNil(call(ctx, l.c, "firewalls.get", func(ctx context.Context) (*computepb.Firewall, error) {
		return cl.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.project, Firewall: name})
	}))
}

// observeGroup reads the cluster's instance group of zone and its members.
func (l *loadBalancers) observeGroup(ctx context.Context, cl *clients, env *environment, zone string) (*groupState, error) {
	name := l.c.instanceGroupName()
	_, err := call(ctx, l.c, "instanceGroups.get", func(ctx context.Context) (*computepb.InstanceGroup, error) {
		return cl.instanceGroups.Get(ctx, &computepb.GetInstanceGroupRequest{Project: env.project, Zone: zone, InstanceGroup: name})
	})
	if cloudapi.IsNotFound(err) {
		return &groupState{}, nil
	}
	if err != nil {
		return nil, err
	}
	members, err := l.groupMembers(ctx, cl, env, zone)
	if err != nil {
		return nil, err
	}
	return &groupState{exists: true, members: members}, nil
}

// groupMembers lists the instances of the cluster's group in zone.
func (l *loadBalancers) groupMembers(ctx context.Context, cl *clients, env *environment, zone string) (map[string]bool, error) {
	name := l.c.instanceGroupName()
	have, err := pages(ctx, l.c, "instanceGroups.listInstances", func(ctx context.Context, token string) ([]*computepb.InstanceWithNamedPorts, string, error) {
		it := cl.instanceGroups.ListInstances(ctx, &computepb.ListInstancesInstanceGroupsRequest{Project: env.project, Zone: zone, InstanceGroup: name,
			InstanceGroupsListInstancesRequestResource: &computepb.InstanceGroupsListInstancesRequest{}})
		return nextPage[*computepb.InstanceWithNamedPorts](it, token)
	})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, h := range have {
		out[shortURL(h.GetInstance())] = true
	}
	return out, nil
}

// clusterBackendServices names the cluster's backend services in the
// region: its internal load balancers.
func (l *loadBalancers) clusterBackendServices(ctx context.Context, cl *clients, env *environment) ([]string, error) {
	services, err := pages(ctx, l.c, "regionBackendServices.list", func(ctx context.Context, token string) ([]*computepb.BackendService, string, error) {
		it := cl.backendServices.List(ctx, &computepb.ListRegionBackendServicesRequest{Project: env.project, Region: env.region})
		return nextPage[*computepb.BackendService](it, token)
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, bs := range services {
		if strings.HasPrefix(bs.GetName(), l.c.prefix) {
			out = append(out, bs.GetName())
		}
	}
	return out, nil
}

// groupZones lists the zones holding one of the cluster's instance groups.
func (l *loadBalancers) groupZones(ctx context.Context, cl *clients, env *environment) ([]string, error) {
	groups, err := pages(ctx, l.c, "instanceGroups.aggregatedList", func(ctx context.Context, token string) ([]compute.InstanceGroupsScopedListPair, string, error) {
		it := cl.instanceGroups.AggregatedList(ctx, &computepb.AggregatedListInstanceGroupsRequest{Project: env.project, Filter: ptr(nameFilter([]string{l.c.instanceGroupName()}))})
		return nextPage[compute.InstanceGroupsScopedListPair](it, token)
	})
	if err != nil {
		return nil, err
	}
	var zones []string
	for _, p := range groups {
		for _, g := range p.Value.GetInstanceGroups() {
			if g.GetName() == l.c.instanceGroupName() {
				zones = append(zones, strings.TrimPrefix(p.Key, "zones/"))
			}
		}
	}
	slices.Sort(zones)
	return zones, nil
}
