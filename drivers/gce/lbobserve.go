package gce

import (
	"context"
	"maps"
	"slices"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	computev1 "google.golang.org/api/compute/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// observed is what one sync read of the Service's load balancer: every
// resource it may change, nil (or absent from a map) where GCE has none.
// Planning works from it alone.
type observed struct {
	rule *computepb.ForwardingRule
	// rule6 is the IPv6 rule, addr6 its reservation left by a stopped
	// sync.
	rule6 *computepb.ForwardingRule
	addr6 *computepb.Address
	// switched: the rule is of the other scheme, so it and what the other
	// scheme alone uses are deleted first. leftOther: no rule, but the
	// other scheme's pool or backend service of the Service is there (a
	// switch stopped after deleting the rule), so the same goes.
	switched, leftOther bool
	// addr is the address named for the load balancer: a reservation that
	// keeps the rule's IP while the rule is replaced, left over when a
	// sync stopped before releasing it.
	addr *computepb.Address
	// userIP: spec.loadBalancerIP is an address the operator reserved
	// (under another name); it is never reserved or released here.
	userIP bool

	// External (target pool) load balancers.
	httpHC *computev1.HttpHealthCheck // the one the Service needs
	pool   *computepb.TargetPool
	// Internal (backend service) load balancers.
	hc     *computepb.HealthCheck // the one the Service needs
	groups map[string]*groupState // by zone, for the zones with nodes
	bs     *computepb.BackendService
	// oldBS is the backend service the rule forwards to when it is not
	// the one the Service needs now (backend sharing turned on or off).
	oldBS string
	// firewalls by name: the Service's, and its health check's.
	firewalls map[string]*computepb.Firewall
	// deny is the Service's rule of upstream's L4 deny firewall
	// (denyfirewall.go), read for an external load balancer, or one being
	// switched from external.
	deny *computepb.Firewall
}

// groupState is the cluster's instance group of one zone.
type groupState struct {
	exists  bool
	members map[string]bool // short instance URLs
}

// observe reads the Service's resources other than the forwarding rule,
// which the caller read first (fr: nil when there is none), adding the
// deny rule to claims. It changes nothing.
func (l *loadBalancers) observe(ctx context.Context, cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, fr, fr6 *computepb.ForwardingRule, switched bool, claims *[]loadbalancers.Claim) (*observed, error) {
	// Checked before anything is changed: without tags the firewall
	// rules would reach no node (or, empty, every instance).
	tags, err := l.targetTags(ctx, cl, env, byZone)
	if err != nil {
		return nil, err
	}
	spec.targetTags = tags
	obs := &observed{rule: fr, rule6: fr6, switched: switched, firewalls: map[string]*computepb.Firewall{}}
	if obs.addr, err = l.getAddress(ctx, cl, env, spec.base); err != nil {
		return nil, err
	}
	if fr == nil {
		var other any
		if spec.internal {
			other, err = l.getTargetPool(ctx, cl, env, spec.base)
		} else {
			other, err = l.getBackendService(ctx, cl, env, spec.base)
		}
		if err != nil {
			return nil, err
		}
		obs.leftOther = !isNilPtr(other)
	}
	if spec.internal {
		if obs.hc, err = l.getHealthCheck(ctx, cl, env, spec.hcName); err != nil {
			return nil, err
		}
		obs.groups = map[string]*groupState{}
		for _, zone := range slices.Sorted(maps.Keys(byZone)) {
			if obs.groups[zone], err = l.observeGroup(ctx, cl, env, spec.cid, zone); err != nil {
				return nil, err
			}
		}
		if obs.bs, err = l.getBackendService(ctx, cl, env, spec.bsName); err != nil {
			return nil, err
		}
		if fr != nil && !switched {
			if old := lastSegment(fr.GetBackendService()); old != "" && old != spec.bsName {
				obs.oldBS = old
			}
		}
	} else {
		if obs.httpHC, err = l.getHTTPHealthCheck(ctx, cl, env, spec.hcName); err != nil {
			return nil, err
		}
		if obs.pool, err = l.getTargetPool(ctx, cl, env, spec.base); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{firewallName(spec.base), spec.hcFirewallName()} {
		fw, err := l.getFirewall(ctx, cl, env, name)
		if err != nil {
			return nil, err
		}
		if fw != nil {
			obs.firewalls[name] = fw
		}
	}
	if !spec.internal || obs.switched || obs.leftOther {
		if err := l.observeDeny(ctx, cl, env, spec, obs, claims); err != nil {
			return nil, err
		}
	}
	if err := l.observeIPv6(ctx, cl, env, spec, obs); err != nil {
		return nil, err
	}
	// Whose reservation spec.ip is matters only for a rule to be made.
	if spec.ip != "" && (obs.addr == nil || obs.addr.GetAddress() != spec.ip) && !ruleStays(env, spec, obs) {
		if spec.ipHolder == nil {
			a, err := l.addressByIP(ctx, cl, env, spec.ip)
			if err != nil {
				return nil, err
			}
			spec.ipHolder = &reservation{addr: a}
		}
		a := spec.ipHolder.addr
		obs.userIP = a != nil && a.GetName() != spec.base
	}
	return obs, nil
}

// reservation is the reserved address holding an IP, nil when none does.
type reservation struct{ addr *computepb.Address }

// ruleStays reports whether the Service's IPv4 rule is kept as it is:
// it holds the address asked for and nothing forces its replacement.
func ruleStays(env *environment, spec *lbSpec, obs *observed) bool {
	fr := obs.rule
	if fr == nil || obs.switched || canonicalIP(fr.GetIPAddress()) != spec.ip || len(ruleFields(fr, wantRule(env, spec))) > 0 {
		return false
	}
	return spec.internal || obs.pool == nil || !poolNeedsRecreate(obs.pool, spec)
}

// isNilPtr: a getter's "none" in an interface.
func isNilPtr(v any) bool {
	switch p := v.(type) {
	case *computepb.TargetPool:
		return p == nil
	case *computepb.BackendService:
		return p == nil
	}
	return v == nil
}

// hcFirewallName is the firewall rule of the Service's health check.
func (s *lbSpec) hcFirewallName() string {
	if s.internal {
		return internalHCFirewallName(s.base, s.cid, s.hcShared)
	}
	return externalHCFirewallName(s.cid, s.hcName, s.hcShared)
}

// orNil turns a definitive not-found into no resource.
func orNil[T any](v *T, err error) (*T, error) {
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	return v, err
}

func (l *loadBalancers) getAddress(ctx context.Context, cl *clients, env *environment, name string) (*computepb.Address, error) {
	return orNil(call(ctx, l.c, "addresses.get", func(ctx context.Context) (*computepb.Address, error) {
		return cl.addresses.Get(ctx, &computepb.GetAddressRequest{Project: env.project, Region: env.region, Address: name})
	}))
}

// addressByIP finds the region's reserved address holding ip, if any.
func (l *loadBalancers) addressByIP(ctx context.Context, cl *clients, env *environment, ip string) (*computepb.Address, error) {
	addrs, err := pages(ctx, l.c, "addresses.list", func(ctx context.Context, token string) ([]*computepb.Address, string, error) {
		it := cl.addresses.List(ctx, &computepb.ListAddressesRequest{Project: env.project, Region: env.region, Filter: ptr("address = \"" + ip + "\"")})
		return nextPage[*computepb.Address](it, token)
	})
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if a.GetAddress() == ip {
			return a, nil
		}
	}
	return nil, nil
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

func (l *loadBalancers) getHealthCheck(ctx context.Context, cl *clients, env *environment, name string) (*computepb.HealthCheck, error) {
	return orNil(call(ctx, l.c, "healthChecks.get", func(ctx context.Context) (*computepb.HealthCheck, error) {
		return cl.health.Get(ctx, &computepb.GetHealthCheckRequest{Project: env.project, HealthCheck: name})
	}))
}

func (l *loadBalancers) getBackendService(ctx context.Context, cl *clients, env *environment, name string) (*computepb.BackendService, error) {
	return orNil(call(ctx, l.c, "regionBackendServices.get", func(ctx context.Context) (*computepb.BackendService, error) {
		return cl.backendServices.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: name})
	}))
}

func (l *loadBalancers) getFirewall(ctx context.Context, cl *clients, env *environment, name string) (*computepb.Firewall, error) {
	return orNil(call(ctx, l.c, "firewalls.get", func(ctx context.Context) (*computepb.Firewall, error) {
		return cl.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.networkProject, Firewall: name})
	}))
}

// observeGroup reads the cluster's instance group of zone and its members.
func (l *loadBalancers) observeGroup(ctx context.Context, cl *clients, env *environment, cid, zone string) (*groupState, error) {
	name := instanceGroupName(cid)
	_, err := call(ctx, l.c, "instanceGroups.get", func(ctx context.Context) (*computepb.InstanceGroup, error) {
		return cl.instanceGroups.Get(ctx, &computepb.GetInstanceGroupRequest{Project: env.project, Zone: zone, InstanceGroup: name})
	})
	if cloudapi.IsNotFound(err) {
		return &groupState{}, nil
	}
	if err != nil {
		return nil, err
	}
	members, err := l.groupMembers(ctx, cl, env, name, zone)
	if err != nil {
		return nil, err
	}
	return &groupState{exists: true, members: members}, nil
}

// groupMembers lists the instances of the group name in zone.
func (l *loadBalancers) groupMembers(ctx context.Context, cl *clients, env *environment, name, zone string) (map[string]bool, error) {
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

// groupZones lists the zones holding the cluster's instance group.
func (l *loadBalancers) groupZones(ctx context.Context, cl *clients, env *environment, cid string) ([]string, error) {
	name := instanceGroupName(cid)
	groups, err := pages(ctx, l.c, "instanceGroups.aggregatedList", func(ctx context.Context, token string) ([]compute.InstanceGroupsScopedListPair, string, error) {
		it := cl.instanceGroups.AggregatedList(ctx, &computepb.AggregatedListInstanceGroupsRequest{Project: env.project, Filter: ptr(nameFilter([]string{name}))})
		return nextPage[compute.InstanceGroupsScopedListPair](it, token)
	})
	if err != nil {
		return nil, err
	}
	var zones []string
	for _, p := range groups {
		for _, g := range p.Value.GetInstanceGroups() {
			if g.GetName() == name && regionOf(strings.TrimPrefix(p.Key, "zones/")) == env.region {
				zones = append(zones, strings.TrimPrefix(p.Key, "zones/"))
			}
		}
	}
	slices.Sort(zones)
	return zones, nil
}
