package gce

import (
	"context"
	"fmt"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	computev1 "google.golang.org/api/compute/v1"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// Deletion is what EnsureLoadBalancerDeleted deletes: everything made for
// the Service, of either scheme, in dependency order; a resource already
// gone counts as deleted, and any other doubt keeps the finalizer. What
// the Service shares with others (the nodes' health check, a shared
// backend service, the instance groups) goes only when GCE says nothing
// uses it. Then the finalizer cloud-provider-gcp put on the Service is
// removed, so the Service does not hang in Terminating after a switch.
func (l *loadBalancers) Deletion(ctx context.Context, svc *v1.Service) (*loadbalancers.Deletion, error) {
	if elsewhere(svc, nil) {
		return nil, cloudprovider.ImplementedElsewhere
	}
	cl, env, cid, err := l.setup(ctx)
	if err != nil {
		return nil, err
	}
	a := LBAnnotations.Parse(svc) // invalid values change no name
	spec := desiredLB(svc, a, l.c.cfg.Subnetwork, cid)
	fr, err := l.getForwardingRule(ctx, cl, env, spec.base)
	if err != nil {
		return nil, err
	}
	if fr == nil {
		// An IPv6-only Service's rule is the one to check.
		if fr, err = l.getForwardingRule(ctx, cl, env, ipv6Name(spec.base)); err != nil {
			return nil, err
		}
	}
	// Read now, for its guard; deleted after the rule.
	deny, err := l.denyDeletion(ctx, cl, env, spec)
	if err != nil {
		return nil, err
	}
	d := l.deleter(cl, env, spec)
	del := &loadbalancers.Deletion{}
	// A rule another Service's marks name stays, with what shares its
	// name, and so does everything after it (the finalizer too).
	first := loadbalancers.DeleteStep{StopIfRefused: true, Run: l.deleting(svc, d.address, d.forwardingRule)}
	if fr != nil {
		r := l.resource(fr.GetName(), fr.GetDescription(), fr.GetIPAddress())
		first.Guard = &r
	}
	del.Add(first)
	if deny != nil {
		// Upstream's deny rule, before the allow rules it would override.
		deny.Run = l.deleting(svc, deny.Run)
		del.Add(*deny)
	}
	steps := []func(context.Context) error{
		// An IPv6 rule of an internal load balancer (or one left by a
		// switch to external) forwards to the backend service below.
		func(ctx context.Context) error { return d.addressNamed(ctx, ipv6Name(spec.base)) },
		func(ctx context.Context) error { return d.rule(ctx, ipv6Name(spec.base)) },
		d.targetPool, d.httpHealthChecks,
		func(ctx context.Context) error { return d.backendService(ctx, spec.base, false) },
	}
	if spec.bsShared {
		steps = append(steps, func(ctx context.Context) error { return d.backendService(ctx, spec.bsName, true) })
	}
	steps = append(steps, d.healthChecks,
		func(ctx context.Context) error { return d.firewall(ctx, firewallName(spec.base)) },
		func(ctx context.Context) error { return d.firewall(ctx, ipv6Name(firewallName(spec.base))) },
		func(ctx context.Context) error { return d.firewall(ctx, spec.base) }, // upstream's older name of an internal one
		// Also after an external one: a scheme switch stopped midway
		// may have left groups nothing uses.
		func(ctx context.Context) error { return l.pruneInstanceGroups(ctx, cl, env, cid) },
	)
	del.Add(loadbalancers.DeleteStep{Run: l.deleting(svc, steps...)})
	del.Add(loadbalancers.DeleteStep{Run: func(ctx context.Context) error { return l.releaseFinalizers(ctx, svc) }})
	return del, nil
}

// deleting runs deletions in order, stopping at the first failure, which
// is reported on the Service when it is a failed GCE Operation.
func (l *loadBalancers) deleting(svc *v1.Service, steps ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, step := range steps {
			if err := step(ctx); err != nil {
				l.recordOperationError(svc, err)
				return err
			}
		}
		return nil
	}
}

// lbDeleter deletes the resources of one Service's load balancer, a kind
// a method, for EnsureLoadBalancerDeleted and for the plan's deletions.
// Each returns nil once its resource is gone, already or now, or, for a
// shared one, when GCE says another load balancer still uses it.
type lbDeleter struct {
	l    *loadBalancers
	cl   *clients
	env  *environment
	spec *lbSpec
}

func (l *loadBalancers) deleter(cl *clients, env *environment, spec *lbSpec) lbDeleter {
	return lbDeleter{l: l, cl: cl, env: env, spec: spec}
}

// del runs one delete through change; only a definitive not-found counts
// as done. A shared resource's delete is not retried when it is in use,
// and then reports inUse.
func (d lbDeleter) del(ctx context.Context, op, what string, shared bool, fn func(ctx context.Context, rid *string) (*compute.Operation, error)) (inUse bool, err error) {
	if shared {
		defer d.l.lockShared(ctx)()
		err = d.l.c.change(ctx, d.cl, op, what, fn, cloudapi.NotIdempotent())
	} else {
		err = d.l.c.change(ctx, d.cl, op, what, fn)
	}
	switch {
	case err == nil || cloudapi.IsNotFound(err):
		return false, nil
	case shared && isInUse(err):
		return true, nil
	}
	return false, err
}

func (d lbDeleter) address(ctx context.Context) error { return d.addressNamed(ctx, d.spec.base) }

// addressNamed releases the reservation name (the IPv4 or IPv6 rule's).
func (d lbDeleter) addressNamed(ctx context.Context, name string) error {
	_, err := d.del(ctx, "addresses.delete", "releasing address "+name, false, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.addresses.Delete(ctx, &computepb.DeleteAddressRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, Address: name})
	})
	return err
}

func (d lbDeleter) forwardingRule(ctx context.Context) error { return d.rule(ctx, d.spec.base) }

// rule deletes the forwarding rule name (the IPv4 or IPv6 one).
func (d lbDeleter) rule(ctx context.Context, name string) error {
	_, err := d.del(ctx, "forwardingRules.delete", "deleting forwarding rule "+name, false, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.forwardingRules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, ForwardingRule: name})
	})
	return err
}

func (d lbDeleter) targetPool(ctx context.Context) error {
	_, err := d.del(ctx, "targetPools.delete", "deleting target pool "+d.spec.base, false, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.targetPools.Delete(ctx, &computepb.DeleteTargetPoolRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, TargetPool: d.spec.base})
	})
	return err
}

func (d lbDeleter) backendService(ctx context.Context, name string, shared bool) error {
	_, err := d.del(ctx, "regionBackendServices.delete", "deleting backend service "+name, shared, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.backendServices.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, BackendService: name})
	})
	return err
}

func (d lbDeleter) firewall(ctx context.Context, name string) error {
	err := d.l.c.change(ctx, d.cl, "firewalls.delete", "deleting firewall rule "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.firewalls.Delete(ctx, &computepb.DeleteFirewallRequest{RequestId: rid, Project: d.env.networkProject, Firewall: name})
	}, firewallOpts(d.env)...)
	if err == nil || cloudapi.IsNotFound(err) {
		return nil
	}
	return d.l.xpnFallback(d.env, d.spec, err, gcloudFirewallDelete(d.env, name))
}

// healthCheck deletes a global health check and then its firewall rule;
// a shared one another load balancer uses stays, with its rule.
func (d lbDeleter) healthCheck(ctx context.Context, name string, shared bool) error {
	inUse, err := d.del(ctx, "healthChecks.delete", "deleting health check "+name, shared, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.health.Delete(ctx, &computepb.DeleteHealthCheckRequest{RequestId: rid, Project: d.env.project, HealthCheck: name})
	})
	if err != nil || inUse {
		return err
	}
	if err := d.firewall(ctx, name+"-hc"); err != nil { // upstream's makeHealthCheckFirewallNameFromHC
		return err
	}
	return d.firewall(ctx, ipv6Name(name+"-hc")) // the IPv6 health checkers'
}

// healthChecks deletes the Service's own global health check and, unless
// in use, the nodes' shared one.
func (d lbDeleter) healthChecks(ctx context.Context) error {
	if err := d.healthCheck(ctx, d.spec.base, false); err != nil {
		return err
	}
	return d.healthCheck(ctx, nodesHealthCheckName(d.spec.cid), true)
}

// httpHealthCheck deletes a legacy health check, which comes from the
// discovery-based client, and then its firewall rule; a shared one
// another target pool uses stays, with its rule.
func (d lbDeleter) httpHealthCheck(ctx context.Context, name string, shared bool) error {
	if shared {
		defer d.l.lockShared(ctx)()
	}
	rid := newRequestID()
	var opts []cloudapi.CallOption
	if shared {
		opts = append(opts, cloudapi.NotIdempotent())
	}
	op, err := call(ctx, d.l.c, "httpHealthChecks.delete", func(ctx context.Context) (*computev1.Operation, error) {
		return d.cl.httpHealth.Delete(d.env.project, name).RequestId(rid).Context(ctx).Do()
	}, opts...)
	if err == nil {
		err = d.l.c.wait(ctx, d.cl, globalOperation(d.env.project, op.Name), "deleting health check "+name)
	}
	switch {
	case shared && isInUse(err):
		return nil
	case err != nil && !cloudapi.IsNotFound(err):
		return fmt.Errorf("deleting health check %s: %w", name, err)
	}
	return d.firewall(ctx, externalHCFirewallName(d.spec.cid, name, shared))
}

// httpHealthChecks deletes the Service's own legacy health check and,
// unless in use, the nodes' shared one.
func (d lbDeleter) httpHealthChecks(ctx context.Context) error {
	if err := d.httpHealthCheck(ctx, d.spec.base, false); err != nil {
		return err
	}
	return d.httpHealthCheck(ctx, nodesHealthCheckName(d.spec.cid), true)
}

// pruneInstanceGroups deletes the cluster's instance groups that nothing
// uses, as upstream does when an internal load balancer goes: the delete
// of a group another load balancer uses is refused, and the group stays.
func (l *loadBalancers) pruneInstanceGroups(ctx context.Context, cl *clients, env *environment, cid string) error {
	zones, err := l.groupZones(ctx, cl, env, cid)
	if err != nil {
		return err
	}
	name := instanceGroupName(cid)
	d := l.deleter(cl, env, &lbSpec{cid: cid})
	// A group deleted is no longer what a node-only sync made it.
	defer l.groups.forgetAll()
	for _, zone := range zones {
		if _, err := d.del(ctx, "instanceGroups.delete", "deleting instance group "+name+" in "+zone, true, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.instanceGroups.Delete(ctx, &computepb.DeleteInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroup: name})
		}); err != nil {
			return err
		}
	}
	return nil
}

// syncKey marks the context of a sync's Apply, which holds shared for
// reading: its own deletions of shared resources run under that.
type syncKey struct{}

// lockShared takes shared for a deletion, unless the caller is a sync,
// which holds it already. Nothing may start using a shared resource while
// it goes.
func (l *loadBalancers) lockShared(ctx context.Context) func() {
	if ctx.Value(syncKey{}) != nil {
		return func() {}
	}
	l.shared.Lock()
	return l.shared.Unlock
}
