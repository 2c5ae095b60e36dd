package gce

import (
	"context"
	"maps"
	"slices"
	"sort"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// ensureInternal: a regional health check, one unmanaged instance group
// per zone (shared by the cluster's internal load balancers, since an
// instance can be in only one load-balanced group), a backend service and
// an internal forwarding rule in the subnetwork.
func (l *loadBalancers) ensureInternal(ctx, groupCtx context.Context, cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, cur *computepb.ForwardingRule) (string, error) {
	hc, err := l.ensureRegionHealthCheck(ctx, cl, env, spec)
	if err != nil {
		return "", err
	}
	var groups []string
	for _, zone := range slices.Sorted(maps.Keys(byZone)) {
		g, err := l.ensureInstanceGroup(groupCtx, cl, env, zone, byZone[zone])
		if err != nil {
			return "", err
		}
		groups = append(groups, g)
	}
	bs, err := l.ensureBackendService(ctx, cl, env, spec, hc, groups)
	if err != nil {
		return "", err
	}
	if err := l.ensureFirewalls(ctx, cl, env, spec); err != nil {
		return "", err
	}
	want := spec.forwardingRule()
	want.BackendService = &bs
	want.Network = ptr(networkURL(env))
	want.Subnetwork = ptr("projects/" + env.project + "/regions/" + env.region + "/subnetworks/" + spec.subnetwork)
	if spec.globalAccess {
		want.AllowGlobalAccess = ptr(true)
	}
	return l.ensureForwardingRule(ctx, cl, env, spec, want, cur)
}

func (l *loadBalancers) ensureRegionHealthCheck(ctx context.Context, cl *clients, env *environment, spec *lbSpec) (string, error) {
	name := spec.base + "-hc"
	want := &computepb.HealthCheck{
		Name: &name, Description: ptr(description(spec)), Type: ptr("HTTP"),
		CheckIntervalSec: ptr(int32(8)), TimeoutSec: ptr(int32(1)), HealthyThreshold: ptr(int32(1)), UnhealthyThreshold: ptr(int32(3)),
		HttpHealthCheck: &computepb.HTTPHealthCheck{Port: &spec.hcPort, RequestPath: &spec.hcPath},
	}
	cur, err := call(ctx, l.c, "regionHealthChecks.get", func(ctx context.Context) (*computepb.HealthCheck, error) {
		return cl.regionHealth.Get(ctx, &computepb.GetRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: name})
	})
	switch {
	case cloudapi.IsNotFound(err):
		err = l.c.change(ctx, cl, "regionHealthChecks.insert", "creating health check "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.regionHealth.Insert(ctx, &computepb.InsertRegionHealthCheckRequest{RequestId: rid, Project: env.project, Region: env.region, HealthCheckResource: want})
		})
	case err == nil && (cur.GetHttpHealthCheck().GetPort() != spec.hcPort || cur.GetHttpHealthCheck().GetRequestPath() != spec.hcPath):
		err = l.c.change(ctx, cl, "regionHealthChecks.update", "updating health check "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.regionHealth.Update(ctx, &computepb.UpdateRegionHealthCheckRequest{RequestId: rid, Project: env.project, Region: env.region, HealthCheck: name, HealthCheckResource: want})
		})
	}
	if err != nil {
		return "", err
	}
	return "projects/" + env.project + "/regions/" + env.region + "/healthChecks/" + name, nil
}

func (c *Cloud) instanceGroupName() string { return c.prefix + "ig" }

func (l *loadBalancers) ensureInstanceGroup(ctx context.Context, cl *clients, env *environment, zone string, names []string) (string, error) {
	name := l.c.instanceGroupName()
	_, err := call(ctx, l.c, "instanceGroups.get", func(ctx context.Context) (*computepb.InstanceGroup, error) {
		return cl.instanceGroups.Get(ctx, &computepb.GetInstanceGroupRequest{Project: env.project, Zone: zone, InstanceGroup: name})
	})
	if cloudapi.IsNotFound(err) {
		g := &computepb.InstanceGroup{Name: &name, Description: ptr(`{"managed-by":"polyccm"}`), Network: ptr(networkURL(env))}
		err = l.c.change(ctx, cl, "instanceGroups.insert", "creating instance group "+name+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.instanceGroups.Insert(ctx, &computepb.InsertInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroupResource: g})
		})
	}
	if err != nil {
		return "", err
	}
	have, err := pages(ctx, l.c, "instanceGroups.listInstances", func(ctx context.Context, token string) ([]*computepb.InstanceWithNamedPorts, string, error) {
		it := cl.instanceGroups.ListInstances(ctx, &computepb.ListInstancesInstanceGroupsRequest{Project: env.project, Zone: zone, InstanceGroup: name,
			InstanceGroupsListInstancesRequestResource: &computepb.InstanceGroupsListInstancesRequest{}})
		return nextPage[*computepb.InstanceWithNamedPorts](it, token)
	})
	if err != nil {
		return "", err
	}
	haveSet := map[string]bool{}
	for _, h := range have {
		haveSet[shortURL(h.GetInstance())] = true
	}
	var add, remove []string
	wantSet := map[string]bool{}
	for _, n := range names {
		u := instanceURL(env.project, zone, n)
		wantSet[u] = true
		if !haveSet[u] {
			add = append(add, u)
		}
	}
	for u := range haveSet {
		if !wantSet[u] {
			remove = append(remove, u)
		}
	}
	sort.Strings(remove)
	for chunk := range slices.Chunk(add, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "instanceGroups.addInstances", "adding instances to "+name+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.instanceGroups.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroup: name,
				InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs}})
		}); err != nil {
			return "", err
		}
	}
	for chunk := range slices.Chunk(remove, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "instanceGroups.removeInstances", "removing instances from "+name+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.instanceGroups.RemoveInstances(ctx, &computepb.RemoveInstancesInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroup: name,
				InstanceGroupsRemoveInstancesRequestResource: &computepb.InstanceGroupsRemoveInstancesRequest{Instances: refs}})
		}); err != nil {
			return "", err
		}
	}
	return "projects/" + env.project + "/zones/" + zone + "/instanceGroups/" + name, nil
}

func (l *loadBalancers) ensureBackendService(ctx context.Context, cl *clients, env *environment, spec *lbSpec, hc string, groups []string) (string, error) {
	var backends []*computepb.Backend
	for _, g := range groups {
		backends = append(backends, &computepb.Backend{Group: ptr(g), BalancingMode: ptr("CONNECTION")})
	}
	want := &computepb.BackendService{
		Name: &spec.base, Description: ptr(description(spec)), LoadBalancingScheme: ptr("INTERNAL"),
		Protocol: &spec.protocol, HealthChecks: []string{hc}, Backends: backends,
	}
	cur, err := call(ctx, l.c, "regionBackendServices.get", func(ctx context.Context) (*computepb.BackendService, error) {
		return cl.backendServices.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: spec.base})
	})
	switch {
	case cloudapi.IsNotFound(err):
		err = l.c.change(ctx, cl, "regionBackendServices.insert", "creating backend service "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.backendServices.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{RequestId: rid, Project: env.project, Region: env.region, BackendServiceResource: want})
		})
	case err == nil && !sameBackends(cur, want):
		// Updates need the current fingerprint (optimistic locking).
		want.Fingerprint = cur.Fingerprint
		err = l.c.change(ctx, cl, "regionBackendServices.update", "updating backend service "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.backendServices.Update(ctx, &computepb.UpdateRegionBackendServiceRequest{RequestId: rid, Project: env.project, Region: env.region, BackendService: spec.base, BackendServiceResource: want})
		})
	}
	if err != nil {
		return "", err
	}
	return "projects/" + env.project + "/regions/" + env.region + "/backendServices/" + spec.base, nil
}

func sameBackends(cur, want *computepb.BackendService) bool {
	groups := func(bs *computepb.BackendService) []string {
		var out []string
		for _, b := range bs.GetBackends() {
			out = append(out, shortURL(b.GetGroup()))
		}
		slices.Sort(out)
		return out
	}
	return cur.GetProtocol() == want.GetProtocol() && slices.Equal(groups(cur), groups(want)) &&
		len(cur.GetHealthChecks()) == 1 && shortURL(cur.GetHealthChecks()[0]) == want.GetHealthChecks()[0]
}
