package aws

import (
	"cmp"
	"math/big"
	"net/netip"
	"slices"
	"strings"
)

var zoneFilters = []string{
	"zone-name", "zone-id", "state", "region-name", "zone-type", "group-name", "group-long-name",
	"opt-in-status", "parent-zone-name", "parent-zone-id",
}

// zoneOptIn is a zone's opt-in status: Availability Zones need none.
func zoneOptIn(z AvailabilityZone) string {
	switch {
	case z.Type == ZoneTypeAvailabilityZone:
		return "opt-in-not-required"
	case z.OptedIn:
		return "opted-in"
	}
	return "not-opted-in"
}

func (s *Server) describeAvailabilityZones(c *call) (any, *apiError) {
	fs := c.p.filters()
	if err := checkFilters(fs, zoneFilters); err != nil {
		return nil, err
	}
	all, _, ok := c.p.boolean("AllAvailabilityZones")
	if !ok {
		return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter allAvailabilityZones is invalid.", c.p.get("AllAvailabilityZones"))
	}
	names, ids := c.p.flat("ZoneName"), c.p.flat("ZoneId")
	for _, n := range names {
		if _, ok := s.zoneLocked(n); !ok {
			return nil, badRequest("InvalidParameterValue", "The zone '%s' does not exist.", n)
		}
	}
	for _, id := range ids {
		if !slices.ContainsFunc(s.ec2.zones, func(z AvailabilityZone) bool { return z.ID == id }) {
			return nil, badRequest("InvalidParameterValue", "The zone ID '%s' does not exist.", id)
		}
	}
	out := &xmlDescribeAvailabilityZones{Zones: []xmlAvailabilityZone{}}
	for _, z := range s.ec2.zones {
		named := slices.Contains(names, z.Name) || slices.Contains(ids, z.ID)
		if len(names)+len(ids) > 0 && !named {
			continue
		}
		// Zones that need an opt-in show only once opted in, unless the
		// caller asks for every zone or names them.
		if zoneOptIn(z) == "not-opted-in" && !all && !named {
			continue
		}
		group := cmp.Or(z.GroupName, s.region)
		fields := func(name string) []string {
			switch name {
			case "zone-name":
				return []string{z.Name}
			case "zone-id":
				return []string{z.ID}
			case "state":
				return []string{"available"}
			case "region-name":
				return []string{s.region}
			case "group-name", "group-long-name":
				return []string{group}
			case "zone-type":
				return []string{z.Type}
			case "opt-in-status":
				return []string{zoneOptIn(z)}
			case "parent-zone-name":
				return []string{z.ParentZoneName}
			case "parent-zone-id":
				return []string{z.ParentZoneID}
			}
			return nil
		}
		if !matches(fs, fields, nil) {
			continue
		}
		out.Zones = append(out.Zones, xmlAvailabilityZone{
			ZoneName: z.Name, ZoneState: "available", RegionName: s.region, ZoneID: z.ID,
			ZoneType: z.Type, OptInStatus: zoneOptIn(z),
			GroupName: group, NetworkBorderGroup: group, GroupLongName: group,
			ParentZoneName: z.ParentZoneName, ParentZoneID: z.ParentZoneID,
		})
	}
	return out, nil
}

var vpcFilters = []string{"vpc-id", "cidr", "cidr-block-association.cidr-block", "is-default", "state", "owner-id", "ipv6-cidr-block-association.ipv6-cidr-block"}

func (s *Server) describeVpcs(c *call) (any, *apiError) {
	fs := c.p.filters()
	if err := checkFilters(fs, vpcFilters); err != nil {
		return nil, err
	}
	ids := c.p.flat("VpcId")
	pg, err := parseEC2Paging(c.p, false, "")
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range ids {
		if !validID("vpc", id) {
			return nil, badRequest("InvalidVpcID.Malformed", "Invalid id: \"%s\"", id)
		}
		if s.ec2.vpcs[id] == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, badRequest("InvalidVpcID.NotFound", "%s", notFoundIDs("vpc", missing))
	}
	var sel []*vpcRec
	for _, v := range sortedBySeq(s.ec2.vpcs, func(r *vpcRec) int { return r.seq }) {
		fields := func(name string) []string {
			switch name {
			case "vpc-id":
				return []string{v.ID}
			case "cidr", "cidr-block-association.cidr-block":
				return []string{v.CIDRBlock}
			case "ipv6-cidr-block-association.ipv6-cidr-block":
				return v.IPv6CIDRBlocks
			case "is-default":
				return []string{boolStr(v.IsDefault)}
			case "state":
				return []string{"available"}
			case "owner-id":
				return []string{s.account}
			}
			return nil
		}
		if (len(ids) == 0 || slices.Contains(ids, v.ID)) && matches(fs, fields, v.Tags) {
			sel = append(sel, v)
		}
	}
	sel, next := page(pg, sel, func(r *vpcRec) int { return r.seq }, one)
	out := &xmlDescribeVpcs{Vpcs: []xmlVpc{}, NextToken: next}
	for _, v := range sel {
		xv := xmlVpc{
			VpcID: v.ID, OwnerID: s.account, State: "available", CIDRBlock: v.CIDRBlock,
			CIDRBlockAssocs: []xmlVpcCIDRAssoc{{AssociationID: "vpc-cidr-assoc-" + strings.TrimPrefix(v.ID, "vpc-"), CIDRBlock: v.CIDRBlock, State: xmlCIDRState{State: "associated"}}},
			DhcpOptionsID:   "dopt-" + strings.TrimPrefix(v.ID, "vpc-"),
			Tags:            xmlTags(v.Tags), InstanceTenancy: "default", IsDefault: v.IsDefault,
		}
		for k, c6 := range v.IPv6CIDRBlocks {
			xv.IPv6CIDRBlockAssocs = append(xv.IPv6CIDRBlockAssocs, xmlIPv6CIDRAssoc{
				AssociationID: "vpc-cidr-assoc-ipv6-" + strings.TrimPrefix(v.ID, "vpc-") + string(rune('a'+k)),
				IPv6CIDRBlock: c6, State: xmlCIDRState{State: "associated"}, NetworkBorderGroup: s.region, IPv6Pool: "Amazon",
			})
		}
		out.Vpcs = append(out.Vpcs, xv)
	}
	return out, nil
}

var subnetFilters = []string{
	"subnet-id", "vpc-id", "availability-zone", "availability-zone-id", "cidr-block", "cidr",
	"cidrBlock", "default-for-az", "defaultForAz", "state", "map-public-ip-on-launch", "owner-id",
	"ipv6-cidr-block-association.ipv6-cidr-block", "subnet-arn",
}

func (s *Server) subnetARN(id string) string {
	return "arn:aws:ec2:" + s.region + ":" + s.account + ":subnet/" + id
}

func (s *Server) describeSubnets(c *call) (any, *apiError) {
	fs := c.p.filters()
	if err := checkFilters(fs, subnetFilters); err != nil {
		return nil, err
	}
	ids := c.p.flat("SubnetId")
	pg, err := parseEC2Paging(c.p, false, "")
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range ids {
		if !validID("subnet", id) {
			return nil, badRequest("InvalidSubnetID.Malformed", "Invalid id: \"%s\"", id)
		}
		if s.ec2.subnets[id] == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, badRequest("InvalidSubnetID.NotFound", "%s", notFoundIDs("subnet", missing))
	}
	var sel []*subnetRec
	for _, sub := range sortedBySeq(s.ec2.subnets, func(r *subnetRec) int { return r.seq }) {
		fields := func(name string) []string {
			switch name {
			case "subnet-id":
				return []string{sub.ID}
			case "vpc-id":
				return []string{sub.VPCID}
			case "availability-zone":
				return []string{sub.AvailabilityZone}
			case "availability-zone-id":
				return []string{sub.AvailabilityZoneID}
			case "cidr-block", "cidr", "cidrBlock":
				return []string{sub.CIDRBlock}
			case "default-for-az", "defaultForAz":
				return []string{boolStr(sub.DefaultForAZ)}
			case "state":
				return []string{"available"}
			case "map-public-ip-on-launch":
				return []string{boolStr(sub.MapPublicIPOnLaunch)}
			case "owner-id":
				return []string{s.account}
			case "ipv6-cidr-block-association.ipv6-cidr-block":
				return sub.IPv6CIDRBlocks
			case "subnet-arn":
				return []string{s.subnetARN(sub.ID)}
			}
			return nil
		}
		if (len(ids) == 0 || slices.Contains(ids, sub.ID)) && matches(fs, fields, sub.Tags) {
			sel = append(sel, sub)
		}
	}
	sel, next := page(pg, sel, func(r *subnetRec) int { return r.seq }, one)
	out := &xmlDescribeSubnets{Subnets: []xmlSubnet{}, NextToken: next}
	for _, sub := range sel {
		xs := xmlSubnet{
			SubnetID: sub.ID, SubnetArn: s.subnetARN(sub.ID), State: "available", OwnerID: s.account,
			VpcID: sub.VPCID, CIDRBlock: sub.CIDRBlock, IPv6CIDRBlockAssocs: []xmlIPv6CIDRAssoc{},
			AvailableIPAddressCount: s.freeAddressesLocked(sub),
			AvailabilityZone:        sub.AvailabilityZone, AvailabilityZoneID: sub.AvailabilityZoneID,
			DefaultForAz: sub.DefaultForAZ, MapPublicIPOnLaunch: sub.MapPublicIPOnLaunch,
			Tags: xmlTags(sub.Tags),
		}
		for k, c6 := range sub.IPv6CIDRBlocks {
			xs.IPv6CIDRBlockAssocs = append(xs.IPv6CIDRBlockAssocs, xmlIPv6CIDRAssoc{
				AssociationID: "subnet-cidr-assoc-" + strings.TrimPrefix(sub.ID, "subnet-") + string(rune('a'+k)),
				IPv6CIDRBlock: c6, State: xmlCIDRState{State: "associated"},
			})
		}
		out.Subnets = append(out.Subnets, xs)
	}
	return out, nil
}

// freeAddressesLocked is the subnet's size less the five addresses AWS
// reserves and those its instances use.
func (s *Server) freeAddressesLocked(sub *subnetRec) int {
	p := mustPrefix(sub.CIDRBlock)
	size := new(big.Int).Lsh(big.NewInt(1), uint(p.Addr().BitLen()-p.Bits()))
	n := int(min(size.Int64(), 1<<30)) - 5
	for _, i := range s.ec2.instances {
		if i.SubnetID == sub.ID && i.State != InstanceStateTerminated {
			n--
		}
	}
	return max(n, 0)
}

var routeTableFilters = []string{
	"route-table-id", "vpc-id", "association.main", "association.subnet-id",
	"association.route-table-association-id", "association.route-table-id", "owner-id",
	"route.destination-cidr-block", "route.destination-ipv6-cidr-block", "route.instance-id",
	"route.gateway-id", "route.state", "route.origin", "route.network-interface-id",
}

func (s *Server) describeRouteTables(c *call) (any, *apiError) {
	fs := c.p.filters()
	if err := checkFilters(fs, routeTableFilters); err != nil {
		return nil, err
	}
	ids := c.p.flat("RouteTableId")
	pg, err := parseEC2Paging(c.p, false, "")
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range ids {
		if !validID("rtb", id) {
			return nil, badRequest("InvalidRouteTableId.Malformed", "Invalid id: \"%s\"", id)
		}
		if s.ec2.routeTables[id] == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, badRequest("InvalidRouteTableID.NotFound", "%s", notFoundIDs("routeTable", missing))
	}
	var sel []RouteTable
	seqs := map[string]int{}
	for _, rec := range sortedBySeq(s.ec2.routeTables, func(r *routeTableRec) int { return r.seq }) {
		rt := s.routeTableViewLocked(rec)
		seqs[rt.ID] = rec.seq
		fields := func(name string) []string {
			var out []string
			switch name {
			case "route-table-id", "association.route-table-id":
				return []string{rt.ID}
			case "vpc-id":
				return []string{rt.VPCID}
			case "owner-id":
				return []string{s.account}
			case "association.main":
				// A table that is not main matches "false" only if it has
				// associations, as on EC2.
				for _, a := range rt.Associations {
					out = append(out, boolStr(a.Main))
				}
			case "association.subnet-id":
				for _, a := range rt.Associations {
					if a.SubnetID != "" {
						out = append(out, a.SubnetID)
					}
				}
			case "association.route-table-association-id":
				for _, a := range rt.Associations {
					out = append(out, a.ID)
				}
			default:
				for _, r := range rt.Routes {
					var v string
					switch name {
					case "route.destination-cidr-block":
						v = r.DestinationCIDRBlock
					case "route.destination-ipv6-cidr-block":
						v = r.DestinationIPv6CIDRBlock
					case "route.instance-id":
						v = r.InstanceID
					case "route.gateway-id":
						v = r.GatewayID
					case "route.state":
						v = r.State
					case "route.origin":
						v = r.Origin
					case "route.network-interface-id":
						v = r.NetworkInterfaceID
					}
					if v != "" {
						out = append(out, v)
					}
				}
			}
			return out
		}
		if (len(ids) == 0 || slices.Contains(ids, rt.ID)) && matches(fs, fields, rt.Tags) {
			sel = append(sel, rt)
		}
	}
	sel, next := page(pg, sel, func(rt RouteTable) int { return seqs[rt.ID] }, one)
	out := &xmlDescribeRouteTables{RouteTables: []xmlRouteTable{}, NextToken: next}
	for _, rt := range sel {
		xr := xmlRouteTable{RouteTableID: rt.ID, VpcID: rt.VPCID, OwnerID: s.account, Routes: []xmlRoute{}, Associations: []xmlRouteTableAssoc{}, Tags: xmlTags(rt.Tags)}
		for _, r := range rt.Routes {
			x := xmlRoute{
				DestinationCIDRBlock: r.DestinationCIDRBlock, DestinationIPv6CIDRBlock: r.DestinationIPv6CIDRBlock,
				GatewayID: r.GatewayID, InstanceID: r.InstanceID, NetworkInterfaceID: r.NetworkInterfaceID,
				NatGatewayID: r.NatGatewayID, TransitGatewayID: r.TransitGatewayID, VpcPeeringConnectionID: r.VPCPeeringConnectionID,
				State: r.State, Origin: r.Origin,
			}
			if r.InstanceID != "" {
				x.InstanceOwnerID = s.account
			}
			xr.Routes = append(xr.Routes, x)
		}
		for _, a := range rt.Associations {
			xr.Associations = append(xr.Associations, xmlRouteTableAssoc{
				RouteTableAssociationID: a.ID, RouteTableID: rt.ID, SubnetID: a.SubnetID, Main: a.Main,
				AssociationState: xmlRouteTableAssocSt{State: "associated"},
			})
		}
		out.RouteTables = append(out.RouteTables, xr)
	}
	return out, nil
}

// routeRequest is the destination and target of CreateRoute / ReplaceRoute
// / DeleteRoute.
type routeRequest struct {
	table *routeTableRec
	dest  string // canonical CIDR
	v6    bool
}

func (s *Server) readRouteRequestLocked(p params) (routeRequest, *apiError) {
	var rr routeRequest
	id := p.get("RouteTableId")
	if id == "" {
		return rr, badRequest("MissingParameter", "The request must contain the parameter routeTableId")
	}
	if !validID("rtb", id) {
		return rr, badRequest("InvalidRouteTableId.Malformed", "Invalid id: \"%s\"", id)
	}
	rr.table = s.ec2.routeTables[id]
	if rr.table == nil {
		return rr, badRequest("InvalidRouteTableID.NotFound", "The routeTable ID '%s' does not exist", id)
	}
	v4, has4 := p.str("DestinationCidrBlock")
	v6, has6 := p.str("DestinationIpv6CidrBlock")
	switch {
	case has4 && has6 || !has4 && !has6:
		if p.has("DestinationPrefixListId") {
			return rr, badRequest("InvalidParameterValue", "Prefix list destinations are not supported by this fake.")
		}
		return rr, badRequest("InvalidParameterCombination", "The parameter destinationCidrBlock cannot be used with the parameter destinationIpv6CidrBlock")
	case has4:
		pfx, err := netip.ParsePrefix(v4)
		if err != nil || !pfx.Addr().Is4() {
			return rr, badRequest("InvalidParameterValue", "Value (%s) for parameter destinationCidrBlock is invalid. This is not a valid CIDR block.", v4)
		}
		rr.dest = pfx.Masked().String()
	default:
		pfx, err := netip.ParsePrefix(v6)
		if err != nil || !pfx.Addr().Is6() {
			return rr, badRequest("InvalidParameterValue", "Value (%s) for parameter destinationIpv6CidrBlock is invalid. This is not a valid IPv6 CIDR block.", v6)
		}
		rr.dest, rr.v6 = pfx.Masked().String(), true
	}
	return rr, nil
}

func (rr routeRequest) index() int {
	return slices.IndexFunc(rr.table.Routes, func(r Route) bool { return routeDest(r) == rr.dest })
}

// readRouteTargetLocked reads the target of CreateRoute / ReplaceRoute.
// An instance target is stored with its primary network interface, as EC2
// does.
func (s *Server) readRouteTargetLocked(p params, rr routeRequest) (Route, *apiError) {
	r := Route{Origin: "CreateRoute"}
	if rr.v6 {
		r.DestinationIPv6CIDRBlock = rr.dest
	} else {
		r.DestinationCIDRBlock = rr.dest
	}
	targets := 0
	if id, ok := p.str("InstanceId"); ok {
		targets++
		inst, err := s.lookupInstanceLocked(id)
		if err != nil {
			return r, err
		}
		if inst.State == InstanceStateTerminated {
			return r, badRequest("IncorrectInstanceState", "The instance '%s' is not in a valid state for this operation.", id)
		}
		if inst.VPCID != rr.table.VPCID {
			return r, badRequest("InvalidParameterValue", "route table %s and network interface %s belong to different networks", rr.table.ID, inst.NetworkInterfaceID)
		}
		r.InstanceID, r.NetworkInterfaceID = inst.ID, inst.NetworkInterfaceID
	}
	if id, ok := p.str("NetworkInterfaceId"); ok {
		targets++
		if !validID("eni", id) {
			return r, badRequest("InvalidNetworkInterfaceID.Malformed", "Invalid id: \"%s\" (expecting \"eni-...\")", id)
		}
		inst := s.instanceByENILocked(id)
		if inst == nil || inst.State == InstanceStateTerminated {
			return r, badRequest("InvalidNetworkInterfaceID.NotFound", "The networkInterface ID '%s' does not exist", id)
		}
		if inst.VPCID != rr.table.VPCID {
			return r, badRequest("InvalidParameterValue", "route table %s and network interface %s belong to different networks", rr.table.ID, id)
		}
		r.InstanceID, r.NetworkInterfaceID = inst.ID, id
	}
	if id, ok := p.str("GatewayId"); ok && strings.HasPrefix(id, "igw-") {
		// Internet gateways are modelled: the gateway must exist and be
		// attached to the table's VPC.
		switch g := s.ec2.igws[id]; {
		case g == nil:
			return r, badRequest("InvalidGatewayID.NotFound", "The gateway ID '%s' does not exist", id)
		case g.VPCID != rr.table.VPCID:
			return r, badRequest("InvalidParameterValue", "route table %s and network gateway %s belong to different networks", rr.table.ID, id)
		}
	}
	for key, field := range map[string]*string{
		"GatewayId": &r.GatewayID, "NatGatewayId": &r.NatGatewayID,
		"TransitGatewayId": &r.TransitGatewayID, "VpcPeeringConnectionId": &r.VPCPeeringConnectionID,
	} {
		if v, ok := p.str(key); ok {
			targets++
			*field = v
		}
	}
	if targets != 1 {
		return r, badRequest("InvalidParameterCombination", "The request must contain exactly one of gatewayId, natGatewayId, networkInterfaceId, vpcPeeringConnectionId, transitGatewayId or instanceId")
	}
	return r, nil
}

func (s *Server) createRoute(c *call) (any, *apiError) {
	rr, err := s.readRouteRequestLocked(c.p)
	if err != nil {
		return nil, err
	}
	r, err := s.readRouteTargetLocked(c.p, rr)
	if err != nil {
		return nil, err
	}
	if rr.index() >= 0 {
		return nil, badRequest("RouteAlreadyExists", "The route identified by %s already exists.", rr.dest)
	}
	if len(rr.table.Routes) >= 500 {
		return nil, badRequest("RouteLimitExceeded", "The maximum number of routes has been reached.")
	}
	rr.table.Routes = append(rr.table.Routes, r)
	return returnTrue(), nil
}

func (s *Server) replaceRoute(c *call) (any, *apiError) {
	rr, err := s.readRouteRequestLocked(c.p)
	if err != nil {
		return nil, err
	}
	k := rr.index()
	if k < 0 {
		return nil, badRequest("InvalidRoute.NotFound", "There is no route defined for '%s' in the route table. Use CreateRoute instead.", rr.dest)
	}
	if rr.table.Routes[k].GatewayID == "local" {
		return nil, badRequest("InvalidParameterValue", "cannot replace local route %s in route table %s", rr.dest, rr.table.ID)
	}
	r, err := s.readRouteTargetLocked(c.p, rr)
	if err != nil {
		return nil, err
	}
	rr.table.Routes[k] = r
	return returnTrue(), nil
}

func (s *Server) deleteRoute(c *call) (any, *apiError) {
	rr, err := s.readRouteRequestLocked(c.p)
	if err != nil {
		return nil, err
	}
	k := rr.index()
	if k < 0 {
		kind := "destination-cidr-block"
		if rr.v6 {
			kind = "destination-ipv6-cidr-block"
		}
		return nil, badRequest("InvalidRoute.NotFound", "no route with %s %s in route table %s", kind, rr.dest, rr.table.ID)
	}
	if rr.table.Routes[k].GatewayID == "local" {
		return nil, badRequest("InvalidParameterValue", "cannot remove local route %s in route table %s", rr.dest, rr.table.ID)
	}
	rr.table.Routes = slices.Delete(rr.table.Routes, k, k+1)
	return returnTrue(), nil
}
