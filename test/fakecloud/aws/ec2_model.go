package aws

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Instance states, as EC2 names them, and their state codes.
const (
	InstanceStatePending      = "pending"
	InstanceStateRunning      = "running"
	InstanceStateShuttingDown = "shutting-down"
	InstanceStateTerminated   = "terminated"
	InstanceStateStopping     = "stopping"
	InstanceStateStopped      = "stopped"
)

var instanceStateCodes = map[string]int32{
	InstanceStatePending:      0,
	InstanceStateRunning:      16,
	InstanceStateShuttingDown: 32,
	InstanceStateTerminated:   48,
	InstanceStateStopping:     64,
	InstanceStateStopped:      80,
}

// NoIP, as an instance's PublicIP, makes AddInstance leave it without a
// public address even in a subnet that maps them on launch.
const NoIP = "none"

// AvailabilityZone is one zone of the fake's region: one of its three
// Availability Zones, or a Local Zone added with AddLocalZone. Zone ids are
// shuffled against names (REGIONa is not az1), as they are per account on
// AWS.
type AvailabilityZone struct {
	Name string // "eu-west-1a"; a Local Zone "us-west-2-lax-1a"
	ID   string // "euw1-az3"; a Local Zone "usw2-lax1-az1"
	// Type is ZoneTypeAvailabilityZone or ZoneTypeLocalZone.
	Type string
	// Local Zones only: the zone group, which is also the network border
	// group ("us-west-2-lax-1"); the Availability Zone it hangs off; and
	// whether the account opted in. DescribeAvailabilityZones lists a zone
	// not opted in only when asked for AllAvailabilityZones or by name.
	GroupName                    string
	ParentZoneName, ParentZoneID string
	OptedIn                      bool
}

// Zone types, as DescribeAvailabilityZones names them.
const (
	ZoneTypeAvailabilityZone = "availability-zone"
	ZoneTypeLocalZone        = "local-zone"
)

// VPC is the fake's state for one VPC.
type VPC struct {
	ID             string
	CIDRBlock      string // default 10.0.0.0/16
	IPv6CIDRBlocks []string
	IsDefault      bool
	Tags           map[string]string
	// Created with the VPC, as on AWS.
	MainRouteTableID       string
	DefaultSecurityGroupID string
}

// Subnet is the fake's state for one subnet.
type Subnet struct {
	ID                 string
	VPCID              string // default: the default VPC
	AvailabilityZone   string // default: the region's first zone
	AvailabilityZoneID string // set from AvailabilityZone
	CIDRBlock          string // default: the VPC's next free /24
	IPv6CIDRBlocks     []string
	// MapPublicIPOnLaunch gives instances added to the subnet a public
	// address.
	MapPublicIPOnLaunch bool
	DefaultForAZ        bool
	Tags                map[string]string
}

// RouteTable is the fake's state for one route table.
type RouteTable struct {
	ID           string
	VPCID        string
	Routes       []Route
	Associations []RouteTableAssociation
	Tags         map[string]string
}

// Route is one route of a route table. Exactly one destination is set and
// (except for the local route) one target.
type Route struct {
	DestinationCIDRBlock     string
	DestinationIPv6CIDRBlock string
	GatewayID                string // "local" for the VPC's own CIDRs, igw-..., vgw-...
	InstanceID               string
	NetworkInterfaceID       string
	NatGatewayID             string
	TransitGatewayID         string
	VPCPeeringConnectionID   string
	// State is "active", or "blackhole" once the target is gone (its
	// instance terminated or removed). Computed when read.
	State string
	// Origin is "CreateRouteTable" for the local routes, "CreateRoute"
	// for the others.
	Origin string
}

// RouteTableAssociation links a route table to a subnet, or marks it the
// VPC's main route table.
type RouteTableAssociation struct {
	ID       string
	SubnetID string
	Main     bool
}

// Instance is the fake's state for one instance.
type Instance struct {
	ID               string
	ReservationID    string // instances added with the same one share a reservation
	ImageID          string
	InstanceType     string // default t3.medium
	AvailabilityZone string // the subnet's
	VPCID            string // the subnet's
	SubnetID         string // default: the default subnet of the zone
	State            string // default running
	PrivateIP        string // default: the subnet's next free address
	PrivateDNSName   string // ip-10-0-1-23.eu-west-1.compute.internal
	// PublicIP is assigned when the subnet maps public addresses on
	// launch; NoIP keeps it empty.
	PublicIP      string
	PublicDNSName string // ec2-54-170-0-1.eu-west-1.compute.amazonaws.com
	IPv6Addresses []string
	// SourceDestCheck starts true, whatever AddInstance is given, as on
	// EC2; ModifyInstanceAttribute turns it off.
	SourceDestCheck    bool
	NetworkInterfaceID string
	MACAddress         string
	SecurityGroupIDs   []string
	Tags               map[string]string
	LaunchTime         time.Time
	// Architecture is "x86_64" or "arm64"; default from the instance type
	// (arm64 for the Graviton types: m7g, c6gn, t4g, hpc7g, ...).
	Architecture string
	// PlacementGroup is the placement group's name, "" for none.
	PlacementGroup string
	// NetworkNodes, for an instance of a type with a network topology
	// (DescribeInstanceTopology), replaces the nodes the fake derives from
	// its zone, placement group and id; top layer first.
	NetworkNodes []string
	// CapacityBlockID is set for UltraServer instances only, as on EC2.
	CapacityBlockID string
}

// gravitonType matches the instance types with AWS Graviton (arm64)
// processors: a "g" among the attributes after the generation, as in
// m7g, c6gn, r8gd, t4g, x2gd, im4gn, hpc7g, g5g (not g5, whose "g" is the
// family), and the first generation, a1.
var gravitonType = regexp.MustCompile(`^(a1|[a-z]+[0-9]+[a-z-]*g[a-z]*)\.`)

func architectureOf(instanceType string) string {
	if gravitonType.MatchString(instanceType) {
		return "arm64"
	}
	return "x86_64"
}

func (i Instance) clone() Instance {
	i.NetworkNodes = slices.Clone(i.NetworkNodes)
	i.IPv6Addresses = slices.Clone(i.IPv6Addresses)
	i.SecurityGroupIDs = slices.Clone(i.SecurityGroupIDs)
	i.Tags = cloneTags(i.Tags)
	return i
}

// Volume is the fake's state for one EBS volume.
type Volume struct {
	ID               string
	Size             int32  // GiB, default 8
	AvailabilityZone string // default: the region's first zone
	State            string // creating, available, in-use, deleting, deleted, error; default from Attachments
	VolumeType       string // default gp3
	IOPS             int32
	Encrypted        bool
	Attachments      []VolumeAttachment
	Tags             map[string]string
	CreateTime       time.Time
}

// VolumeAttachment attaches a volume to an instance.
type VolumeAttachment struct {
	InstanceID          string
	Device              string // default /dev/xvdf
	State               string // attaching, attached, detaching, detached; default attached
	DeleteOnTermination bool
}

type ec2State struct {
	zones       []AvailabilityZone
	defaultVPC  string
	vpcs        map[string]*vpcRec
	subnets     map[string]*subnetRec
	routeTables map[string]*routeTableRec
	instances   map[string]*instanceRec
	sgs         map[string]*sgRec
	volumes     map[string]*volumeRec
	igws        map[string]*igwRec
	nextPublic  int

	// consistency is how long a group created through the API stays
	// invisible to reads (SetConsistencyDelay); linger how long a deleted
	// load balancer's network interfaces keep holding its security groups,
	// held until the time in lingering (SetDependencyLinger).
	consistency time.Duration
	linger      time.Duration
	lingering   map[string]time.Time
}

func (e *ec2State) init() {
	e.vpcs = map[string]*vpcRec{}
	e.subnets = map[string]*subnetRec{}
	e.routeTables = map[string]*routeTableRec{}
	e.instances = map[string]*instanceRec{}
	e.sgs = map[string]*sgRec{}
	e.volumes = map[string]*volumeRec{}
	e.igws = map[string]*igwRec{}
	e.lingering = map[string]time.Time{}
}

type vpcRec struct {
	VPC
	seq int
}

type subnetRec struct {
	Subnet
	seq       int
	zoneIndex int // for default subnets, renamed with the region
	nextHost  int
}

type routeTableRec struct {
	RouteTable
	seq int
}

type instanceRec struct {
	Instance
	seq int
}

type volumeRec struct {
	Volume
	seq int
}

// regionAbbrev turns "eu-west-1" into "euw1", "ap-southeast-2" into
// "apse2", the prefix of zone ids.
func regionAbbrev(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) < 3 {
		return strings.ReplaceAll(region, "-", "")
	}
	dirs := map[string]string{
		"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
		"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw",
	}
	mid := parts[1 : len(parts)-1]
	var b strings.Builder
	b.WriteString(parts[0])
	for _, m := range mid {
		b.WriteString(cmp.Or(dirs[m], m[:1]))
	}
	b.WriteString(parts[len(parts)-1])
	return b.String()
}

func (s *Server) resetZonesLocked() {
	abbr := regionAbbrev(s.region)
	// A fixed shuffle, so names and ids never coincide by accident.
	ids := []string{"az3", "az1", "az2"}
	s.ec2.zones = nil
	for k, suffix := range []string{"a", "b", "c"} {
		s.ec2.zones = append(s.ec2.zones, AvailabilityZone{Name: s.region + suffix, ID: abbr + "-" + ids[k], Type: ZoneTypeAvailabilityZone})
	}
}

// AddLocalZone adds a Local Zone to the region and returns it with the
// defaults filled in: the id from the name (us-west-2-lax-1a is
// usw2-lax1-az1), the zone group (the name without its letter) and, as
// parent, the region's first zone. The name must start with the region
// and end in a zone group and letter; AddLocalZone panics otherwise, or if
// the zone exists. Set the region first: SetRegion drops Local Zones.
func (s *Server) AddLocalZone(z AvailabilityZone) AvailabilityZone {
	s.mu.Lock()
	defer s.mu.Unlock()
	rest, ok := strings.CutPrefix(z.Name, s.region+"-")
	if !ok || len(rest) < 3 || rest[len(rest)-1] < 'a' || rest[len(rest)-1] > 'z' || !strings.Contains(rest, "-") {
		panic("aws fake: AddLocalZone: " + z.Name + " is not a Local Zone name of " + s.region + " (like " + s.region + "-lax-1a)")
	}
	if _, exists := s.zoneLocked(z.Name); exists {
		panic("aws fake: AddLocalZone: zone " + z.Name + " exists")
	}
	group, letter := rest[:len(rest)-1], rest[len(rest)-1]
	z.Type = ZoneTypeLocalZone
	z.GroupName = cmp.Or(z.GroupName, s.region+"-"+group)
	z.ID = cmp.Or(z.ID, regionAbbrev(s.region)+"-"+strings.ReplaceAll(group, "-", "")+"-az"+strconv.Itoa(int(letter-'a')+1))
	if z.ParentZoneName == "" {
		z.ParentZoneName = s.ec2.zones[0].Name
	}
	parent, ok := s.zoneLocked(z.ParentZoneName)
	if !ok || parent.Type != ZoneTypeAvailabilityZone {
		panic("aws fake: AddLocalZone: no Availability Zone " + z.ParentZoneName)
	}
	z.ParentZoneID = parent.ID
	s.ec2.zones = append(s.ec2.zones, z)
	return z
}

func (s *Server) zoneLocked(name string) (AvailabilityZone, bool) {
	for _, z := range s.ec2.zones {
		if z.Name == name {
			return z, true
		}
	}
	return AvailabilityZone{}, false
}

// AvailabilityZones returns the region's Availability Zones (not its
// Local Zones).
func (s *Server) AvailabilityZones() []AvailabilityZone {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(s.ec2.zones), func(z AvailabilityZone) bool { return z.Type != ZoneTypeAvailabilityZone })
}

// addDefaultVPCLocked makes the default VPC as AWS does: its subnets are
// public, through a default route to an internet gateway in the main
// route table.
func (s *Server) addDefaultVPCLocked() {
	v := s.addVPCLocked(VPC{CIDRBlock: "172.31.0.0/16", IsDefault: true})
	s.ec2.defaultVPC = v.ID
	igw := s.addInternetGatewayLocked(v.ID, nil)
	main := s.ec2.routeTables[v.MainRouteTableID]
	main.Routes = append(main.Routes, Route{DestinationCIDRBlock: "0.0.0.0/0", GatewayID: igw.ID, Origin: "CreateRoute"})
	for k := range s.ec2.zones {
		sub := s.addSubnetLocked(Subnet{
			VPCID:               v.ID,
			AvailabilityZone:    s.ec2.zones[k].Name,
			CIDRBlock:           fmt.Sprintf("172.31.%d.0/20", 16*k),
			MapPublicIPOnLaunch: true,
			DefaultForAZ:        true,
		})
		s.ec2.subnets[sub.ID].zoneIndex = k
	}
}

// DefaultVPC returns the region's default VPC.
func (s *Server) DefaultVPC() VPC {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ec2.vpcs[s.ec2.defaultVPC].clone()
}

func (v VPC) clone() VPC {
	v.IPv6CIDRBlocks = slices.Clone(v.IPv6CIDRBlocks)
	v.Tags = cloneTags(v.Tags)
	return v
}

// AddVPC adds a VPC (default CIDR 10.0.0.0/16) with its main route table
// (holding the local routes) and its "default" security group, and
// returns it with the ids filled in.
func (s *Server) AddVPC(v VPC) VPC {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addVPCLocked(v).clone()
}

func (s *Server) addVPCLocked(v VPC) VPC {
	if v.ID == "" {
		v.ID = s.ec2ID("vpc")
	}
	v.CIDRBlock = cmp.Or(v.CIDRBlock, "10.0.0.0/16")
	mustPrefix(v.CIDRBlock)
	v.Tags = cloneTags(v.Tags)
	rec := &vpcRec{VPC: v, seq: s.nextSeq()}
	s.ec2.vpcs[v.ID] = rec
	rt := s.addRouteTableLocked(RouteTable{VPCID: v.ID, Associations: []RouteTableAssociation{{Main: true}}})
	rec.MainRouteTableID = rt.ID
	rec.DefaultSecurityGroupID = s.addSecurityGroupLocked("default", "default VPC security group", v.ID, nil, true).id
	return rec.VPC
}

// VPCs returns every VPC, the default one first.
func (s *Server) VPCs() []VPC {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []VPC
	for _, v := range sortedBySeq(s.ec2.vpcs, func(r *vpcRec) int { return r.seq }) {
		out = append(out, v.clone())
	}
	return out
}

func (sub Subnet) clone() Subnet {
	sub.IPv6CIDRBlocks = slices.Clone(sub.IPv6CIDRBlocks)
	sub.Tags = cloneTags(sub.Tags)
	return sub
}

// AddSubnet adds a subnet and returns it with the defaults filled in. It
// panics if the VPC or zone does not exist.
func (s *Server) AddSubnet(sub Subnet) Subnet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addSubnetLocked(sub).clone()
}

func (s *Server) addSubnetLocked(sub Subnet) Subnet {
	sub.VPCID = cmp.Or(sub.VPCID, s.ec2.defaultVPC)
	vpc := s.ec2.vpcs[sub.VPCID]
	if vpc == nil {
		panic("aws fake: AddSubnet: no VPC " + sub.VPCID)
	}
	sub.AvailabilityZone = cmp.Or(sub.AvailabilityZone, s.ec2.zones[0].Name)
	z, ok := s.zoneLocked(sub.AvailabilityZone)
	if !ok {
		panic("aws fake: AddSubnet: no zone " + sub.AvailabilityZone)
	}
	sub.AvailabilityZoneID = z.ID
	if sub.CIDRBlock == "" {
		sub.CIDRBlock = s.freeSubnetCIDRLocked(vpc.CIDRBlock)
	}
	mustPrefix(sub.CIDRBlock)
	if sub.ID == "" {
		sub.ID = s.ec2ID("subnet")
	}
	sub.Tags = cloneTags(sub.Tags)
	sub.IPv6CIDRBlocks = slices.Clone(sub.IPv6CIDRBlocks)
	s.ec2.subnets[sub.ID] = &subnetRec{Subnet: sub, seq: s.nextSeq(), zoneIndex: -1, nextHost: 4}
	return sub
}

// freeSubnetCIDRLocked carves the next /24 of a VPC no subnet uses.
func (s *Server) freeSubnetCIDRLocked(vpcCIDR string) string {
	vp := mustPrefix(vpcCIDR)
	for a := vp.Masked().Addr(); vp.Contains(a); {
		cand := netip.PrefixFrom(a, 24)
		overlaps := false
		for _, sub := range s.ec2.subnets {
			if p, err := netip.ParsePrefix(sub.CIDRBlock); err == nil && p.Overlaps(cand) {
				overlaps = true
				break
			}
		}
		if !overlaps {
			return cand.String()
		}
		b := a.As4()
		b[2]++
		if b[2] == 0 {
			b[1]++
		}
		a = netip.AddrFrom4(b)
	}
	panic("aws fake: AddSubnet: VPC " + vpcCIDR + " is full")
}

func mustPrefix(cidr string) netip.Prefix {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		panic("aws fake: bad CIDR " + cidr)
	}
	return p.Masked()
}

// Subnets returns every subnet in creation order.
func (s *Server) Subnets() []Subnet {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Subnet
	for _, r := range sortedBySeq(s.ec2.subnets, func(r *subnetRec) int { return r.seq }) {
		out = append(out, r.clone())
	}
	return out
}

func (rt RouteTable) clone() RouteTable {
	rt.Routes = slices.Clone(rt.Routes)
	rt.Associations = slices.Clone(rt.Associations)
	rt.Tags = cloneTags(rt.Tags)
	return rt
}

// AddRouteTable adds a route table to a VPC and returns it with ids filled
// in. The VPC's local routes are added if missing. An association with
// Main makes it the VPC's main route table; subnet associations move the
// subnet from any other table. It panics if the VPC or a subnet does not
// exist.
func (s *Server) AddRouteTable(rt RouteTable) RouteTable {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.addRouteTableLocked(rt)
	return s.routeTableViewLocked(rec)
}

func (s *Server) addRouteTableLocked(rt RouteTable) *routeTableRec {
	vpc := s.ec2.vpcs[rt.VPCID]
	if vpc == nil {
		panic("aws fake: AddRouteTable: no VPC " + rt.VPCID)
	}
	if rt.ID == "" {
		rt.ID = s.ec2ID("rtb")
	}
	rt = rt.clone()
	var local []Route
	for _, c := range append([]string{vpc.CIDRBlock}, vpc.IPv6CIDRBlocks...) {
		found := false
		for _, r := range rt.Routes {
			if routeDest(r) == c {
				found = true
			}
		}
		if !found {
			r := Route{GatewayID: "local", Origin: "CreateRouteTable"}
			if strings.Contains(c, ":") {
				r.DestinationIPv6CIDRBlock = c
			} else {
				r.DestinationCIDRBlock = c
			}
			local = append(local, r)
		}
	}
	rt.Routes = append(local, rt.Routes...)
	for k := range rt.Routes {
		rt.Routes[k].State = ""
		rt.Routes[k].Origin = cmp.Or(rt.Routes[k].Origin, "CreateRoute")
	}
	for k := range rt.Associations {
		a := &rt.Associations[k]
		if a.ID == "" {
			a.ID = s.ec2ID("rtbassoc")
		}
		if a.Main {
			for _, other := range s.ec2.routeTables {
				if other.VPCID == rt.VPCID {
					other.Associations = slices.DeleteFunc(other.Associations, func(x RouteTableAssociation) bool { return x.Main })
				}
			}
			vpc.MainRouteTableID = rt.ID
		}
		if a.SubnetID != "" {
			if s.ec2.subnets[a.SubnetID] == nil {
				panic("aws fake: AddRouteTable: no subnet " + a.SubnetID)
			}
			for _, other := range s.ec2.routeTables {
				other.Associations = slices.DeleteFunc(other.Associations, func(x RouteTableAssociation) bool { return x.SubnetID == a.SubnetID })
			}
		}
	}
	rec := &routeTableRec{RouteTable: rt, seq: s.nextSeq()}
	s.ec2.routeTables[rt.ID] = rec
	return rec
}

// RouteTable returns a route table, with each route's state computed.
func (s *Server) RouteTable(id string) (RouteTable, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.ec2.routeTables[id]
	if rec == nil {
		return RouteTable{}, false
	}
	return s.routeTableViewLocked(rec), true
}

// RouteTables returns every route table in creation order.
func (s *Server) RouteTables() []RouteTable {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []RouteTable
	for _, r := range sortedBySeq(s.ec2.routeTables, func(r *routeTableRec) int { return r.seq }) {
		out = append(out, s.routeTableViewLocked(r))
	}
	return out
}

func (s *Server) routeTableViewLocked(rec *routeTableRec) RouteTable {
	rt := rec.clone()
	for k := range rt.Routes {
		rt.Routes[k].State = s.routeStateLocked(rt.VPCID, rt.Routes[k])
	}
	return rt
}

func routeDest(r Route) string { return cmp.Or(r.DestinationCIDRBlock, r.DestinationIPv6CIDRBlock) }

// routeStateLocked is "blackhole" when the route's instance or network
// interface is gone: terminated (its interface deleted with it) or
// removed, or its internet gateway is no longer attached to the table's
// VPC. A stopped instance keeps its interface, and its routes stay active.
// Gateways the fake does not model (vgw-, ...) count as there.
func (s *Server) routeStateLocked(vpcID string, r Route) string {
	gone := func(inst *instanceRec) bool {
		return inst == nil || inst.State == InstanceStateTerminated
	}
	switch {
	case r.InstanceID != "":
		if gone(s.ec2.instances[r.InstanceID]) {
			return "blackhole"
		}
	case r.NetworkInterfaceID != "":
		if gone(s.instanceByENILocked(r.NetworkInterfaceID)) {
			return "blackhole"
		}
	case strings.HasPrefix(r.GatewayID, "igw-"):
		if g := s.ec2.igws[r.GatewayID]; g != nil && g.VPCID != vpcID {
			return "blackhole"
		}
	}
	return "active"
}

func (s *Server) instanceByENILocked(eni string) *instanceRec {
	for _, i := range s.ec2.instances {
		if i.NetworkInterfaceID == eni {
			return i
		}
	}
	return nil
}

// AddInstance adds an instance and returns it with what EC2 would have
// assigned: ids, the subnet's zone and VPC, a private address from the
// subnet and the DNS names that go with it, a public address if the subnet
// maps them, a network interface and its MAC. Without a subnet it lands in
// the default subnet of AvailabilityZone (default: the first zone). It
// panics if the subnet does not exist.
func (s *Server) AddInstance(inst Instance) Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addInstanceLocked(inst).clone()
}

func (s *Server) addInstanceLocked(inst Instance) Instance {
	inst = inst.clone()
	if inst.SubnetID == "" {
		az := cmp.Or(inst.AvailabilityZone, s.ec2.zones[0].Name)
		for _, sub := range sortedBySeq(s.ec2.subnets, func(r *subnetRec) int { return r.seq }) {
			if sub.DefaultForAZ && sub.AvailabilityZone == az {
				inst.SubnetID = sub.ID
				break
			}
		}
	}
	sub := s.ec2.subnets[inst.SubnetID]
	if sub == nil {
		panic("aws fake: AddInstance: no subnet " + inst.SubnetID)
	}
	inst.VPCID, inst.AvailabilityZone = sub.VPCID, sub.AvailabilityZone
	inst.ID = cmp.Or(inst.ID, s.ec2ID("i"))
	inst.ReservationID = cmp.Or(inst.ReservationID, s.ec2ID("r"))
	inst.ImageID = cmp.Or(inst.ImageID, "ami-0c1bc246476a5572b")
	inst.InstanceType = cmp.Or(inst.InstanceType, "t3.medium")
	inst.Architecture = cmp.Or(inst.Architecture, architectureOf(inst.InstanceType))
	inst.State = cmp.Or(inst.State, InstanceStateRunning)
	if _, ok := instanceStateCodes[inst.State]; !ok {
		panic("aws fake: AddInstance: bad state " + inst.State)
	}
	if inst.PrivateIP == "" {
		inst.PrivateIP = s.nextHostLocked(sub)
	}
	inst.PrivateDNSName = cmp.Or(inst.PrivateDNSName, s.privateDNSLocked(inst.PrivateIP))
	switch {
	case inst.PublicIP == NoIP:
		inst.PublicIP = ""
	case inst.PublicIP == "" && sub.MapPublicIPOnLaunch:
		s.ec2.nextPublic++
		inst.PublicIP = fmt.Sprintf("54.170.%d.%d", s.ec2.nextPublic/250, 1+s.ec2.nextPublic%250)
	}
	if inst.PublicIP != "" {
		inst.PublicDNSName = cmp.Or(inst.PublicDNSName, s.publicDNSLocked(inst.PublicIP))
	}
	inst.SourceDestCheck = true
	inst.NetworkInterfaceID = cmp.Or(inst.NetworkInterfaceID, s.ec2ID("eni"))
	inst.MACAddress = cmp.Or(inst.MACAddress, "0a:"+s.hexID(2)+":"+s.hexID(2)+":"+s.hexID(2)+":"+s.hexID(2)+":"+s.hexID(2))
	if len(inst.SecurityGroupIDs) == 0 {
		inst.SecurityGroupIDs = []string{s.ec2.vpcs[sub.VPCID].DefaultSecurityGroupID}
	}
	if inst.LaunchTime.IsZero() {
		inst.LaunchTime = s.now().UTC().Truncate(time.Second)
	}
	s.ec2.instances[inst.ID] = &instanceRec{Instance: inst, seq: s.nextSeq()}
	return inst
}

// nextHostLocked hands out the subnet's next free address, skipping the
// four AWS reserves at the start.
func (s *Server) nextHostLocked(sub *subnetRec) string {
	p := mustPrefix(sub.CIDRBlock)
	used := map[string]bool{}
	for _, i := range s.ec2.instances {
		used[i.PrivateIP] = true
	}
	for {
		a := p.Addr()
		for range sub.nextHost {
			a = a.Next()
		}
		sub.nextHost++
		if !p.Contains(a) {
			panic("aws fake: subnet " + sub.ID + " is full")
		}
		if !used[a.String()] {
			return a.String()
		}
	}
}

func (s *Server) privateDNSLocked(ip string) string {
	name := "ip-" + strings.ReplaceAll(ip, ".", "-")
	if s.region == "us-east-1" {
		return name + ".ec2.internal"
	}
	return name + "." + s.region + ".compute.internal"
}

func (s *Server) publicDNSLocked(ip string) string {
	name := "ec2-" + strings.ReplaceAll(ip, ".", "-")
	if s.region == "us-east-1" {
		return name + ".compute-1.amazonaws.com"
	}
	return name + "." + s.region + ".compute.amazonaws.com"
}

// Instance returns an instance, including a terminated one until
// RemoveInstance.
func (s *Server) Instance(id string) (Instance, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.ec2.instances[id]
	if rec == nil {
		return Instance{}, false
	}
	return rec.clone(), true
}

// Instances returns every instance in creation order.
func (s *Server) Instances() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Instance
	for _, r := range sortedBySeq(s.ec2.instances, func(r *instanceRec) int { return r.seq }) {
		out = append(out, r.clone())
	}
	return out
}

// SetInstanceState moves an instance to a state (InstanceStateRunning,
// ...). Terminated instances stay visible, as on EC2, until
// RemoveInstance; their routes turn to blackholes.
func (s *Server) SetInstanceState(id, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.ec2.instances[id]
	if rec == nil {
		return fmt.Errorf("aws fake: no instance %s", id)
	}
	if _, ok := instanceStateCodes[state]; !ok {
		return fmt.Errorf("aws fake: bad instance state %q", state)
	}
	rec.State = state
	if state == InstanceStateTerminated {
		s.deregisterTerminatedLocked(id)
	}
	return nil
}

// deregisterTerminatedLocked does what ELB does when an instance is
// terminated: it leaves every Classic Load Balancer and target group it
// was registered with (a terminated instance cannot be deregistered by
// hand: the API refuses its ID).
func (s *Server) deregisterTerminatedLocked(id string) {
	for _, lb := range s.clb.lbs {
		if i := slices.Index(lb.Instances, id); i >= 0 {
			lb.Instances = slices.Delete(lb.Instances, i, i+1)
			delete(lb.registered, id)
			delete(lb.health, id)
		}
	}
	for _, tg := range s.elb.tgs {
		if tg.TargetType != "instance" {
			continue
		}
		tg.targets = slices.DeleteFunc(tg.targets, func(t *targetRec) bool { return t.ID == id })
		delete(tg.health, id)
	}
}

// UpdateInstance changes an instance in place; the id cannot change.
func (s *Server) UpdateInstance(id string, update func(*Instance)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.ec2.instances[id]
	if rec == nil {
		return fmt.Errorf("aws fake: no instance %s", id)
	}
	inst := rec.clone()
	update(&inst)
	inst.ID = id
	rec.Instance = inst
	return nil
}

// RemoveInstance makes an instance vanish, as terminated instances do
// after a while. It reports whether it existed.
func (s *Server) RemoveInstance(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ec2.instances[id] == nil {
		return false
	}
	delete(s.ec2.instances, id)
	return true
}

func (v Volume) clone() Volume {
	v.Attachments = slices.Clone(v.Attachments)
	v.Tags = cloneTags(v.Tags)
	return v
}

// AddVolume adds an EBS volume and returns it with defaults filled in.
func (s *Server) AddVolume(v Volume) Volume {
	s.mu.Lock()
	defer s.mu.Unlock()
	v = v.clone()
	v.ID = cmp.Or(v.ID, s.ec2ID("vol"))
	v.Size = cmp.Or(v.Size, 8)
	v.AvailabilityZone = cmp.Or(v.AvailabilityZone, s.ec2.zones[0].Name)
	v.VolumeType = cmp.Or(v.VolumeType, "gp3")
	if v.IOPS == 0 && (v.VolumeType == "gp3" || v.VolumeType == "io1" || v.VolumeType == "io2") {
		v.IOPS = 3000
	}
	for k := range v.Attachments {
		v.Attachments[k].Device = cmp.Or(v.Attachments[k].Device, "/dev/xvdf")
		v.Attachments[k].State = cmp.Or(v.Attachments[k].State, "attached")
	}
	if v.State == "" {
		v.State = "available"
		if len(v.Attachments) > 0 {
			v.State = "in-use"
		}
	}
	if v.CreateTime.IsZero() {
		v.CreateTime = s.now().UTC().Truncate(time.Millisecond)
	}
	s.ec2.volumes[v.ID] = &volumeRec{Volume: v, seq: s.nextSeq()}
	return v.clone()
}

// Volumes returns every volume in creation order.
func (s *Server) Volumes() []Volume {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Volume
	for _, r := range sortedBySeq(s.ec2.volumes, func(r *volumeRec) int { return r.seq }) {
		out = append(out, r.clone())
	}
	return out
}

// RemoveVolume deletes a volume, reporting whether it existed.
func (s *Server) RemoveVolume(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ec2.volumes[id] == nil {
		return false
	}
	delete(s.ec2.volumes, id)
	return true
}

// sortedBySeq returns a map's values in creation order.
func sortedBySeq[K comparable, V any](m map[K]V, seq func(V) int) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b V) int { return seq(a) - seq(b) })
	return out
}
