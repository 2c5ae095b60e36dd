package aws

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

func lbStatus(lb *elbtypes.LoadBalancer) *v1.LoadBalancerStatus {
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: aws.ToString(lb.DNSName)}}}
}

// findLB looks the NLB up by name; (nil, nil) when AWS says there is none.
func (l *loadBalancers) findLB(ctx context.Context, cl *clients, name string) (*elbtypes.LoadBalancer, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeLoadBalancers", func(ctx context.Context) (*elbv2.DescribeLoadBalancersOutput, error) {
		return cl.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{name}})
	})
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(out.LoadBalancers) == 0 {
		return nil, nil
	}
	return &out.LoadBalancers[0], nil
}

func scheme(spec *nlbSpec) elbtypes.LoadBalancerSchemeEnum {
	if spec.internal {
		return elbtypes.LoadBalancerSchemeEnumInternal
	}
	return elbtypes.LoadBalancerSchemeEnumInternetFacing
}

func ipAddressType(spec *nlbSpec) elbtypes.IpAddressType {
	if spec.dualstack {
		return elbtypes.IpAddressTypeDualstack
	}
	return elbtypes.IpAddressTypeIpv4
}

// createLB creates the NLB. CreateLoadBalancer is idempotent by name in
// ELBv2; if a retry meets the NLB a lost answer made, it is found again.
func (l *loadBalancers) createLB(ctx context.Context, cl *clients, j *loadbalancers.Judgement, spec *nlbSpec, subnets []subnet, sgs []string) (*elbtypes.LoadBalancer, error) {
	in := &elbv2.CreateLoadBalancerInput{
		Name:           aws.String(spec.name),
		Type:           elbtypes.LoadBalancerTypeEnumNetwork,
		Scheme:         scheme(spec),
		IpAddressType:  ipAddressType(spec),
		SecurityGroups: sgs,
		Tags:           elbTags(spec.tags),
	}
	fixed := false
	for _, s := range subnets {
		if s.eip != "" || s.ipv4 != "" {
			fixed = true
		}
	}
	for _, s := range subnets {
		if fixed {
			m := elbtypes.SubnetMapping{SubnetId: aws.String(s.id)}
			if s.eip != "" {
				m.AllocationId = aws.String(s.eip)
			}
			if s.ipv4 != "" {
				m.PrivateIPv4Address = aws.String(s.ipv4)
			}
			in.SubnetMappings = append(in.SubnetMappings, m)
		} else {
			in.Subnets = append(in.Subnets, s.id)
		}
	}
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.CreateLoadBalancer", func(ctx context.Context) (*elbv2.CreateLoadBalancerOutput, error) {
		return cl.elb.CreateLoadBalancer(ctx, in)
	}, cloudapi.Creates())
	if cloudapi.KindOf(err) == cloudapi.KindExists {
		lb, ferr := l.findLB(ctx, cl, spec.name)
		if ferr == nil && lb != nil {
			// Made already (a lost answer, or meanwhile): held to the
			// ownership rule like one observed.
			_, r, err := l.taggedResource(ctx, cl, kindLB, aws.ToString(lb.LoadBalancerArn), spec.name)
			if err != nil {
				return lb, err
			}
			_, err = j.Found(ctx, r)
			return lb, err
		}
	}
	if err != nil {
		return nil, err
	}
	if len(out.LoadBalancers) == 0 {
		return nil, errors.New("AWS returned no load balancer")
	}
	klog.InfoS("Created load balancer", "service", spec.service, "loadBalancer", aws.ToString(out.LoadBalancers[0].LoadBalancerArn))
	return &out.LoadBalancers[0], nil
}

// addTags adds tags to an ELBv2 resource; none is a no-op.
func (l *loadBalancers) addTags(ctx context.Context, cl *clients, arn string, tags map[string]string) error {
	if len(tags) == 0 {
		return nil
	}
	_, err := cloudapi.Call(ctx, l.c.api, "elbv2.AddTags", func(ctx context.Context) (*elbv2.AddTagsOutput, error) {
		return cl.elb.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{arn}, Tags: elbTags(tags)})
	})
	return err
}

// ensureLBAttributes reads a new NLB's attributes and sets those not as
// the Service asks.
func (l *loadBalancers) ensureLBAttributes(ctx context.Context, cl *clients, arn string, spec *nlbSpec) error {
	have, err := l.lbAttributes(ctx, cl, arn)
	if err != nil {
		return err
	}
	change, _ := attrChanges(spec.lbAttrs, have, nil)
	return l.setAttributes(ctx, cl, arn, change)
}

// setAttributes sets the attributes in one call; none is a no-op.
func (l *loadBalancers) setAttributes(ctx context.Context, cl *clients, arn string, attrs map[string]string) error {
	if len(attrs) == 0 {
		return nil
	}
	var list []elbtypes.LoadBalancerAttribute
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		list = append(list, elbtypes.LoadBalancerAttribute{Key: aws.String(k), Value: aws.String(attrs[k])})
	}
	_, err := cloudapi.Call(ctx, l.c.api, "elbv2.ModifyLoadBalancerAttributes", func(ctx context.Context) (*elbv2.ModifyLoadBalancerAttributesOutput, error) {
		return cl.elb.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{LoadBalancerArn: aws.String(arn), Attributes: list})
	})
	return err
}
