package aws

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// sgPrefix starts the name of the NLB's security group.
const sgPrefix = "k8s-elb-"

func sgName(spec *nlbSpec) string { return sgPrefix + spec.name }

// ensureSecurityGroup makes the NLB's security group and gives it exactly
// the ingress the listeners and source ranges need.
func (l *loadBalancers) ensureSecurityGroup(ctx context.Context, cl *clients, svc *v1.Service, vpc string, spec *nlbSpec) (string, error) {
	sg, err := l.findSecurityGroup(ctx, cl, vpc, sgName(spec))
	if err != nil {
		return "", err
	}
	if sg == nil {
		_, err := cloudapi.Call(ctx, l.c.api, "ec2.CreateSecurityGroup", func(ctx context.Context) (*ec2.CreateSecurityGroupOutput, error) {
			return cl.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
				GroupName:   aws.String(sgName(spec)),
				Description: aws.String("polyccm: NLB of Service " + spec.service),
				VpcId:       aws.String(vpc),
				TagSpecifications: []ec2types.TagSpecification{{
					ResourceType: ec2types.ResourceTypeSecurityGroup, Tags: ec2Tags(spec.tags),
				}},
			})
		}, cloudapi.NotIdempotent(), cloudapi.Creates())
		if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
			return "", fmt.Errorf("creating security group %s: %w", sgName(spec), err)
		}
		if sg, err = l.findSecurityGroup(ctx, cl, vpc, sgName(spec)); err != nil {
			return "", err
		}
		if sg == nil {
			// EC2 is eventually consistent: a group just created may not
			// be listed for a moment. Not a failure; look again soon.
			return "", loadbalancers.Pending(consistencyRetry, "security group %s was created and is not listed by EC2 yet; looking again in %s", sgName(spec), consistencyRetry)
		}
	}
	id := aws.ToString(sg.GroupId)
	v, err := l.own.Check(ctx, svc, l.resource("security group", id, sgName(spec), ec2TagMap(sg.Tags)))
	if err != nil {
		return "", err
	}
	if v == loadbalancers.Adopted {
		if _, err := cloudapi.Call(ctx, l.c.api, "ec2.CreateTags", func(ctx context.Context) (*ec2.CreateTagsOutput, error) {
			return cl.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2Tags(spec.tags)})
		}); err != nil {
			return "", err
		}
	}
	want := wantedIngress(spec)
	have := map[ingressRule]bool{}
	for _, p := range sg.IpPermissions {
		for _, r := range expandPermission(p) {
			have[r] = true
		}
	}
	add, remove := loadbalancers.Delta(want, have, compareIngress)
	if len(add) > 0 {
		_, err := cloudapi.Call(ctx, l.c.api, "ec2.AuthorizeSecurityGroupIngress", func(ctx context.Context) (*ec2.AuthorizeSecurityGroupIngressOutput, error) {
			return cl.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: permissions(add)})
		})
		switch {
		case err == nil || cloudapi.KindOf(err) == cloudapi.KindExists:
		case cloudapi.IsNotFound(err):
			// Listed but not yet known to every EC2 endpoint.
			return "", loadbalancers.Pending(consistencyRetry, "security group %s is not yet known to EC2 everywhere; looking again in %s", id, consistencyRetry)
		default:
			return "", err
		}
	}
	if len(remove) > 0 {
		_, err := cloudapi.Call(ctx, l.c.api, "ec2.RevokeSecurityGroupIngress", func(ctx context.Context) (*ec2.RevokeSecurityGroupIngressOutput, error) {
			return cl.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: permissions(remove)})
		})
		if err != nil && !cloudapi.IsNotFound(err) {
			return "", err
		}
	}
	return id, nil
}

func (l *loadBalancers) findSecurityGroup(ctx context.Context, cl *clients, vpc, name string) (*ec2types.SecurityGroup, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "ec2.DescribeSecurityGroups", func(ctx context.Context) (*ec2.DescribeSecurityGroupsOutput, error) {
		return cl.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
			{Name: aws.String("group-name"), Values: []string{name}},
			{Name: aws.String("vpc-id"), Values: []string{vpc}},
		}})
	})
	if err != nil {
		return nil, err
	}
	if len(out.SecurityGroups) == 0 {
		return nil, nil
	}
	return &out.SecurityGroups[0], nil
}

// ingressRule is one (protocol, port range, source) the security group
// admits; polyccm's own rules have one port (from == to).
type ingressRule struct {
	proto    string
	from, to int32
	cidr     string
}

func wantedIngress(spec *nlbSpec) map[ingressRule]bool {
	out := map[ingressRule]bool{}
	for _, ls := range spec.listeners {
		var protos []string
		switch ls.protocol {
		case elbtypes.ProtocolEnumUdp:
			protos = []string{"udp"}
		case elbtypes.ProtocolEnumTcpUdp:
			protos = []string{"tcp", "udp"}
		default:
			protos = []string{"tcp"}
		}
		for _, p := range protos {
			for _, c := range spec.sources {
				out[ingressRule{proto: p, from: ls.port, to: ls.port, cidr: c}] = true
			}
		}
	}
	return out
}

// expandPermission lists a permission's address rules exactly as they
// are, port ranges included, so that any polyccm did not ask for can be
// revoked as it is.
func expandPermission(p ec2types.IpPermission) []ingressRule {
	base := ingressRule{proto: aws.ToString(p.IpProtocol), from: aws.ToInt32(p.FromPort), to: aws.ToInt32(p.ToPort)}
	if p.FromPort == nil || p.ToPort == nil { // all protocols
		base.from, base.to = -1, -1
	}
	var out []ingressRule
	for _, r := range p.IpRanges {
		x := base
		x.cidr = aws.ToString(r.CidrIp)
		out = append(out, x)
	}
	for _, r := range p.Ipv6Ranges {
		x := base
		x.cidr = aws.ToString(r.CidrIpv6)
		out = append(out, x)
	}
	return out
}

// compareIngress orders rules by protocol, ports and source.
func compareIngress(a, b ingressRule) int {
	return cmp.Or(strings.Compare(a.proto, b.proto), cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to), strings.Compare(a.cidr, b.cidr))
}

func permissions(rules []ingressRule) []ec2types.IpPermission {
	slices.SortFunc(rules, compareIngress)
	var out []ec2types.IpPermission
	for _, r := range rules {
		p := ec2types.IpPermission{IpProtocol: aws.String(r.proto), FromPort: aws.Int32(r.from), ToPort: aws.Int32(r.to)}
		if strings.Contains(r.cidr, ":") {
			p.Ipv6Ranges = []ec2types.Ipv6Range{{CidrIpv6: aws.String(r.cidr)}}
		} else {
			p.IpRanges = []ec2types.IpRange{{CidrIp: aws.String(r.cidr)}}
		}
		out = append(out, p)
	}
	return out
}
