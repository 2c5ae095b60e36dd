package gce

import (
	"context"
	"maps"
	"slices"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// The writes of an internal load balancer: a global health check (the
// nodes' shared one, or the Service's own), one unmanaged instance group
// per zone (shared by the cluster's internal load balancers, since an
// instance can be in only one load-balanced group), a backend service and
// an internal forwarding rule in the subnetwork. plan decides which of
// them a sync makes.

// healthCheck is the backend service's health check; upstream describes
// only a Service's own one.
func healthCheck(spec *lbSpec, cur *computepb.HealthCheck) *computepb.HealthCheck {
	desc := ""
	if !spec.hcShared {
		desc = serviceDescription(spec.service)
	}
	hc := &computepb.HealthCheck{
		Name: ptr(spec.hcName), Description: &desc, Type: ptr("HTTP"),
		CheckIntervalSec: ptr(int32(hcInterval)), TimeoutSec: ptr(int32(hcTimeout)), HealthyThreshold: ptr(int32(hcHealthy)), UnhealthyThreshold: ptr(int32(hcUnhealthy)),
		HttpHealthCheck: &computepb.HTTPHealthCheck{Port: &spec.hcPort, RequestPath: &spec.hcPath},
	}
	if cur != nil {
		hc.CheckIntervalSec = ptr(max(hc.GetCheckIntervalSec(), cur.GetCheckIntervalSec()))
		hc.TimeoutSec = ptr(max(hc.GetTimeoutSec(), cur.GetTimeoutSec()))
		hc.HealthyThreshold = ptr(max(hc.GetHealthyThreshold(), cur.GetHealthyThreshold()))
		hc.UnhealthyThreshold = ptr(max(hc.GetUnhealthyThreshold(), cur.GetUnhealthyThreshold()))
	}
	return hc
}

// healthView is what polyccm sets of a health check.
type healthView struct {
	Description        string `json:"description"`
	Port               int32  `json:"port"`
	RequestPath        string `json:"requestPath"`
	CheckIntervalSec   int32  `json:"checkIntervalSec"`
	TimeoutSec         int32  `json:"timeoutSec"`
	HealthyThreshold   int32  `json:"healthyThreshold"`
	UnhealthyThreshold int32  `json:"unhealthyThreshold"`
}

func viewHealthCheck(hc *computepb.HealthCheck) healthView {
	return healthView{hc.GetDescription(), hc.GetHttpHealthCheck().GetPort(), hc.GetHttpHealthCheck().GetRequestPath(),
		hc.GetCheckIntervalSec(), hc.GetTimeoutSec(), hc.GetHealthyThreshold(), hc.GetUnhealthyThreshold()}
}

func healthCheckURL(env *environment, name string) string {
	return "projects/" + env.project + "/global/healthChecks/" + name
}

func backendServiceURL(env *environment, name string) string {
	return "projects/" + env.project + "/regions/" + env.region + "/backendServices/" + name
}

func (l *loadBalancers) insertHealthCheck(ctx context.Context, cl *clients, env *environment, want *computepb.HealthCheck) error {
	return l.c.change(ctx, cl, "healthChecks.insert", "creating health check "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.health.Insert(ctx, &computepb.InsertHealthCheckRequest{RequestId: rid, Project: env.project, HealthCheckResource: want})
	})
}

func (l *loadBalancers) updateHealthCheck(ctx context.Context, cl *clients, env *environment, want *computepb.HealthCheck) error {
	return l.c.change(ctx, cl, "healthChecks.update", "updating health check "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.health.Update(ctx, &computepb.UpdateHealthCheckRequest{RequestId: rid, Project: env.project, HealthCheck: want.GetName(), HealthCheckResource: want})
	})
}

func instanceGroupURL(env *environment, zone, name string) string {
	return "projects/" + env.project + "/zones/" + zone + "/instanceGroups/" + name
}

func (l *loadBalancers) planInternal(p *lbPlan, cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, obs *observed) {
	hc := healthCheck(spec, obs.hc)
	createOrUpdate(p, kindHealth, hc.GetName(), obs.hc != nil,
		func() []loadbalancers.Field { return loadbalancers.Diff(viewHealthCheck(obs.hc), viewHealthCheck(hc)) },
		func(ctx context.Context) error { return l.insertHealthCheck(ctx, cl, env, hc) },
		func(ctx context.Context) error { return l.updateHealthCheck(ctx, cl, env, hc) })

	// The cluster's instance groups are shared by its internal load
	// balancers, not part of this one: a node sync, which makes nothing
	// else, makes the group of a zone that gained its first node.
	name := instanceGroupName(spec.cid)
	zones := slices.Sorted(maps.Keys(byZone))
	for _, zone := range zones {
		want := map[string]bool{}
		for _, n := range byZone[zone] {
			want[instanceURL(env.project, zone, n)] = true
		}
		g := obs.groups[zone]
		if g == nil || !g.exists {
			p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindGroup, Name: zone + "/" + name,
				Fields: memberFields(slices.Sorted(maps.Keys(want)), nil),
				Apply: func(ctx context.Context) error {
					return l.createInstanceGroup(cloudapi.WithCreates(ctx), cl, env, name, zone, want)
				}})
			continue
		}
		add, remove := loadbalancers.Delta(want, g.members, strings.Compare)
		p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindGroup, Name: zone + "/" + name, Fields: memberFields(add, remove),
			Apply: func(ctx context.Context) error {
				return l.updateInstanceGroup(cloudapi.WithCreates(ctx), cl, env, name, zone, add, remove)
			}})
	}

	bs := backendService(env, spec, name, zones)
	createOrUpdate(p, kindBackendService, spec.bsName, obs.bs != nil,
		func() []loadbalancers.Field {
			return loadbalancers.Diff(viewBackendService(obs.bs), viewBackendService(bs))
		},
		func(ctx context.Context) error { return l.insertBackendService(ctx, cl, env, bs) },
		func(ctx context.Context) error { return l.updateBackendService(ctx, cl, env, bs, obs.bs.Fingerprint) })
}

// backendServiceView is what polyccm sets of a backend service, with URLs
// short and groups in order.
type backendServiceView struct {
	Description     string   `json:"description"`
	Protocol        string   `json:"protocol"`
	SessionAffinity string   `json:"sessionAffinity"`
	HealthChecks    []string `json:"healthChecks"`
	Backends        []string `json:"backends"`
}

func viewBackendService(bs *computepb.BackendService) backendServiceView {
	var groups []string
	for _, b := range bs.GetBackends() {
		groups = append(groups, b.GetGroup())
	}
	affinity := bs.GetSessionAffinity()
	if affinity == "" {
		affinity = "NONE"
	}
	return backendServiceView{Description: bs.GetDescription(), Protocol: bs.GetProtocol(), SessionAffinity: affinity,
		HealthChecks: shortURLs(bs.GetHealthChecks()), Backends: shortURLs(groups)}
}

// createInstanceGroup makes the cluster's group of zone and gives it its
// members. Another internal load balancer's sync may have made the group
// meanwhile (an insert meeting it counts as done), so the members are read
// back, not assumed none.
func (l *loadBalancers) createInstanceGroup(ctx context.Context, cl *clients, env *environment, name, zone string, want map[string]bool) error {
	defer l.lockGroupChange(zone)()
	g := &computepb.InstanceGroup{Name: &name}
	if err := l.c.change(ctx, cl, "instanceGroups.insert", "creating instance group "+name+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.instanceGroups.Insert(ctx, &computepb.InsertInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroupResource: g})
	}); err != nil {
		return err
	}
	have, err := l.groupMembers(ctx, cl, env, name, zone)
	if err != nil {
		return err
	}
	add, remove := loadbalancers.Delta(want, have, strings.Compare)
	return l.changeGroupMembers(ctx, cl, env, name, zone, add, remove)
}

// updateInstanceGroup changes the members of the cluster's group of zone
// for a full sync.
func (l *loadBalancers) updateInstanceGroup(ctx context.Context, cl *clients, env *environment, name, zone string, add, remove []string) error {
	defer l.lockGroupChange(zone)()
	return l.changeGroupMembers(ctx, cl, env, name, zone, add, remove)
}

// changeGroupMembers adds and removes members of the cluster's group of
// zone, in the target pools' chunks; the caller holds the groups' lock
// (internal_nodes.go).
func (l *loadBalancers) changeGroupMembers(ctx context.Context, cl *clients, env *environment, name, zone string, add, remove []string) error {
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
		backends = append(backends, &computepb.Backend{Group: ptr(instanceGroupURL(env, z, name))})
	}
	desc := ""
	if !spec.bsShared {
		desc = serviceDescription(spec.service)
	}
	return &computepb.BackendService{
		Name: &spec.bsName, Description: &desc, LoadBalancingScheme: ptr("INTERNAL"), SessionAffinity: &spec.affinity,
		Protocol: &spec.protocol, HealthChecks: []string{healthCheckURL(env, spec.hcName)}, Backends: backends,
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
