package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// wantsClassic reports whether the Service asks for a Classic Load
// Balancer: aws-load-balancer-type classic, or no type and
// drivers.aws.loadBalancer.defaultType classic (the AWS CCM's default).
// An invalid type counts as the default; the annotation check reports it.
func (l *loadBalancers) wantsClassic(svc *v1.Service) bool {
	switch LBType(strings.ToLower(strings.TrimSpace(svc.Annotations[AnnType]))) {
	case TypeNLB:
		return false
	case TypeClassic:
		return true
	}
	return l.c.cfg.LoadBalancer.DefaultType != TypeNLB
}

// hasClassic reports what the Service's status says it has, as the AWS
// CCM tells the kinds apart: a Classic Load Balancer's hostname ends in
// .elb.amazonaws.com, an NLB's in .elb.<region>.amazonaws.com. ok is
// false without a hostname.
func hasClassic(svc *v1.Service) (classic, ok bool) {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.Hostname != "" {
			return strings.HasSuffix(in.Hostname, ".elb.amazonaws.com"), true
		}
	}
	return false, false
}

// isClassic is the kind a Service's load balancer is, for reading and
// deleting it: what its status says, else what it asks for. Deleting by
// the status finds a load balancer made before the type or the default
// changed.
func (l *loadBalancers) isClassic(svc *v1.Service) bool {
	if c, ok := hasClassic(svc); ok {
		return c
	}
	return l.wantsClassic(svc)
}

func classicStatus(dns string) *v1.LoadBalancerStatus {
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: dns}}}
}

// classicSync is one sync of a Service's Classic Load Balancer: what AWS
// has and its claims, then, once they are judged, the plan; nothing has
// been changed yet.
type classicSync struct {
	claimed
	spec    *classicSpec
	cl      *clients
	vpc     string
	subnets []string
	targets []string
	obs     *classicObserved

	plan loadbalancers.Plan
	ap   *classicApplier
}

// planClassic plans one full sync of a Classic Load Balancer, as Plan
// does for an NLB.
func (l *loadBalancers) planClassic(svc *v1.Service, s *classicSync, j *loadbalancers.Judgement) (*loadbalancers.SyncPlan, error) {
	s.planWith(l, svc, j)
	left := &syncBase{}
	return &loadbalancers.SyncPlan{LoadBalancer: s.ap.spec.name, Plan: s.plan, Base: left,
		Status: func(context.Context) (*v1.LoadBalancerStatus, error) {
			*left = syncBase{spec: s.ap.spec, subnets: s.ap.subnets, sgID: s.ap.sgID}
			if s.obs.nodes != nil {
				left.groups = s.obs.nodes.want
				l.groups.learn(s.obs.nodes.found)
			}
			dns := s.ap.dns
			if s.obs.lb != nil {
				dns = aws.ToString(s.obs.lb.DNSName)
			}
			return classicStatus(dns), nil
		}}, nil
}

// observeClassicSync reads the Service and AWS for a sync; it makes no
// change in AWS. Invalid settings, a resource another owns (claimed here,
// judged by core) and a load balancer whose scheme would have to change
// stop it with an error.
func (l *loadBalancers) observeClassicSync(ctx context.Context, svc *v1.Service, nodes []*v1.Node) (*classicSync, error) {
	spec, a := l.classicSpecOf(svc)
	if a.Err() != nil {
		return nil, a.Report(l.c.deps.Recorder)
	}
	cl, err := l.c.clusterClient(ctx)
	if err != nil {
		return nil, err
	}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return nil, err
	}
	found, err := l.subnets(ctx, cl, vpc, &nlbSpec{subnetsAnn: spec.subnetsAnn, internal: spec.internal}, a)
	if err != nil {
		return nil, err
	}
	if _, err := l.checkNamedGroups(ctx, cl, vpc, svc, map[string][]string{AnnSecurityGroups: spec.ownSGs, AnnExtraSecurityGroups: spec.extraSGs}, a); err != nil {
		return nil, err
	}
	if err := a.Report(l.c.deps.Recorder); err != nil {
		return nil, err
	}
	var subnets []string
	for _, s := range found {
		subnets = append(subnets, s.id)
	}
	slices.Sort(subnets)
	targets, skipped := targetNodes(nodes, spec.nodeLabels)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without an AWS providerID are not instances of the load balancer yet", "service", klog.KObj(svc), "nodes", skipped)
	}
	s := &classicSync{spec: spec, cl: cl, vpc: vpc, subnets: subnets, targets: targets}
	obs, claims, err := l.observeClassic(ctx, cl, vpc, spec)
	s.claims = claims
	if err != nil {
		return s, s.failed(err)
	}
	if obs.lb != nil && aws.ToString(obs.lb.Scheme) != classicScheme(spec) {
		return s, s.failed(fmt.Errorf("load balancer %s is %s and cannot become %s in place; put %s back, or delete and recreate the Service", spec.name, aws.ToString(obs.lb.Scheme), classicScheme(spec), AnnInternal))
	}
	if !l.c.cfg.DisableSecurityGroupIngress {
		lbSG := wantedSGs(spec, obs)[0]
		if len(spec.ownSGs) == 0 && obs.sg == nil {
			lbSG = "" // made by this plan: nothing lets it in yet
		}
		if obs.nodes, err = l.observeClassicNodeGroups(ctx, cl, vpc, lbSG, targets); err != nil {
			return s, s.failed(err)
		}
		// Another Service's load balancer that uses the same group
		// needs its rule where this one's targets are not.
		gid := lbSG
		if len(spec.ownSGs) == 0 {
			gid = ""
		}
		obs.nodes.shared = l.groupUsers(gid, classicSGName(spec.name), svc)
		if obs.lb != nil && len(obs.lb.SecurityGroups) > 0 && obs.lb.SecurityGroups[0] != lbSG && (obs.sg == nil || obs.lb.SecurityGroups[0] != aws.ToString(obs.sg.GroupId)) {
			// The group the Service named before: its node rule goes,
			// unless another Service still uses that group.
			obs.nodes.released = obs.lb.SecurityGroups[0]
		}
	}
	s.obs = obs
	return s, nil
}

// planWith plans the sync observed, with what core's judgement adopted.
func (s *classicSync) planWith(l *loadBalancers, svc *v1.Service, j *loadbalancers.Judgement) {
	s.obs.sgAdopted = s.obs.sg != nil && j.Adopted(s.obs.sgRes)
	s.ap = &classicApplier{l: l, cl: s.cl, svc: svc, vpc: s.vpc, spec: s.spec, subnets: s.subnets, j: j}
	if s.obs.sg != nil {
		s.ap.sgID = aws.ToString(s.obs.sg.GroupId)
	}
	s.plan = planClassic(s.spec, s.subnets, s.targets, s.obs, s.ap)
}

// classicSpecOf is the Classic Load Balancer the Service asks for, with
// the problems of its settings in the values.
func (l *loadBalancers) classicSpecOf(svc *v1.Service) (*classicSpec, *annotations.Values) {
	a := LBAnnotations.Parse(svc)
	ignoreOtherType(a, true)
	spec := desiredClassic(svc, a, l.c.clusterID())
	if c, ok := hasClassic(svc); ok && !c {
		a.Fail(AnnType, "the Service has a Network Load Balancer, which cannot become a Classic one; put the type back, or delete and recreate the Service")
	}
	return spec, a
}

// getClassic reports the Classic Load Balancer; a managed group left
// without it still counts, so that the Service is deleted to the end.
func (l *loadBalancers) getClassic(ctx context.Context, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	cl, err := l.c.clusterClient(ctx)
	if err != nil {
		return nil, false, err
	}
	lb, err := l.findClassic(ctx, cl, lbName(svc))
	if err != nil {
		return nil, false, err
	}
	if lb != nil {
		return classicStatus(aws.ToString(lb.DNSName)), true, nil
	}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return nil, false, err
	}
	sg, err := l.findSecurityGroup(ctx, cl, vpc, classicSGName(lbName(svc)))
	if err != nil || sg == nil {
		return nil, false, err
	}
	return &v1.LoadBalancerStatus{}, true, nil
}

// classicDeletion reads what deleting the Classic Load Balancer deletes:
// the load balancer, then the node rules of the groups the Service named,
// then its managed group, out of every group that lets it in first. The
// load balancer and the managed group go only if core's ownership rule
// says they are this Service's. The group outlives the load balancer's
// network interfaces for a while: that is Pending, not a failure.
func (l *loadBalancers) classicDeletion(ctx context.Context, svc *v1.Service) (*loadbalancers.Deletion, error) {
	name := lbName(svc)
	cl, err := l.c.clusterClient(ctx)
	if err != nil {
		return nil, err
	}
	lb, err := l.findClassic(ctx, cl, name)
	if err != nil {
		return nil, err
	}
	d := &loadbalancers.Deletion{}
	if lb != nil {
		tags, err := l.classicTags(ctx, cl, name)
		if err != nil {
			return nil, err // ownership unknown
		}
		// Refused, it stays; the groups below are still seen to.
		r := l.classicResource(kindLB, name, name, name, tags)
		d.Add(loadbalancers.DeleteStep{Guard: &r, Run: func(ctx context.Context) error {
			_, err := cloudapi.Call(ctx, l.c.api, "elb.DeleteLoadBalancer", func(ctx context.Context) (*elb.DeleteLoadBalancerOutput, error) {
				return cl.clb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String(name)})
			})
			if err != nil && !cloudapi.IsNotFound(err) {
				return fmt.Errorf("deleting load balancer %s: %w", name, err)
			}
			klog.InfoS("Deleted load balancer", "service", klog.KObj(svc), "loadBalancer", name, "type", TypeClassic)
			return nil
		}})
	}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return d.FailAfter(err)
	}
	// The group the Service named (security-groups) was let into the
	// nodes' groups: that rule goes too, unless another Service uses it
	// (releaseNamedGroup sees to that, when it runs).
	named := map[string]bool{}
	if id, _ := lbGroupOf(svc); id != "" {
		named[id] = true
	}
	if lb != nil && len(lb.SecurityGroups) > 0 {
		named[lb.SecurityGroups[0]] = true
	}
	sgName := classicSGName(name)
	sg, err := l.findSecurityGroup(ctx, cl, vpc, sgName)
	if err != nil {
		return d.FailAfter(err)
	}
	for _, g := range slices.Sorted(maps.Keys(named)) {
		if sg != nil && g == aws.ToString(sg.GroupId) {
			continue // the managed group's rules go with it, below
		}
		d.Add(loadbalancers.DeleteStep{Run: func(ctx context.Context) error { return l.releaseNamedGroup(ctx, cl, vpc, svc, g) }})
	}
	if sg == nil {
		return d, nil
	}
	id := aws.ToString(sg.GroupId)
	r := l.classicResource(kindSG, id, sgName, name, ec2TagMap(sg.Tags))
	d.Add(loadbalancers.DeleteStep{Guard: &r, StopIfRefused: true, Run: func(ctx context.Context) error {
		return l.deleteClassicGroup(ctx, cl, vpc, id)
	}})
	return d, nil
}

// deleteClassicGroup deletes the managed group, which core's ownership
// rule said is the Service's.
func (l *loadBalancers) deleteClassicGroup(ctx context.Context, cl *clients, vpc, id string) error {
	// Rules naming the group are this Service's (the group is), and would
	// keep it from being deleted.
	if err := l.revokeReferences(ctx, cl, vpc, id); err != nil {
		return err
	}
	_, err := cloudapi.Call(ctx, l.c.api, "ec2.DeleteSecurityGroup", func(ctx context.Context) (*ec2.DeleteSecurityGroupOutput, error) {
		return cl.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)})
	})
	switch {
	case err == nil || cloudapi.IsNotFound(err):
		return nil
	case cloudapi.KindOf(err) == cloudapi.KindConflict:
		return loadbalancers.Pending(deletePollInterval, "security group %s is still in use by the deleted load balancer; retrying in %s", id, deletePollInterval)
	}
	return fmt.Errorf("deleting security group %s: %w", id, err)
}

// revokeReferences takes every rule naming group id out of the VPC's
// groups.
func (l *loadBalancers) revokeReferences(ctx context.Context, cl *clients, vpc, id string) error {
	if l.c.cfg.DisableSecurityGroupIngress {
		return nil // polyccm made none
	}
	sgs, err := l.groupsLetting(ctx, cl, vpc, id)
	if err != nil {
		return err
	}
	for _, sg := range sgs {
		var perms []ec2types.IpPermission
		for _, p := range sg.IpPermissions {
			for _, g := range p.UserIdGroupPairs {
				if aws.ToString(g.GroupId) == id {
					perms = append(perms, ec2types.IpPermission{IpProtocol: p.IpProtocol, FromPort: p.FromPort, ToPort: p.ToPort,
						UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(id)}}})
				}
			}
		}
		if len(perms) == 0 {
			continue
		}
		gid := aws.ToString(sg.GroupId)
		_, err := cloudapi.Call(ctx, l.c.api, "ec2.RevokeSecurityGroupIngress", func(ctx context.Context) (*ec2.RevokeSecurityGroupIngressOutput, error) {
			return cl.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(gid), IpPermissions: perms})
		})
		if err != nil && !cloudapi.IsNotFound(err) {
			return fmt.Errorf("revoking the rules naming %s from security group %s: %w", id, gid, err)
		}
		klog.InfoS("Revoked the load balancer's rules from a node security group", "group", gid, "loadBalancerGroup", id)
	}
	return nil
}
