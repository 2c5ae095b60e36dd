package aws

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbctypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// classicObserved is what AWS has of a Service's Classic Load Balancer
// and its security group, read before anything is changed.
type classicObserved struct {
	lb       *elbctypes.LoadBalancerDescription // nil: none yet
	tags     map[string]string
	attrs    *elbctypes.LoadBalancerAttributes
	policies map[string]bool // the load balancer's policies, by name
	// sg is the managed group (nil: none yet, or the Service brings its
	// own groups).
	sg        *ec2types.SecurityGroup
	sgRes     loadbalancers.Resource // sg as claimed
	sgAdopted bool
	// nodes are the node groups, unless polyccm leaves them to the
	// operator (disableSecurityGroupIngress).
	nodes *classicNodeGroups
}

// classicNodeGroups are the node groups a Classic Load Balancer's group is
// let into: want, the groups of its instances; have, the groups with a
// rule from it now; tagged, which of those carry the cluster tag.
type classicNodeGroups struct {
	want, have, tagged map[string]bool
	found              *nodeGroups // as observeNodeGroups found them
	// shared are the other Services whose load balancer uses the same
	// group: while there are any, no node group loses its rule.
	shared []string
	// released is the group the load balancer had first and the Service
	// no longer names, whose node rule goes (namedgroups.go).
	released string
}

// findClassic looks the load balancer up by name; (nil, nil) when AWS
// says there is none.
func (l *loadBalancers) findClassic(ctx context.Context, cl *clients, name string) (*elbctypes.LoadBalancerDescription, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elb.DescribeLoadBalancers", func(ctx context.Context) (*elb.DescribeLoadBalancersOutput, error) {
		return cl.clb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{name}})
	})
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil || len(out.LoadBalancerDescriptions) == 0 {
		return nil, err
	}
	return &out.LoadBalancerDescriptions[0], nil
}

func (l *loadBalancers) classicTags(ctx context.Context, cl *clients, name string) (map[string]string, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elb.DescribeTags", func(ctx context.Context) (*elb.DescribeTagsOutput, error) {
		return cl.clb.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: []string{name}})
	})
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, td := range out.TagDescriptions {
		for _, t := range td.Tags {
			m[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	return m, nil
}

// classicResource is what the ownership rule knows of a Classic Load
// Balancer or its group; the UID mark is read from the load balancer's
// name, which the group's name contains.
func (l *loadBalancers) classicResource(kind, id, name, lb string, tags map[string]string) loadbalancers.Resource {
	r := l.resource(kind, id, name, tags)
	r.UIDMark = loadbalancers.UIDMark(lb)
	return r
}

// observeClassic reads the load balancer, its tags, attributes and
// policies, and its managed group; it changes nothing. Each is claimed, in
// the order it was read, so that core holds it to the ownership rule
// before any change; the claims read before an error are returned with
// it.
func (l *loadBalancers) observeClassic(ctx context.Context, cl *clients, vpc string, spec *classicSpec) (*classicObserved, []loadbalancers.Claim, error) {
	obs := &classicObserved{policies: map[string]bool{}}
	var claims []loadbalancers.Claim
	lb, err := l.findClassic(ctx, cl, spec.name)
	if err != nil {
		return nil, nil, err
	}
	if lb == nil && !cloudapi.MayCreate(ctx) {
		return nil, nil, cloudapi.ErrCreateSkipped
	}
	if lb != nil {
		if obs.tags, err = l.classicTags(ctx, cl, spec.name); err != nil {
			return nil, nil, err
		}
		claims = append(claims, loadbalancers.ResourceClaim(l.classicResource(kindLB, spec.name, spec.name, spec.name, obs.tags)))
		obs.lb = lb
		if obs.attrs, err = l.classicAttributes(ctx, cl, spec.name); err != nil {
			return nil, claims, err
		}
		if obs.policies, err = l.classicPolicies(ctx, cl, spec.name); err != nil {
			return nil, claims, err
		}
	}
	if len(spec.ownSGs) == 0 {
		name := classicSGName(spec.name)
		sg, err := l.findSecurityGroup(ctx, cl, vpc, name)
		if err != nil {
			return nil, claims, err
		}
		if sg != nil {
			obs.sg, obs.sgRes = sg, l.classicResource(kindSG, aws.ToString(sg.GroupId), name, spec.name, ec2TagMap(sg.Tags))
			claims = append(claims, loadbalancers.ResourceClaim(obs.sgRes))
		}
	}
	return obs, claims, nil
}

func (l *loadBalancers) classicAttributes(ctx context.Context, cl *clients, name string) (*elbctypes.LoadBalancerAttributes, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elb.DescribeLoadBalancerAttributes", func(ctx context.Context) (*elb.DescribeLoadBalancerAttributesOutput, error) {
		return cl.clb.DescribeLoadBalancerAttributes(ctx, &elb.DescribeLoadBalancerAttributesInput{LoadBalancerName: aws.String(name)})
	})
	if err != nil {
		return nil, err
	}
	if out.LoadBalancerAttributes == nil {
		return &elbctypes.LoadBalancerAttributes{}, nil
	}
	return out.LoadBalancerAttributes, nil
}

func (l *loadBalancers) classicPolicies(ctx context.Context, cl *clients, name string) (map[string]bool, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elb.DescribeLoadBalancerPolicies", func(ctx context.Context) (*elb.DescribeLoadBalancerPoliciesOutput, error) {
		return cl.clb.DescribeLoadBalancerPolicies(ctx, &elb.DescribeLoadBalancerPoliciesInput{LoadBalancerName: aws.String(name)})
	})
	if err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, p := range out.PolicyDescriptions {
		m[aws.ToString(p.PolicyName)] = true
	}
	return m, nil
}

// observeClassicNodeGroups finds the groups of the target instances (by
// the NLB's rule, nodeGroupFor) and the groups that let lbSG in now. An
// lbSG not made yet has no rules anywhere.
func (l *loadBalancers) observeClassicNodeGroups(ctx context.Context, cl *clients, vpc, lbSG string, targets []string) (*classicNodeGroups, error) {
	ng, err := l.observeNodeGroups(ctx, cl, vpc, targets)
	if err != nil {
		return nil, err
	}
	out := &classicNodeGroups{want: ng.want, have: map[string]bool{}, tagged: map[string]bool{}, found: ng}
	if lbSG == "" {
		return out, nil
	}
	sgs, err := l.groupsLetting(ctx, cl, vpc, lbSG)
	if err != nil {
		return nil, err
	}
	for _, sg := range sgs {
		id := aws.ToString(sg.GroupId)
		if slices.ContainsFunc(sg.IpPermissions, func(p ec2types.IpPermission) bool { return isGroupRule(p, lbSG) }) {
			out.have[id] = true
			out.tagged[id] = l.c.ec2Tagged(sg.Tags)
		}
	}
	return out, nil
}

// groupsLetting are the VPC's groups with a rule naming group id.
func (l *loadBalancers) groupsLetting(ctx context.Context, cl *clients, vpc, id string) ([]ec2types.SecurityGroup, error) {
	return l.describeGroups(ctx, cl, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{vpc}},
		{Name: aws.String("ip-permission.group-id"), Values: []string{id}},
	}})
}

// isGroupRule reports whether p is the rule the AWS CCM gives a Classic
// Load Balancer in its nodes' group: every protocol from its group.
func isGroupRule(p ec2types.IpPermission, lbSG string) bool {
	return aws.ToString(p.IpProtocol) == "-1" && slices.ContainsFunc(p.UserIdGroupPairs, func(g ec2types.UserIdGroupPair) bool {
		return aws.ToString(g.GroupId) == lbSG
	})
}

// groupRule is that rule, to grant or revoke.
func groupRule(lbSG string) []ec2types.IpPermission {
	return []ec2types.IpPermission{{IpProtocol: aws.String("-1"), UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(lbSG)}}}}
}
