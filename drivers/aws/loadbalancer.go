package aws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// deletePollInterval is how soon a Service whose cloud resources are
// still being released is looked at again.
const deletePollInterval = 10 * time.Second

// loadBalancers implements cloudprovider.LoadBalancer with one Network
// Load Balancer per Service: a security group for its source ranges, one
// target group per port with the nodes' instances on the node port, and a
// listener per port.
type loadBalancers struct {
	c   *Cloud
	own *loadbalancers.Ownership
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

// LoadBalancer returns the NLB implementation.
func (c *Cloud) LoadBalancer() cloudprovider.LoadBalancer { return c.lbs }

// elsewhere reports Services the AWS Load Balancer Controller handles.
func elsewhere(svc *v1.Service) bool {
	t := strings.ToLower(strings.TrimSpace(svc.Annotations[AnnType]))
	return t == "external" || t == "nlb-ip"
}

func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return lbName(svc)
}

// GetLoadBalancer reports the NLB; exists is false only when AWS says
// there is none.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	if elsewhere(svc) {
		return nil, false, nil
	}
	cl, err := l.c.client(ctx)
	if err != nil {
		return nil, false, err
	}
	lb, err := l.findLB(ctx, cl, lbName(svc))
	if err != nil {
		return nil, false, err
	}
	if lb != nil {
		return lbStatus(lb), true, nil
	}
	// The service controller calls EnsureLoadBalancerDeleted only when
	// this says exists: a half-deleted set must still count.
	left, err := l.leftovers(ctx, cl, svc)
	if err != nil || !left {
		return nil, false, err
	}
	return &v1.LoadBalancerStatus{}, true, nil
}

// leftovers reports whether the Service's security group or target groups
// remain without its NLB.
func (l *loadBalancers) leftovers(ctx context.Context, cl *clients, svc *v1.Service) (bool, error) {
	spec := &nlbSpec{name: lbName(svc), service: svc.Namespace + "/" + svc.Name}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return false, err
	}
	sg, err := l.findSecurityGroup(ctx, cl, vpc, sgName(spec))
	if err != nil || sg != nil {
		return sg != nil, err
	}
	tgs, err := l.serviceTargetGroups(ctx, cl, svc, spec)
	return len(tgs) > 0, err
}

// UpdateLoadBalancer follows node changes; it never creates an NLB (the
// node sync may run while the Service is being deleted).
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	if svc.DeletionTimestamp != nil {
		return nil
	}
	_, err := l.ensure(ctx, svc, nodes, true)
	return err
}

// EnsureLoadBalancer creates or converges the Service's NLB and everything
// around it. Invalid settings change nothing.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	return l.ensure(ctx, svc, nodes, false)
}

func (l *loadBalancers) ensure(ctx context.Context, svc *v1.Service, nodes []*v1.Node, update bool) (st *v1.LoadBalancerStatus, err error) {
	defer func() {
		if errors.Is(err, cloudapi.ErrCreateSkipped) {
			st, err = nil, nil // deleted meanwhile: nothing to update
		}
	}()
	if elsewhere(svc) {
		return nil, cloudprovider.ImplementedElsewhere
	}
	a := LBAnnotations.Parse(svc)
	spec := desiredNLB(svc, a, l.c.cluster)
	if err := l.invalid(svc, a); err != nil {
		return nil, err
	}
	// Fixed addresses are one NLB's at a time: another Service's are
	// refused here, naming it, before AWS would refuse them anyway.
	if err := l.own.CheckAddresses(ctx, svc, AnnEIPAllocations+" or "+AnnPrivateIPv4Addresses, slices.Concat(spec.eips, spec.privateIPs), fixedAddresses); err != nil {
		return nil, err
	}
	cl, err := l.c.client(ctx)
	if err != nil {
		return nil, err
	}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return nil, err
	}
	subnets, err := l.subnets(ctx, cl, vpc, spec, a)
	if err != nil {
		return nil, err
	}
	if err := l.invalid(svc, a); err != nil {
		return nil, err
	}
	targets, skipped := targetNodes(nodes, spec.nodeLabels)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without an AWS providerID are not targets yet", "service", klog.KObj(svc), "nodes", skipped)
	}

	lb, err := l.findLB(ctx, cl, spec.name)
	if err != nil {
		return nil, err
	}
	if update {
		if lb == nil {
			return nil, nil
		}
		ctx = cloudapi.WithoutCreates(ctx)
	}
	if lb != nil {
		if _, err := l.checkOwned(ctx, cl, svc, "load balancer", aws.ToString(lb.LoadBalancerArn), spec.name); err != nil {
			return nil, err
		}
	}
	sg := ""
	if lb != nil && len(lb.SecurityGroups) == 0 {
		// An NLB made without security groups (the AWS CCM's default) can
		// never get one: adopt it as it is, and say what that costs.
		if len(svc.Spec.LoadBalancerSourceRanges) > 0 && l.c.deps.Recorder != nil {
			l.c.deps.Recorder.Eventf(svc, v1.EventTypeWarning, "SourceRangesNotEnforced",
				"load balancer %s was created without security groups, so loadBalancerSourceRanges cannot be enforced on it; restrict the nodes' security groups, or delete and recreate the Service to get an NLB with a managed security group", spec.name)
		}
	} else if sg, err = l.ensureSecurityGroup(ctx, cl, svc, vpc, spec); err != nil {
		return nil, err
	}
	if lb == nil {
		if lb, err = l.createLB(ctx, cl, svc, spec, subnets, sg); err != nil {
			return nil, err
		}
	} else if err := l.convergeLB(ctx, cl, lb, spec, subnets, sg); err != nil {
		return nil, err
	}
	arn := aws.ToString(lb.LoadBalancerArn)
	if err := l.ensureLBAttributes(ctx, cl, arn, spec); err != nil {
		return nil, err
	}
	attached, err := l.attachedTargetGroups(ctx, cl, arn)
	if err != nil {
		return nil, err
	}
	tgs, err := l.ensureTargetGroups(ctx, cl, svc, vpc, spec, targets)
	if err != nil {
		return nil, err
	}
	if err := l.ensureListeners(ctx, cl, arn, spec, tgs); err != nil {
		return nil, err
	}
	// Target groups that listeners no longer use (a port went away or
	// changed protocol).
	for _, tg := range attached {
		if !slices.Contains(slices.Collect(maps.Values(tgs)), tg) {
			if err := l.deleteTargetGroup(ctx, cl, tg); err != nil {
				return nil, err
			}
		}
	}
	return lbStatus(lb), nil
}

// fixedAddresses are the Elastic IP allocations and private addresses a
// Service's NLB holds: those its annotations ask for, once it has an NLB.
func fixedAddresses(svc *v1.Service) []string {
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		return nil
	}
	var out []string
	for _, key := range []string{AnnEIPAllocations, AnnPrivateIPv4Addresses} {
		for _, v := range strings.Split(svc.Annotations[key], ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// invalid records and returns the problems found so far, if any.
func (l *loadBalancers) invalid(svc *v1.Service, a *annotations.Values) error {
	err := a.Err()
	var inv *annotations.InvalidError
	if errors.As(err, &inv) {
		inv.Record(l.c.deps.Recorder, svc)
	}
	return err
}

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

// checkOwned applies the ownership rule (core/loadbalancers) to an ELBv2
// resource named for the Service, from its tags: one this cluster did not
// make for this Service is refused, and one that carries no cluster tag is
// adopted only if the operator allowed it, then tagged as its own.
func (l *loadBalancers) checkOwned(ctx context.Context, cl *clients, svc *v1.Service, kind, arn, name string) (loadbalancers.Verdict, error) {
	tags, err := l.tags(ctx, cl, arn)
	if err != nil {
		return loadbalancers.Refused, err
	}
	return l.own.Check(ctx, svc, l.resource(kind, arn, name, tags))
}

// resource is what the ownership rule knows of an AWS resource: its name
// and its cluster and Service tags.
func (l *loadBalancers) resource(kind, id, name string, tags map[string]string) loadbalancers.Resource {
	r := loadbalancers.Resource{
		Kind: kind, ID: id, Name: name, Marks: true,
		Service: tags[TagServiceName],
		UIDMark: loadbalancers.UIDMark(strings.TrimPrefix(name, sgPrefix)),
	}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		c, ok := strings.CutPrefix(k, TagClusterPrefix)
		switch {
		case !ok:
		case c == l.c.cluster && tags[k] == TagOwned:
			r.OurCluster = true
		case c == l.c.cluster:
			r.Shared = true
		case r.OtherCluster == "":
			r.OtherCluster = c
		}
	}
	return r
}

// marksOf is what the resources of svc are tagged with, for messages.
func (c *Cloud) marksOf(svc *v1.Service) string {
	return fmt.Sprintf("tagged %s=%s and %s=%s", c.clusterTag(), TagOwned, TagServiceName, svc.Namespace+"/"+svc.Name)
}

func ec2TagMap(tags []ec2types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

func (l *loadBalancers) tags(ctx context.Context, cl *clients, arn string) (map[string]string, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTags", func(ctx context.Context) (*elbv2.DescribeTagsOutput, error) {
		return cl.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{arn}})
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

func elbTags(m map[string]string) []elbtypes.Tag {
	var out []elbtypes.Tag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, elbtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func ec2Tags(m map[string]string) []ec2types.Tag {
	var out []ec2types.Tag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// subnet is one subnet the NLB uses, with its optional fixed address.
type subnet struct {
	id, zone  string
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
		out[i] = subnet{id: aws.ToString(s.SubnetId), zone: aws.ToString(s.AvailabilityZone)}
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
			return "", fmt.Errorf("security group %s was created but is not listed yet", sgName(spec))
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
	var add, remove []ingressRule
	for r := range want {
		if !have[r] {
			add = append(add, r)
		}
	}
	for r := range have {
		if !want[r] {
			remove = append(remove, r)
		}
	}
	if len(add) > 0 {
		_, err := cloudapi.Call(ctx, l.c.api, "ec2.AuthorizeSecurityGroupIngress", func(ctx context.Context) (*ec2.AuthorizeSecurityGroupIngressOutput, error) {
			return cl.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: permissions(add)})
		})
		if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
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

func permissions(rules []ingressRule) []ec2types.IpPermission {
	sort.Slice(rules, func(i, j int) bool {
		a, b := rules[i], rules[j]
		if a.proto != b.proto {
			return a.proto < b.proto
		}
		if a.from != b.from {
			return a.from < b.from
		}
		if a.to != b.to {
			return a.to < b.to
		}
		return a.cidr < b.cidr
	})
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

// attachedTargetGroups are the target groups the NLB's listeners use now.
func (l *loadBalancers) attachedTargetGroups(ctx context.Context, cl *clients, lbARN string) ([]string, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetGroups", func(ctx context.Context) (*elbv2.DescribeTargetGroupsOutput, error) {
		return cl.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(lbARN)})
	})
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var arns []string
	for _, tg := range out.TargetGroups {
		arns = append(arns, aws.ToString(tg.TargetGroupArn))
	}
	return arns, nil
}

// ensureTargetGroups makes one target group per listener, with the right
// health check, attributes and targets; it returns their ARNs by name.
func (l *loadBalancers) ensureTargetGroups(ctx context.Context, cl *clients, svc *v1.Service, vpc string, spec *nlbSpec, targets []string) (map[string]string, error) {
	arns := map[string]string{}
	for _, ls := range spec.listeners {
		tg, err := l.findTargetGroup(ctx, cl, ls.tg.name)
		if err != nil {
			return nil, err
		}
		if tg == nil {
			if tg, err = l.createTargetGroup(ctx, cl, vpc, spec, ls.tg); err != nil {
				return nil, err
			}
		} else if v, err := l.checkOwned(ctx, cl, svc, "target group", aws.ToString(tg.TargetGroupArn), ls.tg.name); err != nil {
			return nil, err
		} else if v == loadbalancers.Adopted {
			if err := l.ensureTags(ctx, cl, aws.ToString(tg.TargetGroupArn), spec.tags); err != nil {
				return nil, err
			}
		}
		arn := aws.ToString(tg.TargetGroupArn)
		if !sameHealthCheck(tg, spec.healthCheck) {
			if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.ModifyTargetGroup", func(ctx context.Context) (*elbv2.ModifyTargetGroupOutput, error) {
				return cl.elb.ModifyTargetGroup(ctx, healthCheckModify(arn, spec.healthCheck))
			}); err != nil {
				return nil, err
			}
		}
		if err := l.ensureTargetGroupAttributes(ctx, cl, arn, spec.tgAttrs); err != nil {
			return nil, err
		}
		if err := l.ensureTargets(ctx, cl, arn, ls.tg.port, targets); err != nil {
			return nil, err
		}
		arns[ls.tg.name] = arn
	}
	return arns, nil
}

func (l *loadBalancers) findTargetGroup(ctx context.Context, cl *clients, name string) (*elbtypes.TargetGroup, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetGroups", func(ctx context.Context) (*elbv2.DescribeTargetGroupsOutput, error) {
		return cl.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{Names: []string{name}})
	})
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(out.TargetGroups) == 0 {
		return nil, nil
	}
	return &out.TargetGroups[0], nil
}

func (l *loadBalancers) createTargetGroup(ctx context.Context, cl *clients, vpc string, spec *nlbSpec, tg tgSpec) (*elbtypes.TargetGroup, error) {
	hc := spec.healthCheck
	in := &elbv2.CreateTargetGroupInput{
		Name:                       aws.String(tg.name),
		Protocol:                   tg.protocol,
		Port:                       aws.Int32(tg.port),
		VpcId:                      aws.String(vpc),
		TargetType:                 elbtypes.TargetTypeEnumInstance,
		HealthCheckEnabled:         aws.Bool(true),
		HealthCheckProtocol:        hc.protocol,
		HealthCheckPort:            aws.String(hc.port),
		HealthCheckIntervalSeconds: aws.Int32(hc.interval),
		HealthCheckTimeoutSeconds:  aws.Int32(hc.timeout),
		HealthyThresholdCount:      aws.Int32(hc.healthy),
		UnhealthyThresholdCount:    aws.Int32(hc.unhealthy),
		Tags:                       elbTags(spec.tags),
	}
	if hc.path != "" {
		in.HealthCheckPath = aws.String(hc.path)
	}
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.CreateTargetGroup", func(ctx context.Context) (*elbv2.CreateTargetGroupOutput, error) {
		return cl.elb.CreateTargetGroup(ctx, in)
	}, cloudapi.Creates())
	if cloudapi.KindOf(err) == cloudapi.KindExists {
		if found, ferr := l.findTargetGroup(ctx, cl, tg.name); ferr == nil && found != nil {
			return found, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("creating target group %s: %w", tg.name, err)
	}
	if len(out.TargetGroups) == 0 {
		return nil, fmt.Errorf("creating target group %s: AWS returned no target group", tg.name)
	}
	return &out.TargetGroups[0], nil
}

func sameHealthCheck(tg *elbtypes.TargetGroup, hc healthCheckSpec) bool {
	return tg.HealthCheckProtocol == hc.protocol &&
		aws.ToString(tg.HealthCheckPort) == hc.port &&
		aws.ToString(tg.HealthCheckPath) == hc.path &&
		aws.ToInt32(tg.HealthCheckIntervalSeconds) == hc.interval &&
		aws.ToInt32(tg.HealthCheckTimeoutSeconds) == hc.timeout &&
		aws.ToInt32(tg.HealthyThresholdCount) == hc.healthy &&
		aws.ToInt32(tg.UnhealthyThresholdCount) == hc.unhealthy
}

func healthCheckModify(arn string, hc healthCheckSpec) *elbv2.ModifyTargetGroupInput {
	in := &elbv2.ModifyTargetGroupInput{
		TargetGroupArn:             aws.String(arn),
		HealthCheckProtocol:        hc.protocol,
		HealthCheckPort:            aws.String(hc.port),
		HealthCheckIntervalSeconds: aws.Int32(hc.interval),
		HealthCheckTimeoutSeconds:  aws.Int32(hc.timeout),
		HealthyThresholdCount:      aws.Int32(hc.healthy),
		UnhealthyThresholdCount:    aws.Int32(hc.unhealthy),
	}
	if hc.path != "" {
		in.HealthCheckPath = aws.String(hc.path)
	}
	return in
}

func (l *loadBalancers) ensureTargetGroupAttributes(ctx context.Context, cl *clients, arn string, want map[string]string) error {
	if len(want) == 0 {
		return nil
	}
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetGroupAttributes", func(ctx context.Context) (*elbv2.DescribeTargetGroupAttributesOutput, error) {
		return cl.elb.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: aws.String(arn)})
	})
	if err != nil {
		return err
	}
	have := map[string]string{}
	for _, at := range out.Attributes {
		have[aws.ToString(at.Key)] = aws.ToString(at.Value)
	}
	var change []elbtypes.TargetGroupAttribute
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if have[k] != want[k] {
			change = append(change, elbtypes.TargetGroupAttribute{Key: aws.String(k), Value: aws.String(want[k])})
		}
	}
	if len(change) == 0 {
		return nil
	}
	_, err = cloudapi.Call(ctx, l.c.api, "elbv2.ModifyTargetGroupAttributes", func(ctx context.Context) (*elbv2.ModifyTargetGroupAttributesOutput, error) {
		return cl.elb.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{TargetGroupArn: aws.String(arn), Attributes: change})
	})
	return err
}

// ensureTargets registers the node instances on the node port and
// deregisters the rest.
func (l *loadBalancers) ensureTargets(ctx context.Context, cl *clients, arn string, port int32, ids []string) error {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetHealth", func(ctx context.Context) (*elbv2.DescribeTargetHealthOutput, error) {
		return cl.elb.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(arn)})
	})
	if err != nil {
		return err
	}
	type target struct {
		id   string
		port int32
	}
	have := map[target]bool{}
	for _, d := range out.TargetHealthDescriptions {
		if d.Target == nil {
			continue
		}
		if d.TargetHealth != nil && d.TargetHealth.State == elbtypes.TargetHealthStateEnumDraining {
			continue // already on its way out
		}
		have[target{aws.ToString(d.Target.Id), aws.ToInt32(d.Target.Port)}] = true
	}
	want := map[target]bool{}
	for _, id := range ids {
		want[target{id, port}] = true
	}
	var reg, dereg []elbtypes.TargetDescription
	for t := range want {
		if !have[t] {
			reg = append(reg, elbtypes.TargetDescription{Id: aws.String(t.id), Port: aws.Int32(t.port)})
		}
	}
	for t := range have {
		if !want[t] {
			dereg = append(dereg, elbtypes.TargetDescription{Id: aws.String(t.id), Port: aws.Int32(t.port)})
		}
	}
	if len(reg) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.RegisterTargets", func(ctx context.Context) (*elbv2.RegisterTargetsOutput, error) {
			return cl.elb.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(arn), Targets: reg})
		}); err != nil {
			return err
		}
	}
	if len(dereg) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.DeregisterTargets", func(ctx context.Context) (*elbv2.DeregisterTargetsOutput, error) {
			return cl.elb.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(arn), Targets: dereg})
		}); err != nil && !cloudapi.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// ensureListeners gives each Service port a listener forwarding to its
// target group, and removes listeners of ports that are gone.
func (l *loadBalancers) ensureListeners(ctx context.Context, cl *clients, lbARN string, spec *nlbSpec, tgs map[string]string) error {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeListeners", func(ctx context.Context) (*elbv2.DescribeListenersOutput, error) {
		return cl.elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lbARN)})
	})
	if err != nil {
		return err
	}
	have := map[int32]elbtypes.Listener{}
	for _, ls := range out.Listeners {
		have[aws.ToInt32(ls.Port)] = ls
	}
	for _, want := range spec.listeners {
		tgARN := tgs[want.tg.name]
		action := []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: aws.String(tgARN)}}
		var certs []elbtypes.Certificate
		if len(want.certs) > 0 {
			certs = []elbtypes.Certificate{{CertificateArn: aws.String(want.certs[0])}}
		}
		cur, ok := have[want.port]
		delete(have, want.port)
		if !ok {
			in := &elbv2.CreateListenerInput{LoadBalancerArn: aws.String(lbARN), Port: aws.Int32(want.port), Protocol: want.protocol, DefaultActions: action, Certificates: certs}
			if want.sslPolicy != "" {
				in.SslPolicy = aws.String(want.sslPolicy)
			}
			_, err := cloudapi.Call(ctx, l.c.api, "elbv2.CreateListener", func(ctx context.Context) (*elbv2.CreateListenerOutput, error) {
				return cl.elb.CreateListener(ctx, in)
			}, cloudapi.Creates())
			if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
				return fmt.Errorf("creating the listener on port %d: %w", want.port, err)
			}
			continue
		}
		if listenerMatches(cur, want, tgARN) {
			continue
		}
		in := &elbv2.ModifyListenerInput{ListenerArn: cur.ListenerArn, Port: aws.Int32(want.port), Protocol: want.protocol, DefaultActions: action, Certificates: certs}
		if want.sslPolicy != "" {
			in.SslPolicy = aws.String(want.sslPolicy)
		}
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.ModifyListener", func(ctx context.Context) (*elbv2.ModifyListenerOutput, error) {
			return cl.elb.ModifyListener(ctx, in)
		}); err != nil {
			return fmt.Errorf("updating the listener on port %d: %w", want.port, err)
		}
	}
	for port, ls := range have {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.DeleteListener", func(ctx context.Context) (*elbv2.DeleteListenerOutput, error) {
			return cl.elb.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: ls.ListenerArn})
		}); err != nil && !cloudapi.IsNotFound(err) {
			return fmt.Errorf("removing the listener on port %d: %w", port, err)
		}
	}
	return nil
}

func listenerMatches(cur elbtypes.Listener, want listenerSpec, tgARN string) bool {
	if cur.Protocol != want.protocol || len(cur.DefaultActions) != 1 || aws.ToString(cur.DefaultActions[0].TargetGroupArn) != tgARN {
		return false
	}
	if want.protocol != elbtypes.ProtocolEnumTls {
		return true
	}
	return aws.ToString(cur.SslPolicy) == want.sslPolicy && len(cur.Certificates) > 0 && len(want.certs) > 0 &&
		aws.ToString(cur.Certificates[0].CertificateArn) == want.certs[0]
}

func (l *loadBalancers) deleteTargetGroup(ctx context.Context, cl *clients, arn string) error {
	_, err := cloudapi.Call(ctx, l.c.api, "elbv2.DeleteTargetGroup", func(ctx context.Context) (*elbv2.DeleteTargetGroupOutput, error) {
		return cl.elb.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(arn)})
	})
	if err != nil && !cloudapi.IsNotFound(err) {
		return fmt.Errorf("deleting target group %s: %w", arn, err)
	}
	return nil
}

// EnsureLoadBalancerDeleted deletes the NLB, the Service's target groups
// and its security group, each only if it carries this cluster's tag. The
// finalizer is released only when all are gone; anything in doubt is
// retried.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	if elsewhere(svc) {
		return cloudprovider.ImplementedElsewhere
	}
	spec := &nlbSpec{name: lbName(svc), service: svc.Namespace + "/" + svc.Name}
	cl, err := l.c.client(ctx)
	if err != nil {
		return err
	}
	lb, err := l.findLB(ctx, cl, spec.name)
	if err != nil {
		return err
	}
	if lb != nil {
		arn := aws.ToString(lb.LoadBalancerArn)
		tags, err := l.tags(ctx, cl, arn)
		if err != nil {
			return err // the tags could not be read: ownership unknown
		}
		ok, err := l.own.CheckDelete(ctx, svc, l.resource("load balancer", arn, spec.name, tags))
		if err != nil {
			return err
		}
		if ok {
			_, err := cloudapi.Call(ctx, l.c.api, "elbv2.DeleteLoadBalancer", func(ctx context.Context) (*elbv2.DeleteLoadBalancerOutput, error) {
				return cl.elb.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)})
			})
			if err != nil && !cloudapi.IsNotFound(err) {
				return fmt.Errorf("deleting load balancer %s: %w", arn, err)
			}
			klog.InfoS("Deleted load balancer", "service", klog.KObj(svc), "loadBalancer", arn)
		}
	}
	if err := l.deleteServiceTargetGroups(ctx, cl, svc, spec); err != nil {
		return err
	}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return err
	}
	sg, err := l.findSecurityGroup(ctx, cl, vpc, sgName(spec))
	if err != nil || sg == nil {
		return err
	}
	if ok, err := l.own.CheckDelete(ctx, svc, l.resource("security group", aws.ToString(sg.GroupId), sgName(spec), ec2TagMap(sg.Tags))); err != nil || !ok {
		return err
	}
	_, err = cloudapi.Call(ctx, l.c.api, "ec2.DeleteSecurityGroup", func(ctx context.Context) (*ec2.DeleteSecurityGroupOutput, error) {
		return cl.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: sg.GroupId})
	})
	switch {
	case err == nil || cloudapi.IsNotFound(err):
		return nil
	case cloudapi.KindOf(err) == cloudapi.KindConflict:
		// The NLB's network interfaces hold on to the group for a while
		// after it is deleted.
		return loadbalancers.Pending(deletePollInterval, "security group %s is still in use by the deleted load balancer; retrying in %s", aws.ToString(sg.GroupId), deletePollInterval)
	}
	return fmt.Errorf("deleting security group %s: %w", aws.ToString(sg.GroupId), err)
}

// deleteServiceTargetGroups deletes every target group polyccm made for
// the Service.
func (l *loadBalancers) deleteServiceTargetGroups(ctx context.Context, cl *clients, svc *v1.Service, spec *nlbSpec) error {
	mine, err := l.serviceTargetGroups(ctx, cl, svc, spec)
	if err != nil {
		return err
	}
	for _, arn := range mine {
		err := l.deleteTargetGroup(ctx, cl, arn)
		if cloudapi.KindOf(err) == cloudapi.KindConflict {
			return loadbalancers.Pending(deletePollInterval, "target group %s is still in use; retrying in %s", arn, deletePollInterval)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// serviceTargetGroups finds the Service's target groups by name prefix,
// confirmed by their tags (a prefix can be shared by another Service).
func (l *loadBalancers) serviceTargetGroups(ctx context.Context, cl *clients, svc *v1.Service, spec *nlbSpec) ([]string, error) {
	prefix := tgName(svc, 0, "", 0)
	prefix = prefix[:strings.LastIndexByte(prefix, '-')+1]
	in := &elbv2.DescribeTargetGroupsInput{PageSize: aws.Int32(400)}
	type candidate struct{ arn, name string }
	var candidates []candidate
	for {
		out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetGroups", func(ctx context.Context) (*elbv2.DescribeTargetGroupsOutput, error) {
			return cl.elb.DescribeTargetGroups(ctx, in)
		})
		if err != nil {
			return nil, err
		}
		for _, tg := range out.TargetGroups {
			if strings.HasPrefix(aws.ToString(tg.TargetGroupName), prefix) {
				candidates = append(candidates, candidate{aws.ToString(tg.TargetGroupArn), aws.ToString(tg.TargetGroupName)})
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	var owned []string
	for _, c := range candidates {
		tags, err := l.tags(ctx, cl, c.arn)
		if err != nil {
			return nil, err // ownership unknown
		}
		// Only tags can prove a target group the Service's; another
		// Service's or cluster's with the same prefix is left alone.
		if r := l.resource("target group", c.arn, c.name, tags); r.OurCluster && r.Service == spec.service {
			owned = append(owned, c.arn)
		}
	}
	return owned, nil
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
