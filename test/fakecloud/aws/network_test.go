package aws

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// publicSubnets reads, through the API, which subnets of a VPC are public
// by EC2's rule: the route table associated with the subnet, else the
// VPC's main one, has a route to an internet gateway.
func publicSubnets(t *testing.T, c clients, vpcID string) map[string]bool {
	t.Helper()
	vpcFilter := []types.Filter{{Name: awssdk.String("vpc-id"), Values: []string{vpcID}}}
	rts := must[*ec2.DescribeRouteTablesOutput](t)(c.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: vpcFilter})).RouteTables
	subs := must[*ec2.DescribeSubnetsOutput](t)(c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: vpcFilter})).Subnets
	toIGW := func(rt types.RouteTable) bool {
		return slices.ContainsFunc(rt.Routes, func(r types.Route) bool {
			return strings.HasPrefix(awssdk.ToString(r.GatewayId), "igw-") && r.State == types.RouteStateActive
		})
	}
	out := map[string]bool{}
	for _, sub := range subs {
		var table, main *types.RouteTable
		for k := range rts {
			for _, a := range rts[k].Associations {
				if awssdk.ToString(a.SubnetId) == *sub.SubnetId {
					table = &rts[k]
				}
				if awssdk.ToBool(a.Main) {
					main = &rts[k]
				}
			}
		}
		if table == nil {
			table = main
		}
		if table == nil {
			t.Fatalf("no route table for subnet %s, not even a main one", *sub.SubnetId)
		}
		out[*sub.SubnetId] = toIGW(*table)
	}
	return out
}

func TestAddNetworkPublicPrivate(t *testing.T) {
	s, c := start(t)
	n := s.AddNetwork(NetworkSpec{
		VPC:     VPC{CIDRBlock: "10.1.0.0/16", Tags: map[string]string{"Name": "c1"}},
		Cluster: "c1",
		Subnets: []SubnetSpec{
			{Public: true, ClusterTag: "shared", RoleTag: true},
			{Public: false, ClusterTag: "owned", RoleTag: true},
			{Public: true},
		},
	})
	if len(n.Subnets) != 3 || !strings.HasPrefix(n.InternetGateway.ID, "igw-") || n.InternetGateway.VPCID != n.VPC.ID {
		t.Fatalf("network = %+v", n)
	}
	pub, priv, bare := n.Subnets[0], n.Subnets[1], n.Subnets[2]
	zones := s.AvailabilityZones()
	if pub.AvailabilityZone != zones[0].Name || priv.AvailabilityZone != zones[1].Name || bare.AvailabilityZone != zones[2].Name {
		t.Errorf("zones: %s %s %s", pub.AvailabilityZone, priv.AvailabilityZone, bare.AvailabilityZone)
	}
	for sub, want := range map[*Subnet]map[string]string{
		&pub:  {TagClusterPrefix + "c1": "shared", TagRoleELB: "1"},
		&priv: {TagClusterPrefix + "c1": "owned", TagRoleInternalELB: "1"},
		&bare: {},
	} {
		if len(sub.Tags) != len(want) {
			t.Errorf("subnet %s tags = %v, want %v", sub.ID, sub.Tags, want)
		}
		for k, v := range want {
			if sub.Tags[k] != v {
				t.Errorf("subnet %s tags = %v, want %v", sub.ID, sub.Tags, want)
			}
		}
	}
	if got := publicSubnets(t, c, n.VPC.ID); !got[pub.ID] || got[priv.ID] || !got[bare.ID] {
		t.Errorf("public subnets = %v; want %s and %s public, %s private", got, pub.ID, bare.ID, priv.ID)
	}
	// The private subnet has no association of its own: it is on the main
	// table, implicitly.
	rts := must[*ec2.DescribeRouteTablesOutput](t)(c.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: []types.Filter{
		{Name: awssdk.String("association.subnet-id"), Values: []string{priv.ID}}}}))
	if len(rts.RouteTables) != 0 {
		t.Errorf("private subnet explicitly associated: %+v", rts.RouteTables)
	}
	igws := must[*ec2.DescribeInternetGatewaysOutput](t)(c.ec2.DescribeInternetGateways(ctx, &ec2.DescribeInternetGatewaysInput{Filters: []types.Filter{
		{Name: awssdk.String("attachment.vpc-id"), Values: []string{n.VPC.ID}}}}))
	if len(igws.InternetGateways) != 1 || *igws.InternetGateways[0].InternetGatewayId != n.InternetGateway.ID ||
		igws.InternetGateways[0].Attachments[0].State != "available" {
		t.Errorf("internet gateways = %+v", igws.InternetGateways)
	}
	// A default VPC's subnets are public, through its main route table.
	def := publicSubnets(t, c, s.DefaultVPC().ID)
	if len(def) != 3 {
		t.Fatalf("default subnets = %v", def)
	}
	for id, public := range def {
		if !public {
			t.Errorf("default subnet %s is private", id)
		}
	}
}

func TestInternetGatewayRoutes(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	rt := s.AddRouteTable(RouteTable{VPCID: vpc.ID, Associations: []RouteTableAssociation{{SubnetID: subs[0].ID}}})
	if publicSubnets(t, c, vpc.ID)[subs[0].ID] {
		t.Fatal("public before any internet gateway")
	}
	route := func(gw string) error {
		_, err := c.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: &rt.ID, DestinationCidrBlock: awssdk.String("0.0.0.0/0"), GatewayId: &gw})
		return err
	}
	apiErr(t, route("igw-0123456789abcdef0"), "InvalidGatewayID.NotFound", http.StatusBadRequest)

	igw := must[*ec2.CreateInternetGatewayOutput](t)(c.ec2.CreateInternetGateway(ctx, &ec2.CreateInternetGatewayInput{TagSpecifications: []types.TagSpecification{
		{ResourceType: types.ResourceTypeInternetGateway, Tags: []types.Tag{{Key: awssdk.String("Name"), Value: awssdk.String("c1")}}}}})).InternetGateway
	id := *igw.InternetGatewayId
	if len(igw.Attachments) != 0 || len(igw.Tags) != 1 {
		t.Errorf("new gateway = %+v", igw)
	}
	apiErr(t, route(id), "InvalidParameterValue", http.StatusBadRequest) // not attached to the VPC yet
	must[*ec2.AttachInternetGatewayOutput](t)(c.ec2.AttachInternetGateway(ctx, &ec2.AttachInternetGatewayInput{InternetGatewayId: &id, VpcId: &vpc.ID}))
	_, err := c.ec2.AttachInternetGateway(ctx, &ec2.AttachInternetGatewayInput{InternetGatewayId: &id, VpcId: &vpc.ID})
	apiErr(t, err, "Resource.AlreadyAssociated", http.StatusBadRequest)
	second := s.AddInternetGateway("", nil)
	_, err = c.ec2.AttachInternetGateway(ctx, &ec2.AttachInternetGatewayInput{InternetGatewayId: &second.ID, VpcId: &vpc.ID})
	apiErr(t, err, "InvalidParameterValue", http.StatusBadRequest)
	if err := route(id); err != nil {
		t.Fatal(err)
	}
	if got := publicSubnets(t, c, vpc.ID); !got[subs[0].ID] || got[subs[1].ID] {
		t.Errorf("public subnets = %v; want only %s", got, subs[0].ID)
	}
	// Another VPC's gateway is refused.
	apiErr(t, route(s.InternetGateways()[0].ID), "InvalidParameterValue", http.StatusBadRequest)

	// Detached, the gateway's routes are blackholes and the subnet no
	// longer public; attached, it cannot be deleted.
	_, err = c.ec2.DeleteInternetGateway(ctx, &ec2.DeleteInternetGatewayInput{InternetGatewayId: &id})
	apiErr(t, err, "DependencyViolation", http.StatusBadRequest)
	must[*ec2.DetachInternetGatewayOutput](t)(c.ec2.DetachInternetGateway(ctx, &ec2.DetachInternetGatewayInput{InternetGatewayId: &id, VpcId: &vpc.ID}))
	got, _ := s.RouteTable(rt.ID)
	if r := got.Routes[len(got.Routes)-1]; r.GatewayID != id || r.State != "blackhole" {
		t.Errorf("route after detaching = %+v", r)
	}
	if publicSubnets(t, c, vpc.ID)[subs[0].ID] {
		t.Error("still public with the gateway detached")
	}
	must[*ec2.DeleteInternetGatewayOutput](t)(c.ec2.DeleteInternetGateway(ctx, &ec2.DeleteInternetGatewayInput{InternetGatewayId: &id}))
	_, err = c.ec2.DescribeInternetGateways(ctx, &ec2.DescribeInternetGatewaysInput{InternetGatewayIds: []string{id}})
	apiErr(t, err, "InvalidInternetGatewayID.NotFound", http.StatusBadRequest)
}

func TestAWSCLIInternetGateway(t *testing.T) {
	needCLI(t)
	t.Parallel()
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	rt := s.AddRouteTable(RouteTable{VPCID: vpc.ID, Associations: []RouteTableAssociation{{SubnetID: subs[1].ID}}})
	out, se, code := cli(t, s, "ec2", "create-internet-gateway")
	if code != 0 {
		t.Fatal(se)
	}
	id := out["InternetGateway"].(map[string]any)["InternetGatewayId"].(string)
	if _, se, code := cli(t, s, "ec2", "attach-internet-gateway", "--internet-gateway-id", id, "--vpc-id", vpc.ID); code != 0 {
		t.Fatal(se)
	}
	if out, se, code := cli(t, s, "ec2", "create-route", "--route-table-id", rt.ID, "--destination-cidr-block", "0.0.0.0/0", "--gateway-id", id); code != 0 || out["Return"] != true {
		t.Fatalf("create-route: %v %s", out, se)
	}
	out, se, code = cli(t, s, "ec2", "describe-route-tables", "--filters", "Name=route.gateway-id,Values="+id)
	if code != 0 || len(out["RouteTables"].([]any)) != 1 {
		t.Fatalf("route tables through %s: %v %s", id, out, se)
	}
	if got := publicSubnets(t, c, vpc.ID); !got[subs[1].ID] || got[subs[0].ID] {
		t.Errorf("public subnets = %v", got)
	}
	out, se, code = cli(t, s, "ec2", "describe-internet-gateways", "--internet-gateway-ids", id)
	if code != 0 {
		t.Fatal(se)
	}
	att := out["InternetGateways"].([]any)[0].(map[string]any)["Attachments"].([]any)
	if len(att) != 1 || att[0].(map[string]any)["VpcId"] != vpc.ID || att[0].(map[string]any)["State"] != "available" {
		t.Errorf("attachments = %v", att)
	}
}

func TestDescribeAvailabilityZonesLocalZones(t *testing.T) {
	s, c := start(t)
	s.SetRegion("us-west-2")
	c = clientsWith(t, s, "us-west-2", testAccessKey, testSecretKey, "")
	lax := s.AddLocalZone(AvailabilityZone{Name: "us-west-2-lax-1a", OptedIn: true})
	den := s.AddLocalZone(AvailabilityZone{Name: "us-west-2-den-1a"})
	if lax.ID != "usw2-lax1-az1" || lax.GroupName != "us-west-2-lax-1" || lax.ParentZoneName != "us-west-2a" || lax.Type != ZoneTypeLocalZone {
		t.Errorf("local zone = %+v", lax)
	}
	if len(s.AvailabilityZones()) != 3 {
		t.Errorf("AvailabilityZones() = %v, want the 3 Availability Zones only", s.AvailabilityZones())
	}
	names := func(in *ec2.DescribeAvailabilityZonesInput) map[string]types.AvailabilityZone {
		t.Helper()
		out := must[*ec2.DescribeAvailabilityZonesOutput](t)(c.ec2.DescribeAvailabilityZones(ctx, in))
		m := map[string]types.AvailabilityZone{}
		for _, z := range out.AvailabilityZones {
			m[*z.ZoneName] = z
		}
		return m
	}
	// By default: the Availability Zones and the Local Zones opted into.
	def := names(&ec2.DescribeAvailabilityZonesInput{})
	if len(def) != 4 || def["us-west-2a"].ZoneType == nil || *def["us-west-2a"].ZoneType != "availability-zone" {
		t.Fatalf("default zones = %v", def)
	}
	z := def[lax.Name]
	if *z.ZoneType != "local-zone" || *z.ZoneId != lax.ID || *z.GroupName != "us-west-2-lax-1" || *z.NetworkBorderGroup != "us-west-2-lax-1" ||
		z.OptInStatus != types.AvailabilityZoneOptInStatusOptedIn || *z.ParentZoneName != "us-west-2a" || *z.ParentZoneId != *def["us-west-2a"].ZoneId {
		t.Errorf("local zone = %+v", z)
	}
	if _, ok := def[den.Name]; ok {
		t.Error("a Local Zone not opted into is listed by default")
	}
	if all := names(&ec2.DescribeAvailabilityZonesInput{AllAvailabilityZones: awssdk.Bool(true)}); len(all) != 5 || all[den.Name].OptInStatus != types.AvailabilityZoneOptInStatusNotOptedIn {
		t.Errorf("all zones = %v", all)
	}
	if local := names(&ec2.DescribeAvailabilityZonesInput{AllAvailabilityZones: awssdk.Bool(true), Filters: []types.Filter{
		{Name: awssdk.String("zone-type"), Values: []string{"local-zone"}}}}); len(local) != 2 {
		t.Errorf("local zones = %v", local)
	}
	if regular := names(&ec2.DescribeAvailabilityZonesInput{Filters: []types.Filter{
		{Name: awssdk.String("zone-type"), Values: []string{"availability-zone"}}}}); len(regular) != 3 {
		t.Errorf("availability zones = %v", regular)
	}
	// A subnet can sit in a Local Zone.
	sub := s.AddSubnet(Subnet{AvailabilityZone: lax.Name, CIDRBlock: "172.31.128.0/24"})
	if sub.AvailabilityZoneID != lax.ID {
		t.Errorf("subnet in %s has zone id %s", lax.Name, sub.AvailabilityZoneID)
	}
}

func TestAWSCLIDescribeAvailabilityZones(t *testing.T) {
	needCLI(t)
	t.Parallel()
	s, _ := start(t)
	s.AddLocalZone(AvailabilityZone{Name: DefaultRegion + "-xyz-1a"})
	out, se, code := cli(t, s, "ec2", "describe-availability-zones", "--all-availability-zones", "--filters", "Name=zone-type,Values=local-zone")
	if code != 0 {
		t.Fatal(se)
	}
	zones := out["AvailabilityZones"].([]any)
	if len(zones) != 1 || zones[0].(map[string]any)["ZoneType"] != "local-zone" || zones[0].(map[string]any)["OptInStatus"] != "not-opted-in" {
		t.Errorf("local zones = %v", zones)
	}
	out, se, code = cli(t, s, "ec2", "describe-availability-zones")
	if code != 0 || len(out["AvailabilityZones"].([]any)) != 3 {
		t.Errorf("default zones: %v %s", out, se)
	}
}
