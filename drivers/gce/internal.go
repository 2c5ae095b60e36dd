package gce

import (
	"context"
	"slices"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// The writes of an internal load balancer: a regional health check, one
// unmanaged instance group per zone (shared by the cluster's internal load
// balancers, since an instance can be in only one load-balanced group), a
// backend service and an internal forwarding rule in the subnetwork. plan
// decides which of them a sync makes.

func regionHealthCheck(spec *lbSpec) *computepb.HealthCheck {
	return &computepb.HealthCheck{
		Name: ptr(spec.base + "-hc"), Description: ptr(description(spec)), Type: ptr("HTTP"),
		CheckIntervalSec: ptr(int32(8)), TimeoutSec: ptr(int32(1)), HealthyThreshold: ptr(int32(1)), UnhealthyThreshold: ptr(int32(3)),
		HttpHealthCheck: &computepb.HTTPHealthCheck{Port: &spec.hcPort, RequestPath: &spec.hcPath},
	}
}

func regionHealthCheckURL(env *environment, spec *lbSpec) string {
	return "projects/" + env.project + "/regions/" + env.region + "/healthChecks/" + spec.base + "-hc"
}

func backendServiceURL(env *environment, spec *lbSpec) string {
	return "projects/" + env.project + "/regions/" + env.region + "/backendServices/" + spec.base
}

func (l *loadBalancers) insertRegionHealthCheck(ctx context.Context, cl *clients, env *environment, want *computepb.HealthCheck) error {
	return l.c.change(ctx, cl, "regionHealthChecks.insert", "creating health check "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.regionHealth.Insert(ctx, &computepb.InsertRegionHealthCheckRequest{RequestId: rid, Project: env.project, Region: env.region, HealthCheckResource: want})
	})
}

func (l *loadBalancers) updateRegionHealthCheck(ctx context.Context, cl *clients, env *environment, want *computepb.HealthCheck) error {
	return l.c.change(ctx, cl, "regionHealthChecks.update", "updating health check "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.regionHealth.Update(ctx, &computepb.UpdateRegionHealthCheckRequest{RequestId: rid, Project: env.project, Region: env.region, HealthCheck: want.GetName(), HealthCheckResource: want})
	})
}

func (c *Cloud) instanceGroupName() string { return c.prefix + "ig" }

func instanceGroupURL(env *environment, zone, name string) string {
	return "projects/" + env.project + "/zones/" + zone + "/instanceGroups/" + name
}

// createInstanceGroup makes the cluster's group of zone and gives it its
// members. Another internal load balancer's sync may have made the group
// meanwhile (an insert meeting it counts as done), so the members are read
// back, not assumed none.
func (l *loadBalancers) createInstanceGroup(ctx context.Context, cl *clients, env *environment, zone string, want map[string]bool) error {
	name := l.c.instanceGroupName()
	g := &computepb.InstanceGroup{Name: &name, Description: ptr(`{"managed-by":"polyccm"}`), Network: ptr(networkURL(env))}
	if err := l.c.change(ctx, cl, "instanceGroups.insert", "creating instance group "+name+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.instanceGroups.Insert(ctx, &computepb.InsertInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroupResource: g})
	}); err != nil {
		return err
	}
	have, err := l.groupMembers(ctx, cl, env, zone)
	if err != nil {
		return err
	}
	add, remove := loadbalancers.Delta(want, have, strings.Compare)
	return l.updateInstanceGroup(ctx, cl, env, zone, add, remove)
}

// updateInstanceGroup changes the members of the cluster's group of zone.
func (l *loadBalancers) updateInstanceGroup(ctx context.Context, cl *clients, env *environment, zone string, add, remove []string) error {
	name := l.c.instanceGroupName()
	for chunk := range slices.Chunk(add, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "instanceGroups.addInstances", "adding instances to "+name+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.instanceGroups.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroup: name,
				InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs}})
		}); err != nil {
			return err
		}
	}
	for chunk := range slices.Chunk(remove, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "instanceGroups.removeInstances", "removing instances from "+name+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.instanceGroups.RemoveInstances(ctx, &computepb.RemoveInstancesInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroup: name,
				InstanceGroupsRemoveInstancesRequestResource: &computepb.InstanceGroupsRemoveInstancesRequest{Instances: refs}})
		}); err != nil {
			return err
		}
	}
	return nil
}

// backendService is the internal load balancer's backend service over the
// cluster's groups of zones.
func backendService(env *environment, spec *lbSpec, name string, zones []string) *computepb.BackendService {
	var backends []*computepb.Backend
	for _, z := range zones {
		backends = append(backends, &computepb.Backend{Group: ptr(instanceGroupURL(env, z, name)), BalancingMode: ptr("CONNECTION")})
	}
	return &computepb.BackendService{
		Name: &spec.base, Description: ptr(description(spec)), LoadBalancingScheme: ptr("INTERNAL"),
		Protocol: &spec.protocol, HealthChecks: []string{regionHealthCheckURL(env, spec)}, Backends: backends,
	}
}

func (l *loadBalancers) insertBackendService(ctx context.Context, cl *clients, env *environment, want *computepb.BackendService) error {
	return l.c.change(ctx, cl, "regionBackendServices.insert", "creating backend service "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.backendServices.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{RequestId: rid, Project: env.project, Region: env.region, BackendServiceResource: want})
	})
}

// updateBackendService replaces the backend service; fingerprint is the
// current one's (updates are optimistically locked).
func (l *loadBalancers) updateBackendService(ctx context.Context, cl *clients, env *environment, want *computepb.BackendService, fingerprint *string) error {
	want.Fingerprint = fingerprint
	return l.c.change(ctx, cl, "regionBackendServices.update", "updating backend service "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.backendServices.Update(ctx, &computepb.UpdateRegionBackendServiceRequest{RequestId: rid, Project: env.project, Region: env.region, BackendService: want.GetName(), BackendServiceResource: want})
	})
}
