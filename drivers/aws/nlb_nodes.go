package aws

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// planNLBNodes plans the node-only sync of an NLB (lbnodes.go): the NLB by
// name, its target groups by its ARN, each group's targets, then a
// register and a deregister per group where needed. For one port that is
// three reads where the full sync makes about ten (tags, attributes,
// listeners, the security group, subnets, each group by name and its
// tags, the node groups). done is false when the full sync must decide.
func (l *loadBalancers) planNLBNodes(ctx context.Context, svc *v1.Service, nodes []*v1.Node, base *syncBase) (_ *loadbalancers.SyncPlan, done bool, err error) {
	base, spec, ok := unchangedSpec(base, svc, l.nlbSpecOf)
	if !ok {
		return nil, false, nil
	}
	subnets, _ := base.subnets.([]subnet)
	cl, err := l.c.clusterClient(ctx)
	if err != nil {
		return nil, true, err
	}
	lb, err := l.findLB(ctx, cl, spec.name)
	if err != nil {
		return nil, true, err
	}
	if lb == nil {
		fallBack(svc, "the load balancer is gone")
		return nil, false, nil
	}
	attached, err := l.attachedTargetGroups(ctx, cl, aws.ToString(lb.LoadBalancerArn))
	if err != nil {
		return nil, true, err
	}
	tgs, drift := nlbDrift(spec, subnets, base, lb, attached)
	if !drift.Empty() {
		fallBack(svc, "the load balancer changed since its last full sync: "+drift.String())
		return nil, false, nil
	}
	targets, skipped := targetNodes(nodes, spec.nodeLabels)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without an AWS providerID are not targets yet", "service", klog.KObj(svc), "nodes", skipped)
	}
	same, err := l.sameNodeGroups(ctx, cl, base, targets)
	if err != nil {
		return nil, true, err
	}
	if !same {
		fallBack(svc, "the nodes' security groups are not those of the last full sync")
		return nil, false, nil
	}
	ap := &applier{l: l, cl: cl, svc: svc, spec: spec, subnets: subnets, targets: targets, sgID: base.sgID, lb: lb, tgARNs: maps.Clone(base.tgARNs)}
	var p loadbalancers.Plan
	for _, ls := range spec.listeners {
		tg := tgs[ls.tg.name]
		arn := aws.ToString(tg.TargetGroupArn)
		have, err := l.targetsOf(ctx, cl, arn)
		if err != nil {
			return nil, true, err
		}
		want := map[target]bool{}
		for _, id := range targets {
			want[target{id, ls.tg.port}] = true
		}
		var u tgUpdate
		u.register, u.deregister = loadbalancers.Delta(want, have, compareTarget)
		if len(u.register)+len(u.deregister) == 0 {
			continue
		}
		p.Add(change{Action: loadbalancers.Update, Kind: kindTG, Name: aws.ToString(tg.TargetGroupName),
			Fields: []field{{Name: "Targets", From: showTargets(have, ls.tg.port), To: showTargets(want, ls.tg.port)}},
			Apply:  ap.run(func(ctx context.Context, a *applier) error { return a.updateTargetGroup(ctx, arn, u) })})
	}
	return &loadbalancers.SyncPlan{LoadBalancer: spec.name, Plan: p}, true, nil
}

// nlbDrift is what the full sync would change that the NLB and its
// target groups, as read, show: scheme, address type, subnets, security
// groups, which target groups are attached, and their protocol, port and
// health check. Tags and attributes, as the last full sync set them, are
// taken as they were. It returns the Service's target groups by the name
// its ports give them; the changes have no Apply.
func nlbDrift(spec *nlbSpec, subnets []subnet, base *syncBase, lb *elbtypes.LoadBalancer, attached []elbtypes.TargetGroup) (map[string]elbtypes.TargetGroup, loadbalancers.Plan) {
	var p loadbalancers.Plan
	if lb.Scheme != scheme(spec) {
		p.Add(change{Action: loadbalancers.Update, Kind: kindLB, Name: spec.name, Fields: []field{{Name: "Scheme", From: string(lb.Scheme), To: string(scheme(spec))}}})
	}
	obs := &observed{lb: lb, lbTags: spec.tags, lbAttrs: spec.lbAttrs, noSG: len(lb.SecurityGroups) == 0}
	if base.sgID != "" {
		obs.sg = &ec2types.SecurityGroup{GroupId: aws.String(base.sgID)}
	}
	planLoadBalancer(&p, spec, subnets, obs, nil)
	byARN := map[string]elbtypes.TargetGroup{}
	for _, tg := range attached {
		byARN[aws.ToString(tg.TargetGroupArn)] = tg
	}
	tgs := map[string]elbtypes.TargetGroup{}
	for _, ls := range spec.listeners {
		arn := base.tgARNs[ls.tg.name]
		tg, ok := byARN[arn]
		if !ok {
			p.Add(change{Action: loadbalancers.Update, Kind: kindTG, Name: ls.tg.name, Fields: []field{{Name: "Attached", From: "no", To: "yes"}}})
			continue
		}
		delete(byARN, arn)
		var fields []field
		if tg.Protocol != ls.tg.protocol || aws.ToInt32(tg.Port) != ls.tg.port {
			fields = append(fields, field{Name: "Protocol/Port", From: string(tg.Protocol) + "/" + strconv.Itoa(int(aws.ToInt32(tg.Port))), To: string(ls.tg.protocol) + "/" + strconv.Itoa(int(ls.tg.port))})
		}
		fields = append(fields, healthCheckDiff(&tg, spec.healthCheck)...)
		p.Add(change{Action: loadbalancers.Update, Kind: kindTG, Name: aws.ToString(tg.TargetGroupName), Fields: fields})
		tgs[ls.tg.name] = tg
	}
	for _, arn := range slices.Sorted(maps.Keys(byARN)) {
		p.Add(change{Action: loadbalancers.Delete, Kind: kindTG, Name: aws.ToString(byARN[arn].TargetGroupName)})
	}
	return tgs, p
}
