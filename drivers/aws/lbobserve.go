package aws

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// observed is what AWS has of a Service's NLB and everything around it,
// read before anything is changed. The plan is computed from it alone.
type observed struct {
	lb      *elbtypes.LoadBalancer // nil: none yet
	lbTags  map[string]string
	lbAttrs map[string]string
	// noSG: the NLB was made without security groups (the AWS CCM's
	// default) and can never get one; its group is neither read nor made.
	noSG      bool
	sg        *ec2types.SecurityGroup // nil: none yet
	sgRes     loadbalancers.Resource  // sg as claimed
	sgAdopted bool
	listeners map[int32]elbtypes.Listener
	// listenerCerts are each TLS listener's certificates besides its
	// default one, by port.
	listenerCerts map[int32][]string
	// attached are the target groups the NLB uses now.
	attached []elbtypes.TargetGroup
	// tgs are the target groups the Service's ports ask for that exist,
	// by name.
	tgs map[string]*observedTG
	// nodes are the node security groups, unless polyccm leaves them to
	// the operator (disableSecurityGroupIngress).
	nodes *nodeGroups
}

// observedTG is one of the Service's target groups as AWS has it.
type observedTG struct {
	tg      elbtypes.TargetGroup
	tags    map[string]string
	res     loadbalancers.Resource // as claimed
	adopted bool
	attrs   map[string]string // read only when the Service sets some
	targets map[target]bool   // registered and not draining
}

// target is one registered instance and port.
type target struct {
	id   string
	port int32
}

func compareTarget(a, b target) int {
	return cmp.Or(strings.Compare(a.id, b.id), cmp.Compare(a.port, b.port))
}

// observe reads the Service's NLB, security group, target groups and
// listeners. It changes nothing. Each resource found here is claimed, in
// the order it was read, so that core holds it to the ownership rule
// before any change; the claims read before an error are returned with
// it. With no NLB in a pass that may not create one, it returns
// cloudapi.ErrCreateSkipped at once.
func (l *loadBalancers) observe(ctx context.Context, cl *clients, vpc string, spec *nlbSpec) (*observed, []loadbalancers.Claim, error) {
	obs := &observed{listeners: map[int32]elbtypes.Listener{}, tgs: map[string]*observedTG{}}
	var claims []loadbalancers.Claim
	lb, err := l.findLB(ctx, cl, spec.name)
	if err != nil {
		return nil, nil, err
	}
	if lb == nil && !cloudapi.MayCreate(ctx) {
		// A node sync: no NLB, nothing to follow the nodes.
		return nil, nil, cloudapi.ErrCreateSkipped
	}
	obs.lb = lb
	if lb != nil {
		var r loadbalancers.Resource
		if obs.lbTags, r, err = l.taggedResource(ctx, cl, kindLB, aws.ToString(lb.LoadBalancerArn), spec.name); err != nil {
			return nil, claims, err
		}
		claims = append(claims, loadbalancers.ResourceClaim(r))
		obs.noSG = len(lb.SecurityGroups) == 0
	}
	if !obs.noSG {
		sg, err := l.securityGroupOf(ctx, cl, vpc, spec, lb)
		if err != nil {
			return nil, claims, err
		}
		if sg != nil {
			obs.sg, obs.sgRes = sg, l.resource(kindSG, aws.ToString(sg.GroupId), aws.ToString(sg.GroupName), ec2TagMap(sg.Tags))
			claims = append(claims, loadbalancers.ResourceClaim(obs.sgRes))
		}
	}
	if lb != nil {
		arn := aws.ToString(lb.LoadBalancerArn)
		if obs.lbAttrs, err = l.lbAttributes(ctx, cl, arn); err != nil {
			return nil, claims, err
		}
		if obs.attached, err = l.attachedTargetGroups(ctx, cl, arn); err != nil {
			return nil, claims, err
		}
		if obs.listeners, err = l.listenersOf(ctx, cl, arn); err != nil {
			return nil, claims, err
		}
		obs.listenerCerts = map[int32][]string{}
		for port, ls := range obs.listeners {
			if ls.Protocol != elbtypes.ProtocolEnumTls {
				continue
			}
			if obs.listenerCerts[port], err = l.listenerCertsOf(ctx, cl, aws.ToString(ls.ListenerArn)); err != nil {
				return nil, claims, err
			}
		}
	}
	for _, ls := range spec.listeners {
		tg, err := l.findTargetGroup(ctx, cl, ls.tg.name)
		if err != nil {
			return nil, claims, err
		}
		if tg == nil {
			tg = legacyTargetGroup(obs.attached, ls.tg)
		}
		if tg == nil {
			continue
		}
		arn := aws.ToString(tg.TargetGroupArn)
		o := &observedTG{tg: *tg}
		if o.tags, o.res, err = l.taggedResource(ctx, cl, kindTG, arn, aws.ToString(tg.TargetGroupName)); err != nil {
			return nil, claims, err
		}
		claims = append(claims, loadbalancers.ResourceClaim(o.res))
		if len(spec.tgAttrs) > 0 {
			if o.attrs, err = l.targetGroupAttributes(ctx, cl, arn); err != nil {
				return nil, claims, err
			}
		}
		if o.targets, err = l.targetsOf(ctx, cl, arn); err != nil {
			return nil, claims, err
		}
		obs.tgs[ls.tg.name] = o
	}
	return obs, claims, nil
}

// judged sets what core's judgement of the claims says was adopted (so
// its tags are planned).
func (obs *observed) judged(j *loadbalancers.Judgement) {
	obs.sgAdopted = obs.sg != nil && j.Adopted(obs.sgRes)
	for _, o := range obs.tgs {
		o.adopted = j.Adopted(o.res)
	}
}

// Transition from polyccm's earlier names. A cluster that ran an earlier
// polyccm has NLBs whose security group is named legacySGName and whose
// target groups are named legacyTGName. Such a group is kept where the
// Service's own NLB uses it (the NLB passed the ownership rule, and the
// group is held to it too), rather than replaced by one with the AWS
// CCM's name: replacing them would interrupt traffic for nothing. Groups
// made from now on get the AWS CCM's names.

// securityGroupOf is the Service's security group: the one with the AWS
// CCM's name, else a legacy-named one the NLB has; nil if neither.
func (l *loadBalancers) securityGroupOf(ctx context.Context, cl *clients, vpc string, spec *nlbSpec, lb *elbtypes.LoadBalancer) (*ec2types.SecurityGroup, error) {
	sg, err := l.findSecurityGroup(ctx, cl, vpc, spec.sgName)
	if sg != nil || err != nil || lb == nil {
		return sg, err
	}
	sg, err = l.findSecurityGroup(ctx, cl, vpc, spec.legacySG)
	if err != nil {
		return nil, err
	}
	if sg != nil && slices.Contains(lb.SecurityGroups, aws.ToString(sg.GroupId)) {
		return sg, nil
	}
	return l.managedGroupOn(ctx, cl, lb)
}

// managedGroupOn is the group on this Service's own NLB that the AWS CCM
// made for it under another name: it hashes its --cluster-name into the
// name, which may differ from the cluster ID polyccm's clusterName is.
// Described as the AWS CCM describes its groups and tagged owned by this
// cluster, it is the NLB's managed group: replacing it would orphan it.
func (l *loadBalancers) managedGroupOn(ctx context.Context, cl *clients, lb *elbtypes.LoadBalancer) (*ec2types.SecurityGroup, error) {
	if len(lb.SecurityGroups) == 0 {
		return nil, nil
	}
	sgs, err := l.describeGroups(ctx, cl, &ec2.DescribeSecurityGroupsInput{GroupIds: lb.SecurityGroups})
	if err != nil {
		return nil, err
	}
	for i := range sgs {
		if aws.ToString(sgs[i].Description) == sgDescription && l.c.ec2Owned(sgs[i].Tags) {
			return &sgs[i], nil
		}
	}
	return nil, nil
}

// legacyTargetGroup is the target group with tg's legacy name among those
// the NLB uses, or nil.
func legacyTargetGroup(attached []elbtypes.TargetGroup, tg tgSpec) *elbtypes.TargetGroup {
	for i := range attached {
		if aws.ToString(attached[i].TargetGroupName) == tg.legacy {
			return &attached[i]
		}
	}
	return nil
}

func (l *loadBalancers) lbAttributes(ctx context.Context, cl *clients, arn string) (map[string]string, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeLoadBalancerAttributes", func(ctx context.Context) (*elbv2.DescribeLoadBalancerAttributesOutput, error) {
		return cl.elb.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: aws.String(arn)})
	})
	if err != nil {
		return nil, err
	}
	return keyValues(out.Attributes, func(a elbtypes.LoadBalancerAttribute) (*string, *string) { return a.Key, a.Value }), nil
}

// attachedTargetGroups are the target groups the NLB's listeners use now.
func (l *loadBalancers) attachedTargetGroups(ctx context.Context, cl *clients, lbARN string) ([]elbtypes.TargetGroup, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetGroups", func(ctx context.Context) (*elbv2.DescribeTargetGroupsOutput, error) {
		return cl.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(lbARN)})
	})
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return out.TargetGroups, nil
}

// listenersOf maps the NLB's listeners by port.
func (l *loadBalancers) listenersOf(ctx context.Context, cl *clients, lbARN string) (map[int32]elbtypes.Listener, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeListeners", func(ctx context.Context) (*elbv2.DescribeListenersOutput, error) {
		return cl.elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lbARN)})
	})
	if err != nil {
		return nil, err
	}
	m := map[int32]elbtypes.Listener{}
	for _, ls := range out.Listeners {
		m[aws.ToInt32(ls.Port)] = ls
	}
	return m, nil
}

func (l *loadBalancers) targetGroupAttributes(ctx context.Context, cl *clients, arn string) (map[string]string, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetGroupAttributes", func(ctx context.Context) (*elbv2.DescribeTargetGroupAttributesOutput, error) {
		return cl.elb.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: aws.String(arn)})
	})
	if err != nil {
		return nil, err
	}
	return keyValues(out.Attributes, func(a elbtypes.TargetGroupAttribute) (*string, *string) { return a.Key, a.Value }), nil
}

// keyValues maps an SDK list of key/value pairs (attributes of one kind
// or another) by key.
func keyValues[T any](items []T, kv func(T) (*string, *string)) map[string]string {
	m := make(map[string]string, len(items))
	for _, it := range items {
		k, v := kv(it)
		m[aws.ToString(k)] = aws.ToString(v)
	}
	return m
}

// targetsOf are the targets registered in a target group, leaving out
// those already draining (on their way out).
func (l *loadBalancers) targetsOf(ctx context.Context, cl *clients, arn string) (map[target]bool, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetHealth", func(ctx context.Context) (*elbv2.DescribeTargetHealthOutput, error) {
		return cl.elb.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(arn)})
	})
	if err != nil {
		return nil, err
	}
	have := map[target]bool{}
	for _, d := range out.TargetHealthDescriptions {
		if d.Target == nil {
			continue
		}
		if d.TargetHealth != nil && d.TargetHealth.State == elbtypes.TargetHealthStateEnumDraining {
			continue
		}
		have[target{aws.ToString(d.Target.Id), aws.ToInt32(d.Target.Port)}] = true
	}
	return have, nil
}
