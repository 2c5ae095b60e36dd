package aws

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// legacySGPrefix + the NLB name is what polyccm named the NLB's security
// group before it took the AWS CCM's name: the AWS CCM's name for a
// Classic ELB's group, so such a group is used only where it is on the
// Service's NLB already (observe) or tagged with the Service (delete).
const legacySGPrefix = "k8s-elb-"

// sgDescription is the AWS CCM's description of an NLB's security group.
const sgDescription = "[k8s] Managed SecurityGroup for LoadBalancer"

// sgName is the AWS CCM's name for an NLB's security group
// (GetSecurityGroupNameForNLB in pkg/providers/v1/aws.go): a SHA-256 over
// the cluster name and the Service's name, namespace and UID.
func sgName(cluster string, svc *v1.Service) string {
	h := sha256.New()
	for _, s := range []string{cluster, svc.Name, svc.Namespace, string(svc.UID)} {
		h.Write([]byte(s))
	}
	return awsName(svc, hex.EncodeToString(h.Sum(nil)))
}

func legacySGName(svc *v1.Service) string { return legacySGPrefix + lbName(svc) }

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
	// ICMP "fragmentation needed" (type 3, code 4) from the sources, for
	// path MTU discovery, as the AWS CCM's createSecurityGroupRules adds
	// it (IPv4 sources only, as there).
	for _, c := range spec.sources {
		if !strings.Contains(c, ":") {
			out[ingressRule{proto: "icmp", from: 3, to: 4, cidr: c}] = true
		}
	}
	return out
}

// ingressOf is the address rules a security group has.
func ingressOf(sg *ec2types.SecurityGroup) map[ingressRule]bool {
	have := map[ingressRule]bool{}
	for _, p := range sg.IpPermissions {
		for _, r := range expandPermission(p) {
			have[r] = true
		}
	}
	return have
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
