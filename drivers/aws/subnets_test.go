package aws_test

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
)

// untaggedVPC is a VPC laid out as many clusters have it: few or no
// cluster tags on the subnets, public and private ones by their routes.
type untaggedVPC struct {
	vpc                      fakeaws.VPC
	pubA, roleA, otherA      fakeaws.Subnet // zone a: public, no tags; public with the role tag only; public, another cluster's
	taggedB, plainB          fakeaws.Subnet // zone b: public with the cluster tag; public, no tags
	privC                    fakeaws.Subnet // zone c: private, no tags
	local                    fakeaws.Subnet // a Local Zone: public, no tags
	internalRoleA, internalB fakeaws.Subnet
}

// newUntaggedVPC adds it to the world's fake, in the world's region.
func newUntaggedVPC(w *world) *untaggedVPC {
	f := w.fake
	u := &untaggedVPC{vpc: f.AddVPC(fakeaws.VPC{CIDRBlock: "10.1.0.0/16"})}
	lz := f.AddLocalZone(fakeaws.AvailabilityZone{Name: fakeaws.DefaultRegion + "-lax-1a"})
	add := func(zone, cidr string, tags map[string]string) fakeaws.Subnet {
		return f.AddSubnet(fakeaws.Subnet{VPCID: u.vpc.ID, AvailabilityZone: zone, CIDRBlock: cidr, Tags: tags})
	}
	u.pubA = add(zoneA, "10.1.1.0/24", nil)
	u.roleA = add(zoneA, "10.1.2.0/24", map[string]string{awsccm.TagRoleELB: "1"})
	u.otherA = add(zoneA, "10.1.3.0/24", map[string]string{awsccm.TagClusterPrefix + "other": awsccm.TagOwned, awsccm.TagRoleELB: "1"})
	u.taggedB = add(zoneB, "10.1.4.0/24", map[string]string{clusterTag: awsccm.TagShared})
	u.plainB = add(zoneB, "10.1.5.0/24", nil)
	u.privC = add(zoneC, "10.1.6.0/24", nil)
	u.local = add(lz.Name, "10.1.7.0/24", nil)
	igw := f.AddInternetGateway(u.vpc.ID, nil)
	var assoc []fakeaws.RouteTableAssociation
	for _, s := range []fakeaws.Subnet{u.pubA, u.roleA, u.otherA, u.taggedB, u.plainB, u.local} {
		assoc = append(assoc, fakeaws.RouteTableAssociation{SubnetID: s.ID})
	}
	f.AddRouteTable(fakeaws.RouteTable{VPCID: u.vpc.ID, Routes: []fakeaws.Route{{DestinationCIDRBlock: "0.0.0.0/0", GatewayID: igw.ID}}, Associations: assoc})
	return u
}

func subnetIDsOf(lb fakeaws.LoadBalancer) []string {
	var out []string
	for _, az := range lb.Subnets {
		out = append(out, az.SubnetID)
	}
	slices.Sort(out)
	return out
}

// Subnets are discovered as the AWS CCM discovers them (findELBSubnets),
// so a Service it served with untagged subnets is served the same after
// a switch: subnets tagged for this cluster or for none; internet-facing
// load balancers in public subnets only (a route to an internet
// gateway); per zone the role tag wins, then the cluster tag, then the
// lowest ID; Local Zones left out.
func TestSubnetDiscoveryAsTheAWSCCM(t *testing.T) {
	w := newWorld(t)
	u := newUntaggedVPC(w)
	cfg := w.config()
	cfg.VPCID = u.vpc.ID
	e := w.env(cfg)
	nodes := []*v1.Node{node(w.fake.AddInstance(fakeaws.Instance{SubnetID: u.privC.ID}), nil)}

	e.ensure(service(nil), nodes)
	if got, want := subnetIDsOf(e.nlb()), sorted(u.roleA.ID, u.taggedB.ID); !slices.Equal(got, want) {
		t.Errorf("internet-facing NLB subnets %v, want %v (zone a: the role tag; zone b: the cluster tag; no private or Local Zone subnet)", got, want)
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, service(nil)); err != nil {
		t.Fatal(err)
	}

	// Internal: private subnets count; no internal-elb role tag in zone
	// a, so the lowest ID of the two this cluster may use.
	internal := service(map[string]string{awsccm.AnnInternal: "true"})
	e.ensure(internal, nodes)
	zoneAPick := min(u.pubA.ID, u.roleA.ID)
	if got, want := subnetIDsOf(e.nlb()), sorted(zoneAPick, u.taggedB.ID, u.privC.ID); !slices.Equal(got, want) {
		t.Errorf("internal NLB subnets %v, want %v", got, want)
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, internal); err != nil {
		t.Fatal(err)
	}

	// A Classic ELB takes the same subnets.
	classic := service(nil)
	cfgC := w.config()
	cfgC.VPCID = u.vpc.ID
	cfgC.LoadBalancer.DefaultType = awsccm.TypeClassic
	ec := w.env(cfgC)
	ec.ensure(classic, nodes)
	lbs := w.fake.ClassicLoadBalancers()
	if len(lbs) != 1 {
		t.Fatalf("%d Classic ELBs", len(lbs))
	}
	if got, want := slices.Sorted(slices.Values(lbs[0].Subnets)), sorted(u.roleA.ID, u.taggedB.ID); !slices.Equal(got, want) {
		t.Errorf("Classic ELB subnets %v, want %v", got, want)
	}
}

// With no subnet this cluster may use, the AWS CCM falls back to the
// subnet of the instance it runs on; with no public one, an
// internet-facing Service gets a Warning that says what to tag.
func TestSubnetDiscoveryFallsBackToOwnSubnet(t *testing.T) {
	w := newWorld(t)
	vpc := w.fake.AddVPC(fakeaws.VPC{CIDRBlock: "10.2.0.0/16"})
	other := map[string]string{awsccm.TagClusterPrefix + "other": awsccm.TagOwned}
	mine := w.fake.AddSubnet(fakeaws.Subnet{VPCID: vpc.ID, AvailabilityZone: zoneB, CIDRBlock: "10.2.1.0/24", Tags: other})
	w.fake.AddSubnet(fakeaws.Subnet{VPCID: vpc.ID, AvailabilityZone: zoneA, CIDRBlock: "10.2.2.0/24", Tags: other})
	self := w.fake.AddInstance(fakeaws.Instance{SubnetID: mine.ID})
	if err := w.fake.SetIMDSInstance(self.ID); err != nil {
		t.Fatal(err)
	}
	cfg := w.config()
	cfg.VPCID = vpc.ID
	e := w.env(cfg)
	nodes := []*v1.Node{node(self, nil)}

	internal := service(map[string]string{awsccm.AnnInternal: "true"})
	e.ensure(internal, nodes)
	if got := subnetIDsOf(e.nlb()); !slices.Equal(got, []string{mine.ID}) {
		t.Errorf("internal NLB subnets %v, want polyccm's own subnet %s", got, mine.ID)
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, internal); err != nil {
		t.Fatal(err)
	}

	// Its own subnet is private: nothing for an internet-facing one.
	_, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, service(nil), nodes)
	if err == nil {
		t.Fatal("an internet-facing NLB was made without a public subnet")
	}
	ev := strings.Join(e.events(), "\n")
	if !strings.Contains(ev, awsccm.AnnSubnets) || !strings.Contains(ev, "internet gateway") || !strings.Contains(ev, mine.ID) {
		t.Errorf("events %q, want a Warning naming the subnets annotation, the internet gateway route and subnet %s", ev, mine.ID)
	}
	if n := len(w.fake.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers made", n)
	}
}
