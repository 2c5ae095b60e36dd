package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbctypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// planClassicNodes plans the node-only sync of a Classic Load Balancer
// (lbnodes.go): one DescribeLoadBalancers, whose Instances are what is
// registered, then one RegisterInstancesWithLoadBalancer for the missing
// instances and one DeregisterInstancesFromLoadBalancer for the extra
// ones, if any. Terminated instances need no call: ELB takes them out
// itself. With the node groups managed, the instances new to the cache
// are described too, to see that their groups let the load balancer in
// already. done is false when the full sync must decide.
func (l *loadBalancers) planClassicNodes(ctx context.Context, svc *v1.Service, nodes []*v1.Node, base *syncBase) (_ *loadbalancers.SyncPlan, done bool, err error) {
	base, spec, ok := unchangedSpec(base, svc, l.classicSpecOf)
	if !ok {
		return nil, false, nil
	}
	subnets, _ := base.subnets.([]string)
	cl, err := l.c.clusterClient(ctx)
	if err != nil {
		return nil, true, err
	}
	lb, err := l.findClassic(ctx, cl, spec.name)
	if err != nil {
		return nil, true, err
	}
	if lb == nil {
		fallBack(svc, "the load balancer is gone")
		return nil, false, nil
	}
	if drift := classicDrift(spec, subnets, base.sgID, lb); !drift.Empty() {
		fallBack(svc, "the load balancer changed since its last full sync: "+drift.String())
		return nil, false, nil
	}
	targets, skipped := targetNodes(nodes, spec.nodeLabels)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without an AWS providerID are not instances of the load balancer yet", "service", klog.KObj(svc), "nodes", skipped)
	}
	same, err := l.sameNodeGroups(ctx, cl, base, targets)
	if err != nil {
		return nil, true, err
	}
	if !same {
		fallBack(svc, "the nodes' security groups are not those of the last full sync")
		return nil, false, nil
	}
	ap := &classicApplier{l: l, cl: cl, svc: svc, spec: spec, subnets: subnets, sgID: base.sgID}
	var p loadbalancers.Plan
	planClassicInstances(&p, spec, lb, targets, ap)
	return &loadbalancers.SyncPlan{LoadBalancer: spec.name, Plan: p}, true, nil
}

// classicDrift is what the full sync would change that the one read of
// the load balancer shows: scheme, subnets, groups, listeners, policies
// and health check (tags, as the last full sync set them, are taken as
// they were). Its changes have no Apply.
func classicDrift(spec *classicSpec, subnets []string, sgID string, lb *elbctypes.LoadBalancerDescription) loadbalancers.Plan {
	var p loadbalancers.Plan
	if s := aws.ToString(lb.Scheme); s != classicScheme(spec) {
		p.Add(change{Action: loadbalancers.Update, Kind: kindLB, Name: spec.name, Fields: []field{{Name: "Scheme", From: s, To: classicScheme(spec)}}})
	}
	obs := &classicObserved{lb: lb, tags: spec.tags}
	if sgID != "" {
		obs.sg = &ec2types.SecurityGroup{GroupId: aws.String(sgID)}
	}
	planClassicLB(&p, spec, subnets, obs, nil)
	planClassicListeners(&p, spec, lb, nil)
	planClassicPolicies(&p, spec, lb, classicPolicyNames(lb), nil)
	planClassicHealth(&p, spec, lb, nil)
	return p
}

// classicPolicyNames are the policies the description lists: the
// stickiness ones and the others (proxy protocol, SSL negotiation).
func classicPolicyNames(lb *elbctypes.LoadBalancerDescription) map[string]bool {
	out := map[string]bool{}
	ps := lb.Policies
	if ps == nil {
		return out
	}
	for _, p := range ps.AppCookieStickinessPolicies {
		out[aws.ToString(p.PolicyName)] = true
	}
	for _, p := range ps.LBCookieStickinessPolicies {
		out[aws.ToString(p.PolicyName)] = true
	}
	for _, n := range ps.OtherPolicies {
		out[n] = true
	}
	return out
}
