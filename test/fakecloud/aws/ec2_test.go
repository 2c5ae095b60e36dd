package aws

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestDescribeInstancesByID(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	inst := s.AddInstance(Instance{
		SubnetID: subs[0].ID, InstanceType: "m5.large",
		IPv6Addresses: []string{"2a05:d018::1"},
		Tags:          map[string]string{"Name": "node-1", "kubernetes.io/cluster/c1": "owned"},
	})
	out := must[*ec2.DescribeInstancesOutput](t)(c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID}}))
	if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("reservations = %+v", out.Reservations)
	}
	got := out.Reservations[0].Instances[0]
	if !regexp.MustCompile(`^i-[0-9a-f]{17}$`).MatchString(*got.InstanceId) || *got.InstanceId != inst.ID {
		t.Errorf("id = %s", *got.InstanceId)
	}
	wantDNS := "ip-" + strings.ReplaceAll(inst.PrivateIP, ".", "-") + ".eu-west-1.compute.internal"
	if *got.PrivateDnsName != wantDNS || *got.PrivateIpAddress != inst.PrivateIP || !strings.HasPrefix(inst.PrivateIP, "10.0.0.") {
		t.Errorf("private = %s %s", *got.PrivateDnsName, *got.PrivateIpAddress)
	}
	if got.State.Name != types.InstanceStateNameRunning || *got.State.Code != 16 {
		t.Errorf("state = %+v", got.State)
	}
	if *got.VpcId != vpc.ID || *got.SubnetId != subs[0].ID || *got.Placement.AvailabilityZone != subs[0].AvailabilityZone {
		t.Errorf("placement = %s %s %s", *got.VpcId, *got.SubnetId, *got.Placement.AvailabilityZone)
	}
	if got.InstanceType != types.InstanceTypeM5Large || !*got.SourceDestCheck || *got.ImageId == "" || got.LaunchTime == nil {
		t.Errorf("instance = %+v", got)
	}
	if len(got.NetworkInterfaces) != 1 || *got.NetworkInterfaces[0].NetworkInterfaceId != inst.NetworkInterfaceID ||
		*got.NetworkInterfaces[0].MacAddress != inst.MACAddress || len(got.NetworkInterfaces[0].Ipv6Addresses) != 1 ||
		*got.NetworkInterfaces[0].Ipv6Addresses[0].Ipv6Address != "2a05:d018::1" {
		t.Errorf("interfaces = %+v", got.NetworkInterfaces)
	}
	if got.PublicIpAddress != nil {
		t.Errorf("a subnet that maps no public addresses gave %s", *got.PublicIpAddress)
	}
	tags := map[string]string{}
	for _, tg := range got.Tags {
		tags[*tg.Key] = *tg.Value
	}
	if tags["Name"] != "node-1" || len(tags) != 2 {
		t.Errorf("tags = %v", tags)
	}
	if len(got.SecurityGroups) != 1 || *got.SecurityGroups[0].GroupName != "default" {
		t.Errorf("groups = %+v", got.SecurityGroups)
	}

	// Default subnets map public addresses, with EC2's DNS names.
	pub := s.AddInstance(Instance{AvailabilityZone: "eu-west-1b"})
	out = must[*ec2.DescribeInstancesOutput](t)(c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{pub.ID}}))
	gi := out.Reservations[0].Instances[0]
	if gi.PublicIpAddress == nil || *gi.PublicDnsName != "ec2-"+strings.ReplaceAll(*gi.PublicIpAddress, ".", "-")+".eu-west-1.compute.amazonaws.com" ||
		!strings.HasPrefix(*gi.PrivateIpAddress, "172.31.16.") {
		t.Errorf("default-subnet instance = %v %v %v", gi.PublicIpAddress, gi.PublicDnsName, *gi.PrivateIpAddress)
	}
}

func TestDescribeInstancesNotFoundAndMalformed(t *testing.T) {
	s, c := start(t)
	inst := s.AddInstance(Instance{})
	_, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID, "i-0123456789abcdef0"}})
	ae := apiErr(t, err, "InvalidInstanceID.NotFound", http.StatusBadRequest)
	if ae.ErrorMessage() != "The instance ID 'i-0123456789abcdef0' does not exist" {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
	_, err = c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-1", "i-2"}})
	apiErr(t, err, "InvalidInstanceID.Malformed", http.StatusBadRequest)
	_, err = c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-00000001", "i-00000002"}})
	ae = apiErr(t, err, "InvalidInstanceID.NotFound", http.StatusBadRequest)
	if ae.ErrorMessage() != "The instance IDs 'i-00000001, i-00000002' do not exist" {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
	_, err = c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{{Name: awssdk.String("bogus"), Values: []string{"x"}}}})
	apiErr(t, err, "InvalidParameterValue", http.StatusBadRequest)
}

func TestDescribeInstancesFilters(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	a := s.AddInstance(Instance{SubnetID: subs[0].ID, Tags: map[string]string{"role": "worker", "kubernetes.io/cluster/c1": "owned"}})
	b := s.AddInstance(Instance{SubnetID: subs[1].ID, Tags: map[string]string{"role": "control-plane"}})
	other := s.AddInstance(Instance{})
	if err := s.SetInstanceState(b.ID, InstanceStateStopped); err != nil {
		t.Fatal(err)
	}

	ids := func(fs ...types.Filter) []string {
		t.Helper()
		out := must[*ec2.DescribeInstancesOutput](t)(c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: fs}))
		var got []string
		for _, r := range out.Reservations {
			for _, i := range r.Instances {
				got = append(got, *i.InstanceId)
			}
		}
		slices.Sort(got)
		return got
	}
	f := func(name string, values ...string) types.Filter {
		return types.Filter{Name: awssdk.String(name), Values: values}
	}
	sorted := func(v ...string) []string { slices.Sort(v); return v }
	cases := []struct {
		filters []types.Filter
		want    []string
	}{
		{[]types.Filter{f("vpc-id", vpc.ID)}, sorted(a.ID, b.ID)},
		{[]types.Filter{f("instance-state-name", "running")}, sorted(a.ID, other.ID)},
		{[]types.Filter{f("vpc-id", vpc.ID), f("instance-state-name", "running", "pending")}, sorted(a.ID)},
		{[]types.Filter{f("tag:role", "control-plane")}, sorted(b.ID)},
		{[]types.Filter{f("tag:role", "*")}, sorted(a.ID, b.ID)},
		{[]types.Filter{f("tag-key", "kubernetes.io/cluster/c1")}, sorted(a.ID)},
		{[]types.Filter{f("private-dns-name", a.PrivateDNSName)}, sorted(a.ID)},
		{[]types.Filter{f("private-dns-name", "ip-10-0-*")}, sorted(a.ID, b.ID)},
		{[]types.Filter{f("instance-id", other.ID, a.ID)}, sorted(a.ID, other.ID)},
		{[]types.Filter{f("availability-zone", subs[1].AvailabilityZone), f("vpc-id", vpc.ID)}, sorted(b.ID)},
	}
	for _, tc := range cases {
		if got := ids(tc.filters...); !slices.Equal(got, tc.want) {
			t.Errorf("filters %v: got %v, want %v", tc.filters, got, tc.want)
		}
	}
}

func TestDescribeInstancesPagination(t *testing.T) {
	s, c := start(t)
	var want []string
	for range 12 {
		want = append(want, s.AddInstance(Instance{}).ID)
	}
	// Two instances sharing a reservation are never split across pages.
	r := s.AddInstance(Instance{})
	want = append(want, r.ID, s.AddInstance(Instance{ReservationID: r.ReservationID}).ID)

	p := ec2.NewDescribeInstancesPaginator(c.ec2, &ec2.DescribeInstancesInput{MaxResults: awssdk.Int32(5)})
	var got []string
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		n := 0
		for _, r := range out.Reservations {
			for _, i := range r.Instances {
				got = append(got, *i.InstanceId)
				n++
			}
		}
		if n > 5 {
			t.Errorf("page %d has %d instances", pages, n)
		}
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Errorf("pages = %d, got %v, want %v", pages, got, want)
	}

	_, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{MaxResults: awssdk.Int32(3)})
	apiErr(t, err, "InvalidParameterValue", http.StatusBadRequest)
	_, err = c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{MaxResults: awssdk.Int32(5), InstanceIds: want[:1]})
	ae := apiErr(t, err, "InvalidParameterCombination", http.StatusBadRequest)
	if ae.ErrorMessage() != "The parameter instancesSet cannot be used with the parameter maxResults" {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
	_, err = c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{NextToken: awssdk.String("garbage")})
	apiErr(t, err, "InvalidParameterValue", http.StatusBadRequest)
}

func TestInstanceStates(t *testing.T) {
	s, c := start(t)
	inst := s.AddInstance(Instance{State: InstanceStatePending})
	describe := func() types.Instance {
		t.Helper()
		out := must[*ec2.DescribeInstancesOutput](t)(c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID}}))
		return out.Reservations[0].Instances[0]
	}
	codes := map[string]int32{
		InstanceStatePending: 0, InstanceStateRunning: 16, InstanceStateShuttingDown: 32,
		InstanceStateTerminated: 48, InstanceStateStopping: 64, InstanceStateStopped: 80,
	}
	for _, st := range []string{InstanceStatePending, InstanceStateRunning, InstanceStateStopping, InstanceStateStopped, InstanceStateRunning, InstanceStateShuttingDown, InstanceStateTerminated} {
		if err := s.SetInstanceState(inst.ID, st); err != nil {
			t.Fatal(err)
		}
		got := describe()
		if string(got.State.Name) != st || *got.State.Code != codes[st] {
			t.Errorf("state %s: got %s/%d", st, got.State.Name, *got.State.Code)
		}
		switch st {
		case InstanceStateStopped:
			if got.PublicIpAddress != nil || *got.PrivateIpAddress != inst.PrivateIP {
				t.Errorf("stopped: public %v private %v", got.PublicIpAddress, got.PrivateIpAddress)
			}
		case InstanceStateRunning:
			if got.PublicIpAddress == nil {
				t.Errorf("running without its public address")
			}
		case InstanceStateTerminated:
			if got.PrivateIpAddress != nil || *got.PrivateDnsName != "" || len(got.NetworkInterfaces) != 0 || got.VpcId != nil {
				t.Errorf("terminated still has addresses: %+v", got)
			}
		}
	}
	if err := s.SetInstanceState(inst.ID, "exploded"); err == nil {
		t.Error("bad state accepted")
	}
	// Terminated instances linger until removed.
	if !s.RemoveInstance(inst.ID) || s.RemoveInstance(inst.ID) {
		t.Error("RemoveInstance")
	}
	_, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID}})
	apiErr(t, err, "InvalidInstanceID.NotFound", http.StatusBadRequest)
}

func TestDescribeAvailabilityZones(t *testing.T) {
	_, c := start(t)
	out := must[*ec2.DescribeAvailabilityZonesOutput](t)(c.ec2.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{}))
	if len(out.AvailabilityZones) != 3 {
		t.Fatalf("zones = %+v", out.AvailabilityZones)
	}
	ids := map[string]bool{}
	for k, z := range out.AvailabilityZones {
		if *z.ZoneName != "eu-west-1"+string(rune('a'+k)) || *z.RegionName != "eu-west-1" || z.State != types.AvailabilityZoneStateAvailable ||
			!regexp.MustCompile(`^euw1-az[1-3]$`).MatchString(*z.ZoneId) || *z.ZoneType != "availability-zone" {
			t.Errorf("zone = %+v", z)
		}
		ids[*z.ZoneId] = true
	}
	if len(ids) != 3 {
		t.Errorf("zone ids not distinct: %v", ids)
	}
	one := must[*ec2.DescribeAvailabilityZonesOutput](t)(c.ec2.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"eu-west-1b"}}))
	if len(one.AvailabilityZones) != 1 || *one.AvailabilityZones[0].ZoneName != "eu-west-1b" {
		t.Errorf("by name = %+v", one.AvailabilityZones)
	}
	_, err := c.ec2.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"eu-west-1z"}})
	apiErr(t, err, "InvalidParameterValue", http.StatusBadRequest)
}

func TestSubnetsAndRouteTablesByTag(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	s.AddSubnet(Subnet{VPCID: vpc.ID, Tags: map[string]string{"kubernetes.io/cluster/other": "owned"}})
	rt := s.AddRouteTable(RouteTable{
		VPCID:        vpc.ID,
		Associations: []RouteTableAssociation{{SubnetID: subs[0].ID}},
		Tags:         map[string]string{"kubernetes.io/cluster/c1": "owned"},
	})

	out := must[*ec2.DescribeSubnetsOutput](t)(c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{
		{Name: awssdk.String("vpc-id"), Values: []string{vpc.ID}},
		{Name: awssdk.String("tag:kubernetes.io/cluster/c1"), Values: []string{"owned", "shared"}},
	}}))
	if len(out.Subnets) != 2 {
		t.Fatalf("subnets = %d", len(out.Subnets))
	}
	sub := out.Subnets[0]
	if *sub.SubnetId != subs[0].ID || *sub.CidrBlock != "10.0.0.0/24" || *sub.AvailabilityZone != "eu-west-1a" ||
		*sub.AvailabilityZoneId != subs[0].AvailabilityZoneID || *sub.MapPublicIpOnLaunch || *sub.AvailableIpAddressCount != 251 {
		t.Errorf("subnet = %+v", sub)
	}
	if *out.Subnets[1].CidrBlock != "10.0.1.0/24" {
		t.Errorf("second subnet CIDR = %s", *out.Subnets[1].CidrBlock)
	}
	tagged := must[*ec2.DescribeSubnetsOutput](t)(c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{
		{Name: awssdk.String("tag-key"), Values: []string{"kubernetes.io/cluster/other"}},
	}}))
	if len(tagged.Subnets) != 1 {
		t.Errorf("tag-key subnets = %d", len(tagged.Subnets))
	}
	all := must[*ec2.DescribeSubnetsOutput](t)(c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}))
	if len(all.Subnets) != 6 { // three default subnets, three of ours
		t.Errorf("all subnets = %d", len(all.Subnets))
	}
	_, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0123456789abcdef0"}})
	apiErr(t, err, "InvalidSubnetID.NotFound", http.StatusBadRequest)

	rts := must[*ec2.DescribeRouteTablesOutput](t)(c.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: []types.Filter{
		{Name: awssdk.String("vpc-id"), Values: []string{vpc.ID}},
		{Name: awssdk.String("tag:kubernetes.io/cluster/c1"), Values: []string{"owned"}},
	}}))
	if len(rts.RouteTables) != 1 || *rts.RouteTables[0].RouteTableId != rt.ID {
		t.Fatalf("route tables = %+v", rts.RouteTables)
	}
	got := rts.RouteTables[0]
	if len(got.Routes) != 1 || *got.Routes[0].DestinationCidrBlock != "10.0.0.0/16" || *got.Routes[0].GatewayId != "local" ||
		got.Routes[0].State != types.RouteStateActive || got.Routes[0].Origin != types.RouteOriginCreateRouteTable {
		t.Errorf("routes = %+v", got.Routes)
	}
	if len(got.Associations) != 1 || *got.Associations[0].SubnetId != subs[0].ID || *got.Associations[0].Main {
		t.Errorf("associations = %+v", got.Associations)
	}
	main := must[*ec2.DescribeRouteTablesOutput](t)(c.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: []types.Filter{
		{Name: awssdk.String("vpc-id"), Values: []string{vpc.ID}},
		{Name: awssdk.String("association.main"), Values: []string{"true"}},
	}}))
	if len(main.RouteTables) != 1 || *main.RouteTables[0].RouteTableId != vpc.MainRouteTableID {
		t.Errorf("main route table = %+v", main.RouteTables)
	}
	_, err = c.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{RouteTableIds: []string{"rtb-0123456789abcdef0"}})
	apiErr(t, err, "InvalidRouteTableID.NotFound", http.StatusBadRequest)

	vpcs := must[*ec2.DescribeVpcsOutput](t)(c.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []types.Filter{{Name: awssdk.String("is-default"), Values: []string{"true"}}}}))
	if len(vpcs.Vpcs) != 1 || *vpcs.Vpcs[0].CidrBlock != "172.31.0.0/16" || !*vpcs.Vpcs[0].IsDefault {
		t.Errorf("default VPC = %+v", vpcs.Vpcs)
	}
}

func TestRoutes(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	rt := s.AddRouteTable(RouteTable{VPCID: vpc.ID, Tags: map[string]string{"kubernetes.io/cluster/c1": "owned"}})
	node := s.AddInstance(Instance{SubnetID: subs[0].ID})
	node2 := s.AddInstance(Instance{SubnetID: subs[1].ID})

	_, err := c.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: &rt.ID, DestinationCidrBlock: awssdk.String("100.64.1.0/24"), InstanceId: &node.ID})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: &rt.ID, DestinationCidrBlock: awssdk.String("100.64.1.0/24"), InstanceId: &node2.ID})
	ae := apiErr(t, err, "RouteAlreadyExists", http.StatusBadRequest)
	if ae.ErrorMessage() != "The route identified by 100.64.1.0/24 already exists." {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
	got, _ := s.RouteTable(rt.ID)
	if len(got.Routes) != 2 || got.Routes[1].InstanceID != node.ID || got.Routes[1].NetworkInterfaceID != node.NetworkInterfaceID ||
		got.Routes[1].State != "active" || got.Routes[1].Origin != "CreateRoute" {
		t.Fatalf("routes = %+v", got.Routes)
	}

	// A terminated target leaves a blackhole.
	if err := s.SetInstanceState(node.ID, InstanceStateTerminated); err != nil {
		t.Fatal(err)
	}
	out := must[*ec2.DescribeRouteTablesOutput](t)(c.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{RouteTableIds: []string{rt.ID}}))
	r := out.RouteTables[0].Routes[1]
	if r.State != types.RouteStateBlackhole || *r.InstanceId != node.ID || *r.NetworkInterfaceId != node.NetworkInterfaceID || *r.InstanceOwnerId != s.AccountID() {
		t.Errorf("route = %+v", r)
	}

	must[*ec2.ReplaceRouteOutput](t)(c.ec2.ReplaceRoute(ctx, &ec2.ReplaceRouteInput{RouteTableId: &rt.ID, DestinationCidrBlock: awssdk.String("100.64.1.0/24"), InstanceId: &node2.ID}))
	got, _ = s.RouteTable(rt.ID)
	if got.Routes[1].InstanceID != node2.ID || got.Routes[1].State != "active" {
		t.Errorf("replaced route = %+v", got.Routes[1])
	}
	_, err = c.ec2.ReplaceRoute(ctx, &ec2.ReplaceRouteInput{RouteTableId: &rt.ID, DestinationCidrBlock: awssdk.String("100.64.9.0/24"), InstanceId: &node2.ID})
	apiErr(t, err, "InvalidRoute.NotFound", http.StatusBadRequest)

	must[*ec2.DeleteRouteOutput](t)(c.ec2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: &rt.ID, DestinationCidrBlock: awssdk.String("100.64.1.0/24")}))
	_, err = c.ec2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: &rt.ID, DestinationCidrBlock: awssdk.String("100.64.1.0/24")})
	ae = apiErr(t, err, "InvalidRoute.NotFound", http.StatusBadRequest)
	if !strings.Contains(ae.ErrorMessage(), rt.ID) {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
	_, err = c.ec2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: &rt.ID, DestinationCidrBlock: awssdk.String("10.0.0.0/16")})
	apiErr(t, err, "InvalidParameterValue", http.StatusBadRequest)
	_, err = c.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: awssdk.String("rtb-0123456789abcdef0"), DestinationCidrBlock: awssdk.String("100.64.2.0/24"), InstanceId: &node2.ID})
	apiErr(t, err, "InvalidRouteTableID.NotFound", http.StatusBadRequest)
	_, err = c.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: &rt.ID, DestinationCidrBlock: awssdk.String("100.64.2.0/33"), InstanceId: &node2.ID})
	apiErr(t, err, "InvalidParameterValue", http.StatusBadRequest)
	// An instance of another VPC cannot be a target.
	stranger := s.AddInstance(Instance{})
	_, err = c.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: &rt.ID, DestinationCidrBlock: awssdk.String("100.64.2.0/24"), InstanceId: &stranger.ID})
	apiErr(t, err, "InvalidParameterValue", http.StatusBadRequest)
	// IPv6 destinations by network interface.
	must[*ec2.CreateRouteOutput](t)(c.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: &rt.ID, DestinationIpv6CidrBlock: awssdk.String("2a05:d018:0:1::/80"), NetworkInterfaceId: &node2.NetworkInterfaceID}))
	got, _ = s.RouteTable(rt.ID)
	if last := got.Routes[len(got.Routes)-1]; last.DestinationIPv6CIDRBlock != "2a05:d018:0:1::/80" || last.InstanceID != node2.ID {
		t.Errorf("IPv6 route = %+v", last)
	}
}

func TestModifyInstanceAttribute(t *testing.T) {
	s, c := start(t)
	inst := s.AddInstance(Instance{})
	must[*ec2.ModifyInstanceAttributeOutput](t)(c.ec2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{
		InstanceId: &inst.ID, SourceDestCheck: &types.AttributeBooleanValue{Value: awssdk.Bool(false)},
	}))
	got, _ := s.Instance(inst.ID)
	if got.SourceDestCheck {
		t.Error("source/dest check still on")
	}
	attr := must[*ec2.DescribeInstanceAttributeOutput](t)(c.ec2.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: &inst.ID, Attribute: types.InstanceAttributeNameSourceDestCheck}))
	if attr.SourceDestCheck == nil || *attr.SourceDestCheck.Value {
		t.Errorf("attribute = %+v", attr.SourceDestCheck)
	}
	out := must[*ec2.DescribeInstancesOutput](t)(c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID}}))
	if *out.Reservations[0].Instances[0].SourceDestCheck {
		t.Error("DescribeInstances still reports the check on")
	}
	_, err := c.ec2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: awssdk.String("i-0123456789abcdef0"), SourceDestCheck: &types.AttributeBooleanValue{Value: awssdk.Bool(false)}})
	apiErr(t, err, "InvalidInstanceID.NotFound", http.StatusBadRequest)
}

func TestSecurityGroupLifecycle(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	created := must[*ec2.CreateSecurityGroupOutput](t)(c.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName: awssdk.String("k8s-elb-a1"), Description: awssdk.String("Security group for Kubernetes ELB"), VpcId: &vpc.ID,
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSecurityGroup, Tags: []types.Tag{{Key: awssdk.String("kubernetes.io/cluster/c1"), Value: awssdk.String("owned")}}}},
	}))
	id := *created.GroupId
	if !validID("sg", id) || len(created.Tags) != 1 {
		t.Fatalf("created = %+v", created)
	}
	_, err := c.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: awssdk.String("k8s-elb-a1"), Description: awssdk.String("again"), VpcId: &vpc.ID})
	apiErr(t, err, "InvalidGroup.Duplicate", http.StatusBadRequest)

	perm := types.IpPermission{
		IpProtocol: awssdk.String("tcp"), FromPort: awssdk.Int32(443), ToPort: awssdk.Int32(443),
		IpRanges:   []types.IpRange{{CidrIp: awssdk.String("0.0.0.0/0"), Description: awssdk.String("https")}},
		Ipv6Ranges: []types.Ipv6Range{{CidrIpv6: awssdk.String("::/0")}},
	}
	icmp := types.IpPermission{IpProtocol: awssdk.String("icmp"), FromPort: awssdk.Int32(3), ToPort: awssdk.Int32(4), IpRanges: []types.IpRange{{CidrIp: awssdk.String("10.0.0.0/16")}}}
	auth := must[*ec2.AuthorizeSecurityGroupIngressOutput](t)(c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: &id, IpPermissions: []types.IpPermission{perm, icmp}}))
	if !*auth.Return || len(auth.SecurityGroupRules) != 3 {
		t.Errorf("authorize = %+v", auth)
	}
	_, err = c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: &id, IpPermissions: []types.IpPermission{perm}})
	ae := apiErr(t, err, "InvalidPermission.Duplicate", http.StatusBadRequest)
	if !strings.Contains(ae.ErrorMessage(), `"peer: 0.0.0.0/0, TCP, from port: 443, to port: 443, ALLOW"`) {
		t.Errorf("message = %q", ae.ErrorMessage())
	}

	desc := must[*ec2.DescribeSecurityGroupsOutput](t)(c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
		{Name: awssdk.String("vpc-id"), Values: []string{vpc.ID}},
		{Name: awssdk.String("tag:kubernetes.io/cluster/c1"), Values: []string{"owned"}},
	}}))
	if len(desc.SecurityGroups) != 1 {
		t.Fatalf("groups = %+v", desc.SecurityGroups)
	}
	g := desc.SecurityGroups[0]
	if *g.GroupName != "k8s-elb-a1" || *g.VpcId != vpc.ID || len(g.IpPermissions) != 2 || len(g.IpPermissionsEgress) != 1 {
		t.Fatalf("group = %+v", g)
	}
	p0 := g.IpPermissions[0]
	if *p0.IpProtocol != "tcp" || *p0.FromPort != 443 || len(p0.IpRanges) != 1 || *p0.IpRanges[0].Description != "https" || len(p0.Ipv6Ranges) != 1 {
		t.Errorf("permission = %+v", p0)
	}
	if e := g.IpPermissionsEgress[0]; *e.IpProtocol != "-1" || e.FromPort != nil || *e.IpRanges[0].CidrIp != "0.0.0.0/0" {
		t.Errorf("egress = %+v", e)
	}
	byName := must[*ec2.DescribeSecurityGroupsOutput](t)(c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{{Name: awssdk.String("group-name"), Values: []string{"k8s-elb-*"}}}}))
	if len(byName.SecurityGroups) != 1 {
		t.Errorf("by name = %d", len(byName.SecurityGroups))
	}

	// Revoking a rule that is not there fails outside the default VPC and
	// changes nothing.
	missingPerm := types.IpPermission{IpProtocol: awssdk.String("udp"), FromPort: awssdk.Int32(53), ToPort: awssdk.Int32(53), IpRanges: []types.IpRange{{CidrIp: awssdk.String("0.0.0.0/0")}}}
	_, err = c.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: &id, IpPermissions: []types.IpPermission{perm, missingPerm}})
	apiErr(t, err, "InvalidPermission.NotFound", http.StatusBadRequest)
	// The description does not have to match.
	perm.IpRanges[0].Description = nil
	must[*ec2.RevokeSecurityGroupIngressOutput](t)(c.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: &id, IpPermissions: []types.IpPermission{perm}}))
	sg, _ := s.SecurityGroup(id)
	if len(sg.Ingress) != 1 || sg.Ingress[0].Protocol != "icmp" {
		t.Errorf("ingress after revoke = %+v", sg.Ingress)
	}

	// A load balancer using the group keeps it from being deleted.
	lb := must[*elbv2CreateLB](t)(createNLB(c, "lb-with-sg", subs, id))
	_, err = c.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: &id})
	ae = apiErr(t, err, "DependencyViolation", http.StatusBadRequest)
	if ae.ErrorMessage() != "resource "+id+" has a dependent object" {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
	deleteLB(t, c, *lb.LoadBalancers[0].LoadBalancerArn)
	must[*ec2.DeleteSecurityGroupOutput](t)(c.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: &id}))
	_, err = c.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: &id})
	apiErr(t, err, "InvalidGroup.NotFound", http.StatusBadRequest)
	_, err = c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}})
	apiErr(t, err, "InvalidGroup.NotFound", http.StatusBadRequest)
	_, err = c.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: &vpc.DefaultSecurityGroupID})
	apiErr(t, err, "CannotDelete", http.StatusBadRequest)

	if st := s.Stats().SecurityGroups; st.Created != 1 || st.Deleted != 1 || st.Live != 0 || st.Peak != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestSecurityGroupRuleLimitAndGroupPeers(t *testing.T) {
	s, c := start(t)
	vpc := s.AddVPC(VPC{})
	a := s.AddSecurityGroup(SecurityGroup{Name: "a", Description: "a", VPCID: vpc.ID})
	b := s.AddSecurityGroup(SecurityGroup{Name: "b", Description: "b", VPCID: vpc.ID})
	must[*ec2.AuthorizeSecurityGroupIngressOutput](t)(c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId: &a.ID, IpPermissions: []types.IpPermission{{IpProtocol: awssdk.String("-1"), UserIdGroupPairs: []types.UserIdGroupPair{{GroupId: &b.ID}}}},
	}))
	_, err := c.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: &b.ID})
	apiErr(t, err, "DependencyViolation", http.StatusBadRequest)

	var ranges []types.IpRange
	for k := range 60 {
		ranges = append(ranges, types.IpRange{CidrIp: awssdk.String("10.1." + itoa32(int32(k)) + ".0/24")})
	}
	_, err = c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId: &a.ID, IpPermissions: []types.IpPermission{{IpProtocol: awssdk.String("tcp"), FromPort: awssdk.Int32(80), ToPort: awssdk.Int32(80), IpRanges: ranges}},
	})
	apiErr(t, err, "RulesPerSecurityGroupLimitExceeded", http.StatusBadRequest)
	if g, _ := s.SecurityGroup(a.ID); len(g.Ingress) != 1 {
		t.Errorf("a failed authorize changed the group: %+v", g.Ingress)
	}
}

func TestRevokeInDefaultVPCReportsUnknownRules(t *testing.T) {
	s, c := start(t)
	g := s.AddSecurityGroup(SecurityGroup{Name: "web", Description: "web", Ingress: []IPPermission{
		{Protocol: "tcp", FromPort: 80, ToPort: 80, IPRanges: []IPRange{{CIDR: "0.0.0.0/0"}}},
	}})
	out := must[*ec2.RevokeSecurityGroupIngressOutput](t)(c.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{
		GroupName: awssdk.String("web"),
		IpPermissions: []types.IpPermission{
			{IpProtocol: awssdk.String("tcp"), FromPort: awssdk.Int32(80), ToPort: awssdk.Int32(80), IpRanges: []types.IpRange{{CidrIp: awssdk.String("0.0.0.0/0")}}},
			{IpProtocol: awssdk.String("tcp"), FromPort: awssdk.Int32(81), ToPort: awssdk.Int32(81), IpRanges: []types.IpRange{{CidrIp: awssdk.String("0.0.0.0/0")}}},
		},
	}))
	if !*out.Return || len(out.UnknownIpPermissions) != 1 || *out.UnknownIpPermissions[0].FromPort != 81 || len(out.RevokedSecurityGroupRules) != 1 {
		t.Errorf("revoke = %+v", out)
	}
	if got, _ := s.SecurityGroup(g.ID); len(got.Ingress) != 0 {
		t.Errorf("ingress = %+v", got.Ingress)
	}
}

func TestTagsAndVolumes(t *testing.T) {
	s, c := start(t)
	inst := s.AddInstance(Instance{Tags: map[string]string{"keep": "1", "drop": "x", "dropIfY": "y"}})
	must[*ec2.CreateTagsOutput](t)(c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{inst.ID}, Tags: []types.Tag{{Key: awssdk.String("new"), Value: awssdk.String("v")}}}))
	must[*ec2.DeleteTagsOutput](t)(c.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{inst.ID}, Tags: []types.Tag{
		{Key: awssdk.String("drop")},                                // any value
		{Key: awssdk.String("dropIfY"), Value: awssdk.String("no")}, // value must match
	}}))
	got, _ := s.Instance(inst.ID)
	if len(got.Tags) != 3 || got.Tags["new"] != "v" || got.Tags["dropIfY"] != "y" || got.Tags["keep"] != "1" {
		t.Errorf("tags = %v", got.Tags)
	}
	_, err := c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{inst.ID, "i-0123456789abcdef0"}, Tags: []types.Tag{{Key: awssdk.String("x"), Value: awssdk.String("y")}}})
	apiErr(t, err, "InvalidInstanceID.NotFound", http.StatusBadRequest)
	if got, _ := s.Instance(inst.ID); got.Tags["x"] != "" {
		t.Error("a failed CreateTags tagged the instance")
	}
	_, err = c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"nonsense"}, Tags: []types.Tag{{Key: awssdk.String("x"), Value: awssdk.String("y")}}})
	apiErr(t, err, "InvalidID", http.StatusBadRequest)

	vol := s.AddVolume(Volume{Size: 20, AvailabilityZone: "eu-west-1b", Attachments: []VolumeAttachment{{InstanceID: inst.ID, Device: "/dev/xvdba"}}, Tags: map[string]string{"kubernetes.io/created-for/pvc/name": "data"}})
	free := s.AddVolume(Volume{})
	out := must[*ec2.DescribeVolumesOutput](t)(c.ec2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{vol.ID}}))
	v := out.Volumes[0]
	if *v.Size != 20 || *v.AvailabilityZone != "eu-west-1b" || v.State != types.VolumeStateInUse || v.VolumeType != types.VolumeTypeGp3 ||
		len(v.Attachments) != 1 || *v.Attachments[0].InstanceId != inst.ID || *v.Attachments[0].Device != "/dev/xvdba" || v.Attachments[0].State != types.VolumeAttachmentStateAttached {
		t.Errorf("volume = %+v", v)
	}
	avail := must[*ec2.DescribeVolumesOutput](t)(c.ec2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: []types.Filter{{Name: awssdk.String("status"), Values: []string{"available"}}}}))
	if len(avail.Volumes) != 1 || *avail.Volumes[0].VolumeId != free.ID {
		t.Errorf("available volumes = %+v", avail.Volumes)
	}
	_, err = c.ec2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{"vol-0123456789abcdef0"}})
	apiErr(t, err, "InvalidVolume.NotFound", http.StatusBadRequest)
	// The instance shows the attached volume among its block devices.
	di := must[*ec2.DescribeInstancesOutput](t)(c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID}}))
	if bdm := di.Reservations[0].Instances[0].BlockDeviceMappings; len(bdm) != 1 || *bdm[0].Ebs.VolumeId != vol.ID {
		t.Errorf("block devices = %+v", bdm)
	}
}
