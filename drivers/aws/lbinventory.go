package aws

import (
	"iter"

	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// tagBatch is how many load balancers one DescribeTags call takes (both
// APIs allow 20).
const tagBatch = 20

// LoadBalancerInventory lists the Network and Classic Load Balancers
// tagged as this cluster's own (kubernetes.io/cluster/<name>=owned, or the
// legacy KubernetesCluster tag), as polyccm and the AWS CCM tag them, for
// `polyccm plan`.
func (c *Cloud) LoadBalancerInventory(ctx context.Context) ([]loadbalancers.Resource, error) {
	cl, err := c.clusterClient(ctx)
	if err != nil {
		return nil, err
	}
	var out []loadbalancers.Resource
	var arns []string
	names := map[string]string{}
	addrs := map[string]string{}
	var marker *string
	for {
		page, err := cloudapi.Call(ctx, c.api, "elbv2.DescribeLoadBalancers", func(ctx context.Context) (*elbv2.DescribeLoadBalancersOutput, error) {
			return cl.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Marker: marker})
		})
		if err != nil {
			return nil, err
		}
		for _, lb := range page.LoadBalancers {
			arn := aws.ToString(lb.LoadBalancerArn)
			arns = append(arns, arn)
			names[arn], addrs[arn] = aws.ToString(lb.LoadBalancerName), aws.ToString(lb.DNSName)
		}
		if marker = page.NextMarker; marker == nil {
			break
		}
	}
	for chunk := range chunks(arns, tagBatch) {
		tags, err := cloudapi.Call(ctx, c.api, "elbv2.DescribeTags", func(ctx context.Context) (*elbv2.DescribeTagsOutput, error) {
			return cl.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: chunk})
		})
		if err != nil {
			return nil, err
		}
		for _, td := range tags.TagDescriptions {
			arn := aws.ToString(td.ResourceArn)
			m := keyValues(td.Tags, func(t elbtypes.Tag) (*string, *string) { return t.Key, t.Value })
			if r := c.lbs.resource("load balancer", arn, names[arn], m); r.OurCluster {
				r.Addresses = []string{addrs[arn]}
				out = append(out, r)
			}
		}
	}

	var classic []string
	caddrs := map[string]string{}
	marker = nil
	for {
		page, err := cloudapi.Call(ctx, c.api, "elb.DescribeLoadBalancers", func(ctx context.Context) (*elb.DescribeLoadBalancersOutput, error) {
			return cl.clb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{Marker: marker})
		})
		if err != nil {
			return nil, err
		}
		for _, lb := range page.LoadBalancerDescriptions {
			name := aws.ToString(lb.LoadBalancerName)
			classic = append(classic, name)
			caddrs[name] = aws.ToString(lb.DNSName)
		}
		if marker = page.NextMarker; marker == nil {
			break
		}
	}
	for chunk := range chunks(classic, tagBatch) {
		tags, err := cloudapi.Call(ctx, c.api, "elb.DescribeTags", func(ctx context.Context) (*elb.DescribeTagsOutput, error) {
			return cl.clb.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: chunk})
		})
		if err != nil {
			return nil, err
		}
		for _, td := range tags.TagDescriptions {
			name := aws.ToString(td.LoadBalancerName)
			m := map[string]string{}
			for _, t := range td.Tags {
				m[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			if r := c.lbs.classicResource("Classic Load Balancer", name, name, name, m); r.OurCluster {
				r.Addresses = []string{caddrs[name]}
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// chunks yields s in slices of at most n.
func chunks(s []string, n int) iter.Seq[[]string] {
	return func(yield func([]string) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}
