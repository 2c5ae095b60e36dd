package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// deletePollInterval is how soon a Service whose cloud resources are
// still being released is looked at again.
const deletePollInterval = 5 * time.Second

// consistencyRetry is how soon a Service waiting on EC2's eventual
// consistency (a group just created, not yet readable) is looked at again.
const consistencyRetry = 2 * time.Second

// loadBalancers implements cloudprovider.LoadBalancer with one load
// balancer per Service. A Network Load Balancer has a security group for
// its source ranges, one target group per port with the nodes' instances
// on the node port, and a listener per port; a Classic one (classic*.go)
// has listeners, its instances and a security group.
type loadBalancers struct {
	c   *Cloud
	own *loadbalancers.Ownership
	// groups are which node group each instance's rules go into, which
	// the node-only sync reuses (lbnodes.go); core keeps the bases.
	groups instanceGroups
	// groupLocks serialize changes to one node security group (nodesg.go).
	groupLocks sync.Map
}

var _ loadbalancers.Translator = (*loadBalancers)(nil)

// LoadBalancer returns the load balancer, run by core's sync.
func (c *Cloud) LoadBalancer() cloudprovider.LoadBalancer { return loadbalancers.Sync(c.lbs) }

// elsewhere reports Services the AWS Load Balancer Controller handles.
func elsewhere(svc *v1.Service) bool {
	t := strings.ToLower(strings.TrimSpace(svc.Annotations[AnnType]))
	return t == "external" || t == "nlb-ip"
}

// Name is the AWS CCM's: "a" + the Service UID without dashes, 32
// characters.
func (l *loadBalancers) Name(svc *v1.Service) string { return lbName(svc) }

// Status reports the load balancer; exists is false only when AWS says
// there is none.
func (l *loadBalancers) Status(ctx context.Context, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	if elsewhere(svc) {
		return nil, false, nil
	}
	if l.isClassic(svc) {
		return l.getClassic(ctx, svc)
	}
	cl, err := l.c.clusterClient(ctx)
	if err != nil {
		return nil, false, err
	}
	lb, err := l.findLB(ctx, cl, lbName(svc))
	if err != nil {
		return nil, false, err
	}
	if lb != nil {
		return lbStatus(lb), true, nil
	}
	// The service controller calls EnsureLoadBalancerDeleted only when
	// this says exists: a half-deleted set must still count.
	left, err := l.leftovers(ctx, cl, svc)
	if err != nil || !left {
		return nil, false, err
	}
	return &v1.LoadBalancerStatus{}, true, nil
}

// leftovers reports whether the Service's security group or target groups
// remain without its NLB.
func (l *loadBalancers) leftovers(ctx context.Context, cl *clients, svc *v1.Service) (bool, error) {
	spec := &nlbSpec{name: lbName(svc), service: svc.Namespace + "/" + svc.Name}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return false, err
	}
	sgs, err := l.serviceSecurityGroups(ctx, cl, vpc, svc)
	if err != nil || len(sgs) > 0 {
		return len(sgs) > 0, err
	}
	tgs, err := l.serviceTargetGroups(ctx, cl, svc, spec)
	return len(tgs) > 0, err
}

// Plan plans one sync: it observes what AWS has and plans the changes; a
// change that fails stops the rest, and the next sync observes what was
// made and plans only what is left. Invalid settings change nothing. A
// node sync (run without creates: it never makes a load balancer) changes
// only the targets where the node-only sync can (lbnodes.go); otherwise
// it plans the full sync.
func (l *loadBalancers) Plan(ctx context.Context, svc *v1.Service, nodes []*v1.Node, kind loadbalancers.SyncKind, base any) (*loadbalancers.SyncPlan, error) {
	if _, err := l.c.clusterClient(ctx); err != nil {
		return nil, err // names and tags need the cluster ID
	}
	if b, _ := base.(*syncBase); kind == loadbalancers.NodeSync && !elsewhere(svc) {
		var p *loadbalancers.SyncPlan
		var done bool
		var err error
		if l.wantsClassic(svc) {
			p, done, err = l.planClassicNodes(ctx, svc, nodes, b)
		} else {
			p, done, err = l.planNLBNodes(ctx, svc, nodes, b)
		}
		if done {
			return p, err
		}
	}
	if !elsewhere(svc) && l.wantsClassic(svc) {
		return l.planClassic(ctx, svc, nodes)
	}
	s, err := l.planSync(ctx, svc, nodes)
	if err != nil {
		return nil, err
	}
	if _, given := loadbalancers.SourceRanges(svc); s.obs.noSG && len(given) > 0 && l.c.cfg.DisableSecurityGroupIngress && l.c.deps.Recorder != nil {
		// An NLB made without security groups (the AWS CCM's default) can
		// never get one: its source ranges are enforced by the client
		// rules in the nodes' security groups, as the AWS CCM writes
		// them. With those rules turned off nothing enforces them.
		l.c.deps.Recorder.Eventf(svc, v1.EventTypeWarning, "SourceRangesNotEnforced",
			"load balancer %s was created without security groups and drivers.aws.disableSecurityGroupIngress is set, so nothing enforces loadBalancerSourceRanges; restrict the nodes' security groups yourself, or delete and recreate the Service to get an NLB with a managed security group", s.ap.spec.name)
	}
	if s.obs.noSG && len(s.ap.spec.byoSGs) > 0 && l.c.deps.Recorder != nil {
		l.c.deps.Recorder.Eventf(svc, v1.EventTypeWarning, "SecurityGroupsNotApplied",
			"load balancer %s was created without security groups and AWS cannot give it any, so %s is not applied; delete and recreate the Service to get an NLB with these groups", s.ap.spec.name, AnnSecurityGroups)
	}
	left := &syncBase{}
	return &loadbalancers.SyncPlan{LoadBalancer: s.ap.spec.name, Plan: s.plan, Base: left,
		Status: func(context.Context) (*v1.LoadBalancerStatus, error) {
			// What the sync left, once applied: the target groups it made.
			*left = syncBase{spec: s.ap.spec, subnets: s.ap.subnets, sgID: s.ap.sgID, tgARNs: maps.Clone(s.ap.tgARNs)}
			if s.obs.nodes != nil {
				left.groups = s.obs.nodes.want
				l.groups.learn(s.obs.nodes)
			}
			return lbStatus(s.ap.lb), nil
		}}, nil
}

// syncPlan is one sync of a Service up to its plan: what AWS has, the
// changes, and what applies them. Nothing has been changed yet.
type syncPlan struct {
	obs  *observed
	plan loadbalancers.Plan
	ap   *applier
}

// planSync reads the Service and AWS and plans the sync; it makes no
// change in AWS. Invalid settings, a resource another owns and an NLB
// whose scheme would have to change stop it with an error.
func (l *loadBalancers) planSync(ctx context.Context, svc *v1.Service, nodes []*v1.Node) (*syncPlan, error) {
	if elsewhere(svc) {
		return nil, cloudprovider.ImplementedElsewhere
	}
	spec, a := l.nlbSpecOf(svc)
	// Problems so far stop here; ignored annotations are said once, below,
	// with what the subnets add.
	if a.Err() != nil {
		return nil, a.Report(l.c.deps.Recorder)
	}
	// Fixed addresses are one NLB's at a time: another Service's are
	// refused here, naming it, before AWS would refuse them anyway.
	if err := l.own.CheckAddresses(ctx, svc, AnnEIPAllocations+" or "+AnnPrivateIPv4Addresses, slices.Concat(spec.eips, spec.privateIPs), fixedAddresses); err != nil {
		return nil, err
	}
	cl, err := l.c.clusterClient(ctx)
	if err != nil {
		return nil, err
	}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return nil, err
	}
	subnets, err := l.subnets(ctx, cl, vpc, spec, a)
	if err != nil {
		return nil, err
	}
	if _, err := l.checkNamedGroups(ctx, cl, vpc, svc, map[string][]string{AnnSecurityGroups: spec.byoSGs}, a); err != nil {
		return nil, err
	}
	if err := a.Report(l.c.deps.Recorder); err != nil {
		return nil, err
	}
	targets, skipped := targetNodes(nodes, spec.nodeLabels)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without an AWS providerID are not targets yet", "service", klog.KObj(svc), "nodes", skipped)
	}
	obs, err := l.observe(ctx, cl, svc, vpc, spec)
	if err != nil {
		return nil, err
	}
	if !l.c.cfg.DisableSecurityGroupIngress {
		if obs.nodes, err = l.observeNodeGroups(ctx, cl, vpc, targets); err != nil {
			return nil, err
		}
	}
	if obs.lb != nil && obs.lb.Scheme != scheme(spec) {
		return nil, fmt.Errorf("load balancer %s is %s and cannot become %s in place; put %s back, or delete and recreate the Service", spec.name, obs.lb.Scheme, scheme(spec), AnnInternal)
	}
	ap := newApplier(l, cl, svc, vpc, spec, subnets, targets, obs)
	return &syncPlan{obs: obs, plan: planNLB(spec, subnets, targets, obs, ap), ap: ap}, nil
}

// nlbSpecOf is the NLB the Service asks for, with the problems of its
// settings in the values.
func (l *loadBalancers) nlbSpecOf(svc *v1.Service) (*nlbSpec, *annotations.Values) {
	a := LBAnnotations.Parse(svc)
	ignoreOtherType(a, false)
	if c, ok := hasClassic(svc); ok && c {
		a.Fail(AnnType, "the Service has a Classic Load Balancer, which cannot become a Network Load Balancer; put the type back, or delete and recreate the Service")
	}
	return desiredNLB(svc, a, l.c.clusterID(), l.c.clusterName()), a
}
