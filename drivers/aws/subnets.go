package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
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
		var err error
		if found, err = l.discoverSubnets(ctx, cl, vpc, spec.internal); err != nil {
			var none *noSubnetError
			if !errors.As(err, &none) {
				return nil, err
			}
			a.Fail(AnnSubnets, "%s", none.Error())
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

// zoneTypeAZ is an ordinary availability zone; load balancers cannot use
// subnets in local, wavelength or outpost zones.
const zoneTypeAZ = "availability-zone"

// noSubnetError is a discovery that found no subnet: the Service's
// problem to report, not a failed call.
type noSubnetError struct{ msg string }

func (e *noSubnetError) Error() string { return e.msg }

// discoverSubnets picks one subnet per zone for a load balancer as the AWS
// CCM does (findELBSubnets): of the VPC's subnets tagged for this cluster
// or for no cluster at all (else the subnet polyccm's own instance is
// in), internet-facing load balancers take only public ones (a route to
// an internet gateway); in a zone with several, the one with the role
// tag wins, then the one with the cluster tag, then the lowest ID. Zones
// that are not ordinary availability zones are left out.
func (l *loadBalancers) discoverSubnets(ctx context.Context, cl *clients, vpc string, internal bool) ([]ec2types.Subnet, error) {
	all, err := l.describeSubnets(ctx, cl, []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}})
	if err != nil {
		return nil, err
	}
	var cands []ec2types.Subnet
	for _, s := range all {
		if l.c.ec2Tagged(s.Tags) || !anyClusterTag(s.Tags) {
			cands = append(cands, s)
		}
	}
	fallback := ""
	if len(cands) == 0 {
		// The AWS CCM's fallback for a VPC with no subnet for the
		// cluster: the subnet of the instance it runs on.
		me, err := l.c.selfInstance(ctx)
		if err != nil {
			return nil, &noSubnetError{fmt.Sprintf("no subnet in %s is tagged %s or free of other clusters' tags, and the instance metadata service did not say which subnet polyccm runs in (%v); tag one subnet per zone, or name subnets in this annotation", vpc, l.c.clusterTag(), err)}
		}
		fallback = me.subnet
		for _, s := range all {
			if aws.ToString(s.SubnetId) == me.subnet {
				cands = append(cands, s)
			}
		}
	}
	var tables []ec2types.RouteTable
	if !internal {
		if tables, err = l.c.describeRouteTables(ctx, cl, []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}}); err != nil {
			return nil, err
		}
	}
	role := TagRoleELB
	if internal {
		role = TagRoleInternalELB
	}
	byZone := map[string]ec2types.Subnet{}
	for _, s := range cands {
		id, z := aws.ToString(s.SubnetId), aws.ToString(s.AvailabilityZone)
		if id == "" || z == "" {
			continue
		}
		if !internal {
			public, err := subnetPublic(tables, id)
			if err != nil {
				return nil, err
			}
			if !public {
				continue
			}
		}
		cur, ok := byZone[z]
		if !ok || betterSubnet(s, cur, role, l.c.ec2Tagged) {
			byZone[z] = s
		}
	}
	zones := slices.Sorted(maps.Keys(byZone))
	if err := l.c.zones.ensure(ctx, l.c, cl, zones); err != nil {
		return nil, err
	}
	var out []ec2types.Subnet
	for _, z := range zones {
		if t := l.c.zones.zoneType(z); t != "" && t != zoneTypeAZ {
			continue
		}
		out = append(out, byZone[z])
	}
	if len(out) == 0 {
		kind := "an internet-facing"
		need := fmt.Sprintf("tagged %s (or with no kubernetes.io/cluster/ tag) with a route to an internet gateway", l.c.clusterTag())
		if internal {
			kind, need = "an internal", fmt.Sprintf("tagged %s or with no kubernetes.io/cluster/ tag", l.c.clusterTag())
		}
		where := "no subnet in " + vpc + " can"
		if fallback != "" {
			where = fmt.Sprintf("no subnet in %s is for this cluster, and polyccm's own subnet %s (the fallback) cannot", vpc, fallback)
		}
		return nil, &noSubnetError{fmt.Sprintf("%s take %s load balancer: it needs one subnet per zone %s (%s marks the preferred one); tag subnets so, or name subnets in this annotation", where, kind, need, role)}
	}
	return out, nil
}

// betterSubnet says whether s beats cur for the same zone: the role tag,
// then the cluster tag, then the lower ID.
func betterSubnet(s, cur ec2types.Subnet, role string, tagged func([]ec2types.Tag) bool) bool {
	if a, b := hasTag(s.Tags, role), hasTag(cur.Tags, role); a != b {
		return a
	}
	if a, b := tagged(s.Tags), tagged(cur.Tags); a != b {
		return a
	}
	return aws.ToString(s.SubnetId) < aws.ToString(cur.SubnetId)
}

func hasTag(tags []ec2types.Tag, key string) bool {
	return slices.ContainsFunc(tags, func(t ec2types.Tag) bool { return aws.ToString(t.Key) == key })
}

// anyClusterTag says whether a resource carries any cluster's
// kubernetes.io/cluster/ tag.
func anyClusterTag(tags []ec2types.Tag) bool {
	return slices.ContainsFunc(tags, func(t ec2types.Tag) bool { return strings.HasPrefix(aws.ToString(t.Key), TagClusterPrefix) })
}

// subnetPublic says whether the subnet routes to an internet gateway: by
// the route table associated with it, else the VPC's main table.
func subnetPublic(tables []ec2types.RouteTable, subnetID string) (bool, error) {
	var table *ec2types.RouteTable
	for i := range tables {
		for _, as := range tables[i].Associations {
			if aws.ToString(as.SubnetId) == subnetID {
				table = &tables[i]
			}
		}
	}
	if table == nil {
		for i := range tables {
			for _, as := range tables[i].Associations {
				if aws.ToBool(as.Main) {
					table = &tables[i]
				}
			}
		}
	}
	if table == nil {
		return false, fmt.Errorf("subnet %s has no route table and its VPC no main route table; cannot tell whether it is public", subnetID)
	}
	for _, r := range table.Routes {
		if strings.HasPrefix(aws.ToString(r.GatewayId), "igw") {
			return true, nil
		}
	}
	return false, nil
}
