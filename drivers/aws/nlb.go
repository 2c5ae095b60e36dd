package aws

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
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
func (l *loadBalancers) createLB(ctx context.Context, cl *clients, svc *v1.Service, spec *nlbSpec, subnets []subnet, sg string) (*elbtypes.LoadBalancer, error) {
	in := &elbv2.CreateLoadBalancerInput{
		Name:           aws.String(spec.name),
		Type:           elbtypes.LoadBalancerTypeEnumNetwork,
		Scheme:         scheme(spec),
		IpAddressType:  ipAddressType(spec),
		SecurityGroups: []string{sg},
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
			_, err := l.checkOwned(ctx, cl, svc, "load balancer", aws.ToString(lb.LoadBalancerArn), spec.name)
			return lb, err
		}
	}
	if err != nil {
		return nil, fmt.Errorf("creating load balancer %s: %w", spec.name, err)
	}
	if len(out.LoadBalancers) == 0 {
		return nil, fmt.Errorf("creating load balancer %s: AWS returned no load balancer", spec.name)
	}
	klog.InfoS("Created load balancer", "service", spec.service, "loadBalancer", aws.ToString(out.LoadBalancers[0].LoadBalancerArn))
	return &out.LoadBalancers[0], nil
}

// convergeLB fixes what can change on an existing NLB.
func (l *loadBalancers) convergeLB(ctx context.Context, cl *clients, lb *elbtypes.LoadBalancer, spec *nlbSpec, subnets []subnet, sg string) error {
	arn := aws.ToString(lb.LoadBalancerArn)
	if lb.Scheme != scheme(spec) {
		return fmt.Errorf("load balancer %s is %s and cannot become %s in place; put %s back, or delete and recreate the Service", spec.name, lb.Scheme, scheme(spec), AnnInternal)
	}
	if lb.IpAddressType != ipAddressType(spec) {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.SetIpAddressType", func(ctx context.Context) (*elbv2.SetIpAddressTypeOutput, error) {
			return cl.elb.SetIpAddressType(ctx, &elbv2.SetIpAddressTypeInput{LoadBalancerArn: aws.String(arn), IpAddressType: ipAddressType(spec)})
		}); err != nil {
			return err
		}
	}
	var have, want []string
	for _, az := range lb.AvailabilityZones {
		have = append(have, aws.ToString(az.SubnetId))
	}
	for _, s := range subnets {
		want = append(want, s.id)
	}
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.SetSubnets", func(ctx context.Context) (*elbv2.SetSubnetsOutput, error) {
			return cl.elb.SetSubnets(ctx, &elbv2.SetSubnetsInput{LoadBalancerArn: aws.String(arn), Subnets: want})
		}); err != nil {
			return err
		}
	}
	if sg != "" && !slices.Contains(lb.SecurityGroups, sg) {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.SetSecurityGroups", func(ctx context.Context) (*elbv2.SetSecurityGroupsOutput, error) {
			return cl.elb.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: aws.String(arn), SecurityGroups: []string{sg}})
		}); err != nil {
			return err
		}
	}
	return l.ensureTags(ctx, cl, arn, spec.tags)
}

func (l *loadBalancers) ensureTags(ctx context.Context, cl *clients, arn string, want map[string]string) error {
	have, err := l.tags(ctx, cl, arn)
	if err != nil {
		return err
	}
	missing := map[string]string{}
	for k, v := range want {
		if have[k] != v {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = cloudapi.Call(ctx, l.c.api, "elbv2.AddTags", func(ctx context.Context) (*elbv2.AddTagsOutput, error) {
		return cl.elb.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{arn}, Tags: elbTags(missing)})
	})
	return err
}

func (l *loadBalancers) ensureLBAttributes(ctx context.Context, cl *clients, arn string, spec *nlbSpec) error {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeLoadBalancerAttributes", func(ctx context.Context) (*elbv2.DescribeLoadBalancerAttributesOutput, error) {
		return cl.elb.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: aws.String(arn)})
	})
	if err != nil {
		return err
	}
	const crossZone = "load_balancing.cross_zone.enabled"
	want := strconv.FormatBool(spec.crossZone)
	for _, at := range out.Attributes {
		if aws.ToString(at.Key) == crossZone && aws.ToString(at.Value) == want {
			return nil
		}
	}
	_, err = cloudapi.Call(ctx, l.c.api, "elbv2.ModifyLoadBalancerAttributes", func(ctx context.Context) (*elbv2.ModifyLoadBalancerAttributesOutput, error) {
		return cl.elb.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{
			LoadBalancerArn: aws.String(arn),
			Attributes:      []elbtypes.LoadBalancerAttribute{{Key: aws.String(crossZone), Value: aws.String(want)}},
		})
	})
	return err
}
