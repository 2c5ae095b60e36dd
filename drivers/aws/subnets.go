package aws

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
)

// subnet is one subnet the NLB uses, with its optional fixed address.
type subnet struct {
	id, zone  string
	cidr      string // where the NLB's health checks come from
	eip, ipv4 string
}

// subnets resolves the annotation's subnets (IDs or Name tags) or
// discovers subnets tagged for load balancers, one per zone. Problems with
// the Service's settings go into a.
func (l *loadBalancers) subnets(ctx context.Context, cl *clients, vpc string, spec *nlbSpec, a *annotations.Values) ([]subnet, error) {
	var found []ec2types.Subnet
	if len(spec.subnetsAnn) > 0 {
		all, err := l.describeSubnets(ctx, cl, []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}})
		if err != nil {
			return nil, err
		}
		for _, want := range spec.subnetsAnn {
			var match *ec2types.Subnet
			for i := range all {
				if aws.ToString(all[i].SubnetId) == want || nameTag(all[i].Tags) == want {
					match = &all[i]
				}
			}
			if match == nil {
				a.Fail(AnnSubnets, "no subnet %s in %s (give subnet IDs or Name tags of subnets in the cluster's VPC)", annotations.Quote(want), vpc)
				continue
			}
			found = append(found, *match)
		}
	} else {
		role := TagRoleELB
		if spec.internal {
			role = TagRoleInternalELB
		}
		all, err := l.describeSubnets(ctx, cl, []ec2types.Filter{
			{Name: aws.String("vpc-id"), Values: []string{vpc}},
			{Name: aws.String("tag-key"), Values: []string{role}},
		})
		if err != nil {
			return nil, err
		}
		byZone := map[string]ec2types.Subnet{}
		for _, s := range all {
			if !l.c.ec2Tagged(s.Tags) {
				continue
			}
			z := aws.ToString(s.AvailabilityZone)
			if cur, ok := byZone[z]; !ok || aws.ToString(s.SubnetId) < aws.ToString(cur.SubnetId) {
				byZone[z] = s
			}
		}
		for _, z := range slices.Sorted(maps.Keys(byZone)) {
			found = append(found, byZone[z])
		}
		if len(found) == 0 {
			a.Fail(AnnSubnets, "no subnet in %s is tagged %s and %s; tag one per zone, or name subnets in this annotation", vpc, role, l.c.clusterTag())
		}
	}
	if len(spec.subnetsAnn) == 0 && len(found) > 0 {
		if len(spec.eips) > 0 && len(spec.eips) != len(found) {
			a.Fail(AnnEIPAllocations, "gives %d allocations for the %d discovered subnets; give one per subnet (and name the subnets)", len(spec.eips), len(found))
		}
		if len(spec.privateIPs) > 0 && len(spec.privateIPs) != len(found) {
			a.Fail(AnnPrivateIPv4Addresses, "gives %d addresses for the %d discovered subnets; give one per subnet (and name the subnets)", len(spec.privateIPs), len(found))
		}
	}
	out := make([]subnet, len(found))
	for i, s := range found {
		out[i] = subnet{id: aws.ToString(s.SubnetId), zone: aws.ToString(s.AvailabilityZone), cidr: aws.ToString(s.CidrBlock)}
		if i < len(spec.eips) {
			out[i].eip = spec.eips[i]
		}
		if i < len(spec.privateIPs) {
			out[i].ipv4 = spec.privateIPs[i]
		}
	}
	return out, nil
}

func nameTag(tags []ec2types.Tag) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == "Name" {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

func (l *loadBalancers) describeSubnets(ctx context.Context, cl *clients, filters []ec2types.Filter) ([]ec2types.Subnet, error) {
	var all []ec2types.Subnet
	in := &ec2.DescribeSubnetsInput{Filters: filters}
	for {
		out, err := cloudapi.Call(ctx, l.c.api, "ec2.DescribeSubnets", func(ctx context.Context) (*ec2.DescribeSubnetsOutput, error) {
			return cl.ec2.DescribeSubnets(ctx, in)
		})
		if err != nil {
			return nil, err
		}
		all = append(all, out.Subnets...)
		if aws.ToString(out.NextToken) == "" {
			return all, nil
		}
		in.NextToken = out.NextToken
	}
}

// vpcID is the cluster's VPC: from the config, else the VPC of the
// instance polyccm runs on, from the instance metadata service.
func (c *Cloud) vpcID(ctx context.Context, cl *clients) (string, error) {
	if c.cfg.VPCID != "" {
		return c.cfg.VPCID, nil
	}
	c.mu.Lock()
	cached := c.vpc
	c.mu.Unlock()
	if cached != "" {
		return cached, nil
	}
	// The body is read inside the call: its context ends when the call does.
	get := func(path string) (string, error) {
		return cloudapi.Call(ctx, c.api, "imds.GetMetadata", func(ctx context.Context) (string, error) {
			out, err := c.metadata.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
			if err != nil {
				return "", err
			}
			defer out.Content.Close()
			b, err := io.ReadAll(out.Content)
			return strings.TrimSpace(string(b)), err
		})
	}
	mac, err := get("mac")
	if err != nil {
		return "", fmt.Errorf("aws: drivers.aws.vpcID is not set and the instance metadata service did not say: %w", err)
	}
	vpc, err := get("network/interfaces/macs/" + mac + "/vpc-id")
	if err != nil {
		return "", fmt.Errorf("aws: drivers.aws.vpcID is not set and the instance metadata service did not say: %w", err)
	}
	c.mu.Lock()
	c.vpc = vpc
	c.mu.Unlock()
	return vpc, nil
}
