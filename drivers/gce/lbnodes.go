package gce

import (
	"context"
	"maps"
	"reflect"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// The node-only sync. When Nodes join or leave, the service controller
// calls UpdateLoadBalancer for every LoadBalancer Service; a full sync
// reads every resource of each load balancer (rule, address, health
// check, pool or backend service, two firewall rules, the instance
// groups) to change only its instances. The node-only sync reads what a
// node change changes and takes the rest from the last full sync of the
// same Service in this process, which passed the ownership rule and left
// the load balancer as the Service asks: an external load balancer's
// target pool (external_nodes.go), an internal one's backend service and
// the cluster's shared instance groups (internal_nodes.go). It runs only
// while the Service asks for exactly what it asked then, its nodes carry
// the same network tags (the firewall rules target them) and, internal,
// sit in the same zones (the backend service lists them); the one read
// showing anything else, or no base, falls back to the full sync. Drift
// the read does not show (the rule, the firewall rules, the health check)
// is corrected by the next full sync: a change of the Service, a restart,
// or a node change once the base is loadbalancers.BaseMaxAge old.

// syncBase is what the last successful full sync of a Service left.
type syncBase struct {
	// spec is the load balancer the Service asked for, as desiredLB made
	// it (before observing), compared whole with what it asks now.
	spec lbSpec
	// tags are the network tags the firewall rules target.
	tags []string
	// zones are the zones with nodes, which an internal load balancer's
	// backend service lists (sorted).
	zones []string
}

// view is the part of a spec a node-only sync compares: what desiredLB
// derives from the Service, without the Service object itself (whose
// resourceVersion and status change with every write) and what a sync
// fills in while observing.
func (s *lbSpec) view() lbSpec {
	v := *s
	v.obj, v.ipHolder, v.targetTags = nil, nil, nil
	return v
}

// planNodes plans UpdateLoadBalancer's node-only sync from what the
// Service's last full sync left. done is false when the full sync must
// decide; nothing has been read into a plan then.
func (l *loadBalancers) planNodes(ctx context.Context, svc *v1.Service, nodes []*v1.Node, base *syncBase) (p *loadbalancers.SyncPlan, done bool, err error) {
	if elsewhere(svc, nil) {
		fallBack(svc, "the Service may be another controller's")
		return nil, false, nil
	}
	cl, env, cid, err := l.setup(ctx)
	if err != nil {
		return nil, true, err
	}
	a := LBAnnotations.Parse(svc)
	spec := desiredLB(svc, a, l.c.cfg.Subnetwork, cid)
	if a.Err() != nil {
		fallBack(svc, "the Service's settings have problems, which the full sync reports")
		return nil, false, nil
	}
	// Ports, annotations, traffic policy, source ranges...: any change is
	// the full sync's, even one the service controller has not passed on.
	if !reflect.DeepEqual(spec.view(), base.spec) {
		fallBack(svc, "the Service asks for something else than at its last full sync")
		return nil, false, nil
	}
	byZone, skipped := nodeInstances(nodes, env.project)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without a GCE providerID are not load balancer backends yet", "service", klog.KObj(svc), "nodes", skipped)
	}
	zones := slices.Sorted(maps.Keys(byZone))
	if spec.internal && !slices.Equal(zones, base.zones) {
		fallBack(svc, "the nodes' zones changed, and with them the backend service's groups")
		return nil, false, nil
	}
	tags, err := l.targetTags(ctx, cl, env, byZone)
	if err != nil {
		// The full sync finds the same, and reports it.
		fallBack(svc, "the nodes' network tags cannot be found: "+err.Error())
		return nil, false, nil
	}
	if !slices.Equal(tags, base.tags) {
		fallBack(svc, "the nodes' network tags changed, and with them the firewall rules")
		return nil, false, nil
	}
	spec.targetTags = tags
	if spec.internal {
		return l.planInternalNodes(ctx, cl, env, svc, spec, byZone)
	}
	return l.planExternalNodes(ctx, cl, env, svc, spec, byZone)
}

// nodePlan is a node-only plan, run by core's sync.
func (l *loadBalancers) nodePlan(svc *v1.Service, spec *lbSpec, p loadbalancers.Plan) *loadbalancers.SyncPlan {
	return &loadbalancers.SyncPlan{LoadBalancer: spec.base, Plan: p, Failed: l.failed(svc)}
}

// fallBack logs why a node sync runs as a full sync.
func fallBack(svc *v1.Service, why string) {
	klog.V(4).InfoS("Node sync runs as a full sync", "service", klog.KObj(svc), "reason", why)
}
