package gce

import (
	"context"
	"fmt"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	computev1 "google.golang.org/api/compute/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// EnsureLoadBalancerDeleted deletes everything made for the Service, in
// dependency order; a resource already gone counts as deleted, and any
// other doubt keeps the finalizer.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	cl, env, err := l.setup(ctx)
	if err != nil {
		return err
	}
	base := l.c.lbName(svc)
	fr, err := l.getForwardingRule(ctx, cl, env, base)
	if err != nil {
		return err
	}
	if fr != nil {
		// A rule another Service's marks name stays, with what shares
		// its name.
		if ok, err := l.own.CheckDelete(ctx, svc, l.resource(fr.GetName(), fr.GetDescription(), fr.GetIPAddress())); err != nil || !ok {
			return err
		}
	}
	d := l.deleter(cl, env, base)
	steps := []func(context.Context) error{d.forwardingRule, d.targetPool, d.backendService, d.regionHealthCheck, d.firewalls, d.httpHealthCheck}
	if err := runSteps(ctx, steps); err != nil {
		l.recordOperationError(svc, err)
		return err
	}
	return l.pruneInstanceGroups(ctx, cl, env)
}

// runSteps runs deletions in order, stopping at the first failure.
func runSteps(ctx context.Context, steps []func(context.Context) error) error {
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// lbDeleter deletes the resources of the load balancer named base, a kind
// a method, for EnsureLoadBalancerDeleted and for a scheme switch. Each
// returns nil once its resource is gone, already or now.
type lbDeleter struct {
	l    *loadBalancers
	cl   *clients
	env  *environment
	base string
}

func (l *loadBalancers) deleter(cl *clients, env *environment, base string) lbDeleter {
	return lbDeleter{l: l, cl: cl, env: env, base: base}
}

// del runs one delete through change; only a definitive not-found counts
// as done.
func (d lbDeleter) del(ctx context.Context, op, what string, fn func(ctx context.Context, rid *string) (*compute.Operation, error)) error {
	if err := d.l.c.change(ctx, d.cl, op, what, fn); err != nil && !cloudapi.IsNotFound(err) {
		return err
	}
	return nil
}

func (d lbDeleter) forwardingRule(ctx context.Context) error {
	return d.del(ctx, "forwardingRules.delete", "deleting forwarding rule "+d.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.forwardingRules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, ForwardingRule: d.base})
	})
}

func (d lbDeleter) targetPool(ctx context.Context) error {
	return d.del(ctx, "targetPools.delete", "deleting target pool "+d.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.targetPools.Delete(ctx, &computepb.DeleteTargetPoolRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, TargetPool: d.base})
	})
}

func (d lbDeleter) backendService(ctx context.Context) error {
	return d.del(ctx, "regionBackendServices.delete", "deleting backend service "+d.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.backendServices.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, BackendService: d.base})
	})
}

func (d lbDeleter) regionHealthCheck(ctx context.Context) error {
	name := d.base + "-hc"
	return d.del(ctx, "regionHealthChecks.delete", "deleting health check "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.regionHealth.Delete(ctx, &computepb.DeleteRegionHealthCheckRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, HealthCheck: name})
	})
}

func (d lbDeleter) firewalls(ctx context.Context) error {
	for _, name := range []string{d.base + "-fw", d.base + "-hcfw"} {
		if err := d.del(ctx, "firewalls.delete", "deleting firewall rule "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return d.cl.firewalls.Delete(ctx, &computepb.DeleteFirewallRequest{RequestId: rid, Project: d.env.project, Firewall: name})
		}); err != nil {
			return err
		}
	}
	return nil
}

// httpHealthCheck deletes the legacy health check, which comes from the
// discovery-based client.
func (d lbDeleter) httpHealthCheck(ctx context.Context) error {
	name := d.base + "-hc"
	rid := newRequestID()
	op, err := call(ctx, d.l.c, "httpHealthChecks.delete", func(ctx context.Context) (*computev1.Operation, error) {
		return d.cl.httpHealth.Delete(d.env.project, name).RequestId(rid).Context(ctx).Do()
	})
	switch {
	case cloudapi.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting health check %s: %w", name, err)
	}
	return d.l.c.wait(ctx, d.cl, globalOperation(d.env.project, op.Name), "deleting health check "+name)
}

// instanceGroup deletes the cluster's group of zone. The groups are shared
// by the cluster's internal load balancers: callers delete them only once
// none is left.
func (d lbDeleter) instanceGroup(ctx context.Context, zone string) error {
	name := d.l.c.instanceGroupName()
	return d.del(ctx, "instanceGroups.delete", "deleting instance group "+name+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.instanceGroups.Delete(ctx, &computepb.DeleteInstanceGroupRequest{RequestId: rid, Project: d.env.project, Zone: zone, InstanceGroup: name})
	})
}

// pruneInstanceGroups deletes the cluster's shared instance groups once no
// internal load balancer of the cluster uses them.
func (l *loadBalancers) pruneInstanceGroups(ctx context.Context, cl *clients, env *environment) error {
	services, err := l.clusterBackendServices(ctx, cl, env)
	if err != nil {
		return err
	}
	if len(services) > 0 {
		return nil // still in use
	}
	zones, err := l.groupZones(ctx, cl, env)
	if err != nil {
		return err
	}
	d := l.deleter(cl, env, "")
	for _, zone := range zones {
		if err := d.instanceGroup(ctx, zone); err != nil {
			return err
		}
	}
	return nil
}
