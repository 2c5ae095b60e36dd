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
func (c *Cloud) LoadBalancer() cloudprovider.LoadBalancer {
	return loadbalancers.Sync(c.lbs, c.lbs.own)
}

// elsewhere reports Services the AWS Load Balancer Controller handles.
func elsewhere(svc *v1.Service) bool {
	t := strings.ToLower(strings.TrimSpace(svc.Annotations[AnnType]))
	return t == "external" || t == "nlb-ip"
}

// Name is the AWS CCM's: "a" + the Service UID without dashes, 32
// characters.
func (l *loadBalancers) Name(svc *v1.Service) string { return lbName(svc) }

// Status reports the load balancer; exists is false only when AWS says
// there is none. The load balancer is found by the name derived from the
// Service's UID, which no other Service's can have: no ownership check.
func (l *loadBalancers) Status(ctx context.Context, svc *v1.Service) (*v1.LoadBalancerStatus, *loadbalancers.Resource, bool, error) {
	st, exists, err := l.status(ctx, svc)
	return st, nil, exists, err
}

func (l *loadBalancers) status(ctx context.Context, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
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

// Observe reads one sync: the Service, and what AWS has of its load
// balancer, each resource the sync would change claimed for core's
// ownership rule. Invalid settings change nothing. A node sync (run
// without creates: it never makes a load balancer) changes only the
// targets where the node-only sync can (lbnodes.go), planned here
// already; otherwise it observes the full sync.
func (l *loadBalancers) Observe(ctx context.Context, svc *v1.Service, nodes []*v1.Node, kind loadbalancers.SyncKind, base any) (*loadbalancers.Observed, error) {
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
			if err != nil {
				return nil, err
			}
			// It claims nothing: it changes only what the last full sync,
			// which passed the ownership rule, left.
			return &loadbalancers.Observed{LoadBalancer: p.LoadBalancer, State: p}, nil
		}
	}
	if !elsewhere(svc) && l.wantsClassic(svc) {
		s, err := l.observeClassicSync(ctx, svc, nodes)
		if err != nil {
			return nil, err
		}
		return &loadbalancers.Observed{LoadBalancer: s.spec.name, Claims: s.claims, State: s, Halt: s.fail}, nil
	}
	s, err := l.observeSync(ctx, svc, nodes)
	if err != nil {
		return nil, err
	}
	return &loadbalancers.Observed{LoadBalancer: s.spec.name, Claims: s.claims, State: s, Halt: s.fail}, nil
}

// Plan plans the sync Observe read, once core has judged its claims. A
// change that fails stops the rest, and the next sync observes what was
// made and plans only what is left.
func (l *loadBalancers) Plan(_ context.Context, svc *v1.Service, o *loadbalancers.Observed, j *loadbalancers.Judgement) (*loadbalancers.SyncPlan, error) {
	switch s := o.State.(type) {
	case *loadbalancers.SyncPlan:
		return s, nil
	case *classicSync:
		return l.planClassic(svc, s, j)
	case *nlbSync:
		return l.planNLBSync(svc, s, j)
	}
	return nil, fmt.Errorf("aws: no plan for an observation of %T", o.State)
}

// planNLBSync plans one full sync of an NLB.
func (l *loadBalancers) planNLBSync(svc *v1.Service, s *nlbSync, j *loadbalancers.Judgement) (*loadbalancers.SyncPlan, error) {
	s.planWith(l, svc, j)
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

// nlbSync is one sync of a Service's NLB: what AWS has and its claims,
// then, once they are judged, the changes and what applies them. Nothing
// has been changed yet.
type nlbSync struct {
	claimed
	spec    *nlbSpec
	cl      *clients
	vpc     string
	subnets []subnet
	targets []string
	obs     *observed

	plan loadbalancers.Plan
	ap   *applier
}

// claimed are the claims of an observation, in the order they were read
// (the order in which the ownership rule was applied to each as it was
// read, before core applied it), and what stopped the observation after
// some of them (core's Observed.Halt).
type claimed struct {
	claims []loadbalancers.Claim
	fail   func() error
}

// halt ends an observation with fail: at once when nothing was claimed
// yet; else once core has judged the claims, so that a refusal of one
// read before still comes first.
func (c *claimed) halt(fail func() error) error {
	if len(c.claims) == 0 {
		return fail()
	}
	c.fail = fail
	return nil
}

func (c *claimed) failed(err error) error { return c.halt(func() error { return err }) }

// observeSync reads the Service and AWS for a sync; it makes no change in
// AWS. Invalid settings, a resource another owns (claimed here, judged by
// core) and an NLB whose scheme would have to change stop it with an
// error.
func (l *loadBalancers) observeSync(ctx context.Context, svc *v1.Service, nodes []*v1.Node) (*nlbSync, error) {
	if elsewhere(svc) {
		return nil, cloudprovider.ImplementedElsewhere
	}
	spec, a := l.nlbSpecOf(svc)
	// Problems so far stop here; ignored annotations are said once, below,
	// with what the subnets add.
	if a.Err() != nil {
		return nil, a.Report(l.c.deps.Recorder)
	}
	s := &nlbSync{spec: spec}
	// Fixed addresses are one NLB's at a time: another Service's are
	// refused first, naming it, before AWS would refuse them anyway.
	if want := slices.Concat(spec.eips, spec.privateIPs); len(want) > 0 {
		s.claims = append(s.claims, loadbalancers.Claim{Address: &loadbalancers.AddressClaim{
			Via: AnnEIPAllocations + " or " + AnnPrivateIPv4Addresses, Want: want, Held: fixedAddresses}})
	}
	cl, err := l.c.clusterClient(ctx)
	if err != nil {
		return s, s.failed(err)
	}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return s, s.failed(err)
	}
	subnets, err := l.subnets(ctx, cl, vpc, spec, a)
	if err != nil {
		return s, s.failed(err)
	}
	if _, err := l.checkNamedGroups(ctx, cl, vpc, svc, map[string][]string{AnnSecurityGroups: spec.byoSGs}, a); err != nil {
		return s, s.failed(err)
	}
	if a.Err() != nil {
		// Reported, with its events, once the addresses are judged.
		return s, s.halt(func() error { return a.Report(l.c.deps.Recorder) })
	}
	if err := a.Report(l.c.deps.Recorder); err != nil { // warnings only
		return s, s.failed(err)
	}
	targets, skipped := targetNodes(nodes, spec.nodeLabels)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without an AWS providerID are not targets yet", "service", klog.KObj(svc), "nodes", skipped)
	}
	s.cl, s.vpc, s.subnets, s.targets = cl, vpc, subnets, targets
	obs, claims, err := l.observe(ctx, cl, vpc, spec)
	s.claims = append(s.claims, claims...)
	if err != nil {
		return s, s.failed(err)
	}
	if !l.c.cfg.DisableSecurityGroupIngress {
		if obs.nodes, err = l.observeNodeGroups(ctx, cl, vpc, targets); err != nil {
			return s, s.failed(err)
		}
	}
	if obs.lb != nil && obs.lb.Scheme != scheme(spec) {
		return s, s.failed(fmt.Errorf("load balancer %s is %s and cannot become %s in place; put %s back, or delete and recreate the Service", spec.name, obs.lb.Scheme, scheme(spec), AnnInternal))
	}
	s.obs = obs
	return s, nil
}

// planWith plans the sync observed, with what core's judgement adopted.
func (s *nlbSync) planWith(l *loadBalancers, svc *v1.Service, j *loadbalancers.Judgement) {
	s.obs.judged(j)
	s.ap = newApplier(l, s.cl, svc, s.vpc, s.spec, s.subnets, s.targets, s.obs, j)
	s.plan = planNLB(s.spec, s.subnets, s.targets, s.obs, s.ap)
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
