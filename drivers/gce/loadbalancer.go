package gce

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// loadBalancers implements cloudprovider.LoadBalancer with GCE passthrough
// load balancers. Every resource is named with the cluster prefix, and
// only such resources are changed or deleted.
type loadBalancers struct {
	c   *Cloud
	own *loadbalancers.Ownership
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

// LoadBalancer returns the load balancer implementation.
func (c *Cloud) LoadBalancer() cloudprovider.LoadBalancer { return c.lbs }

func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return l.c.lbName(svc)
}

// GetLoadBalancer reports the forwarding rule's address. Exists is true
// while anything made for the Service is left, because the service
// controller calls EnsureLoadBalancerDeleted only then: a half-deleted load
// balancer must still be cleaned up.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	cl, env, err := l.setup(ctx)
	if err != nil {
		return nil, false, err
	}
	base := l.c.lbName(svc)
	fr, err := l.getForwardingRule(ctx, cl, env, base)
	if err != nil {
		return nil, false, err
	}
	if fr != nil {
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: fr.GetIPAddress()}}}, true, nil
	}
	left, err := l.leftovers(ctx, cl, env, base)
	if err != nil || !left {
		return nil, false, err
	}
	return &v1.LoadBalancerStatus{}, true, nil
}

// leftovers reports whether any other resource of the Service remains.
func (l *loadBalancers) leftovers(ctx context.Context, cl *clients, env *environment, base string) (bool, error) {
	checks := []func(ctx context.Context) error{
		func(ctx context.Context) error {
			_, err := cl.targetPools.Get(ctx, &computepb.GetTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: base})
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.backendServices.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: base})
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.regionHealth.Get(ctx, &computepb.GetRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: base + "-hc"})
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.httpHealth.Get(env.project, base+"-hc").Context(ctx).Do()
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.project, Firewall: base + "-fw"})
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.project, Firewall: base + "-hcfw"})
			return err
		},
	}
	for _, check := range checks {
		_, err := call(ctx, l.c, "leftovers.get", func(ctx context.Context) (struct{}, error) { return struct{}{}, check(ctx) })
		switch {
		case err == nil:
			return true, nil
		case !cloudapi.IsNotFound(err):
			return false, err
		}
	}
	return false, nil
}

func (l *loadBalancers) setup(ctx context.Context) (*clients, *environment, error) {
	cl, err := l.c.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	env, err := l.c.environ(ctx)
	if err != nil {
		return nil, nil, err
	}
	return cl, env, nil
}

// UpdateLoadBalancer follows node changes. core/loadbalancers.Rules runs
// it without creates: it never makes a load balancer.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	_, err := l.ensure(ctx, svc, nodes)
	return err
}

// EnsureLoadBalancer creates or converges the Service's load balancer.
// Invalid settings change nothing; a change GCE is still making returns a
// RetryError instead of holding the worker.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	return l.ensure(ctx, svc, nodes)
}

// ensure is one sync: observe the Service's resources, plan the changes
// they need, apply them.
func (l *loadBalancers) ensure(ctx context.Context, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	a := LBAnnotations.Parse(svc)
	spec := l.c.desiredLB(svc, a, l.c.cfg.Subnetwork)
	if err := a.Report(l.c.deps.Recorder); err != nil {
		return nil, err
	}
	p, err := l.observeAndPlan(ctx, svc, spec, nodes)
	if err != nil {
		return nil, err
	}
	p.Log(svc)
	if !p.Empty() {
		klog.InfoS("Updating load balancer", "service", klog.KObj(svc), "loadBalancer", spec.base, "changes", p.String())
	}
	if err := p.Apply(ctx); err != nil {
		l.recordOperationError(svc, err)
		return nil, err
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: p.ip}}}, nil
}

// observeAndPlan reads the Service's resources and plans their changes; it
// changes nothing. Another's forwarding rule or address is refused here,
// before any change.
func (l *loadBalancers) observeAndPlan(ctx context.Context, svc *v1.Service, spec *lbSpec, nodes []*v1.Node) (*lbPlan, error) {
	cl, env, err := l.setup(ctx)
	if err != nil {
		return nil, err
	}
	// The rule is read first: it is what ownership is checked on, and it
	// shows a scheme switch, which decides what else is read.
	fr, err := l.getForwardingRule(ctx, cl, env, spec.base)
	if err != nil {
		return nil, err
	}
	if fr != nil {
		if _, err := l.own.Check(ctx, svc, l.resource(fr.GetName(), fr.GetDescription(), fr.GetIPAddress())); err != nil {
			return nil, err
		}
	}
	if spec.ip != "" {
		if err := l.checkAddress(ctx, cl, env, svc, spec, fr); err != nil {
			return nil, err
		}
	}
	switched := fr == nil || !strings.EqualFold(fr.GetLoadBalancingScheme(), spec.scheme())
	if !cloudapi.MayCreate(ctx) && switched {
		// A node sync with nothing to update, or a switch
		// EnsureLoadBalancer makes: here the rule could be deleted but
		// not made again.
		return nil, cloudapi.ErrCreateSkipped
	}
	byZone, skipped := nodeInstances(nodes, env.project)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without a GCE providerID are not load balancer backends yet", "service", klog.KObj(svc), "nodes", skipped)
	}
	obs, err := l.observe(ctx, cl, env, spec, byZone, fr, switched)
	if err != nil {
		return nil, err
	}
	return l.plan(cl, env, spec, byZone, obs), nil
}

// recordOperationError surfaces a failed GCE Operation as an event on the
// Service, with GCE's own error code and message.
func (l *loadBalancers) recordOperationError(svc *v1.Service, err error) {
	if oe, ok := errors.AsType[*operationError](err); ok && l.c.deps.Recorder != nil {
		l.c.deps.Recorder.Eventf(svc, v1.EventTypeWarning, "GCEOperationFailed", "%s: %s: %s", oe.what, oe.code, oe.detail)
	}
}

// nodeInstances groups the nodes' instances of the project by zone.
func nodeInstances(nodes []*v1.Node, project string) (map[string][]string, []string) {
	refs, skipped := loadbalancers.Collect(nodes, func(providerID string) (instanceRef, error) {
		ref, err := parseProviderID(providerID)
		if err == nil && ref.project != project {
			err = fmt.Errorf("instance %s is in project %s, not %s", ref.name, ref.project, project)
		}
		return ref, err
	})
	byZone := map[string][]string{}
	for _, ref := range refs {
		byZone[ref.zone] = append(byZone[ref.zone], ref.name)
	}
	for z := range byZone {
		sort.Strings(byZone[z])
	}
	return byZone, skipped
}

func instanceURL(project, zone, name string) string {
	return "projects/" + project + "/zones/" + zone + "/instances/" + name
}

// shortURL reduces any resource URL to its "projects/..." path, so URLs
// from the API compare with those polyccm writes.
func shortURL(u string) string {
	if i := strings.Index(u, "projects/"); i >= 0 {
		return u[i:]
	}
	return u
}

func networkURL(env *environment) string {
	return "projects/" + env.project + "/global/networks/" + env.network
}
