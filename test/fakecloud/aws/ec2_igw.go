package aws

import (
	"cmp"
	"slices"
)

// Internet gateways, and the public/private layout of a VPC's subnets.
// Nothing in EC2 says a subnet is public: a subnet is public when the route
// table it is associated with (explicitly, else the VPC's main table) has
// a route to an internet gateway. Cloud controllers read it that way
// (cloud-provider-aws isSubnetPublic looks for a route to an "igw-" gateway)
// to put internet-facing load balancers in public subnets only.

// InternetGateway is the fake's state for one internet gateway.
type InternetGateway struct {
	ID    string
	VPCID string // the VPC it is attached to; "" when detached
	Tags  map[string]string
}

type igwRec struct {
	InternetGateway
	seq int
}

func (g InternetGateway) clone() InternetGateway {
	g.Tags = cloneTags(g.Tags)
	return g
}

// AddInternetGateway adds an internet gateway attached to vpcID ("" for a
// detached one) and returns it. It panics if the VPC does not exist or
// already has one.
func (s *Server) AddInternetGateway(vpcID string, tags map[string]string) InternetGateway {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addInternetGatewayLocked(vpcID, tags).clone()
}

func (s *Server) addInternetGatewayLocked(vpcID string, tags map[string]string) InternetGateway {
	if vpcID != "" {
		if s.ec2.vpcs[vpcID] == nil {
			panic("aws fake: AddInternetGateway: no VPC " + vpcID)
		}
		if g := s.vpcGatewayLocked(vpcID); g != nil {
			panic("aws fake: AddInternetGateway: VPC " + vpcID + " already has " + g.ID)
		}
	}
	g := InternetGateway{ID: s.ec2ID("igw"), VPCID: vpcID, Tags: cloneTags(tags)}
	s.ec2.igws[g.ID] = &igwRec{InternetGateway: g, seq: s.nextSeq()}
	return g
}

// InternetGateways returns every internet gateway in creation order.
func (s *Server) InternetGateways() []InternetGateway {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []InternetGateway
	for _, g := range sortedBySeq(s.ec2.igws, func(r *igwRec) int { return r.seq }) {
		out = append(out, g.clone())
	}
	return out
}

// vpcGatewayLocked is the internet gateway attached to a VPC, if any.
func (s *Server) vpcGatewayLocked(vpcID string) *igwRec {
	for _, g := range s.ec2.igws {
		if g.VPCID == vpcID {
			return g
		}
	}
	return nil
}

// SubnetSpec is one subnet of AddNetwork.
type SubnetSpec struct {
	Zone      string // default: the region's Availability Zones in turn
	CIDRBlock string // default: the VPC's next free /24
	// Public puts the subnet on the VPC's public route table, whose
	// default route goes to the VPC's internet gateway, and maps public
	// addresses on launch. A private subnet stays implicitly on the main
	// route table, which has the local route only.
	Public bool
	// ClusterTag is the value of the kubernetes.io/cluster/<cluster> tag:
	// "owned", "shared", or "" for no such tag.
	ClusterTag string
	// RoleTag adds the load balancer role tag for the subnet's kind:
	// kubernetes.io/role/elb=1 on a public subnet,
	// kubernetes.io/role/internal-elb=1 on a private one.
	RoleTag bool
	Tags    map[string]string
}

// NetworkSpec describes a VPC laid out for a cluster.
type NetworkSpec struct {
	VPC     VPC    // the VPC to create: its CIDR (default 10.0.0.0/16) and tags
	Cluster string // the cluster id of the cluster tags
	Subnets []SubnetSpec
}

// Network is what AddNetwork created.
type Network struct {
	VPC             VPC
	InternetGateway InternetGateway // attached to the VPC
	// PublicRouteTable holds 0.0.0.0/0 to the internet gateway and is
	// associated with the public subnets; MainRouteTableID (the VPC's)
	// has the local route only.
	PublicRouteTable RouteTable
	Subnets          []Subnet // in the order of the spec
}

// Cluster tags, as Kubernetes cloud providers name them.
const (
	TagClusterPrefix   = "kubernetes.io/cluster/"
	TagRoleELB         = "kubernetes.io/role/elb"
	TagRoleInternalELB = "kubernetes.io/role/internal-elb"
)

// AddNetwork creates a VPC with an internet gateway, a public route table
// and the subnets of the spec, public or private, tagged for the cluster
// and for load balancers as the spec says: the layout eksctl, kops and the
// console's "VPC and more" make, which a cloud controller reads to place
// load balancers. It panics if a subnet asks for a cluster tag without a
// cluster, or names an unknown zone.
func (s *Server) AddNetwork(spec NetworkSpec) Network {
	s.mu.Lock()
	defer s.mu.Unlock()
	vpc := s.addVPCLocked(spec.VPC)
	n := Network{VPC: vpc.clone(), InternetGateway: s.addInternetGatewayLocked(vpc.ID, nil)}
	public := s.addRouteTableLocked(RouteTable{
		VPCID:  vpc.ID,
		Routes: []Route{{DestinationCIDRBlock: "0.0.0.0/0", GatewayID: n.InternetGateway.ID}},
		Tags:   map[string]string{"Name": cmp.Or(spec.VPC.Tags["Name"], vpc.ID) + "-public"},
	})
	zones := slices.DeleteFunc(slices.Clone(s.ec2.zones), func(z AvailabilityZone) bool { return z.Type != ZoneTypeAvailabilityZone })
	for k, ss := range spec.Subnets {
		tags := cloneTags(ss.Tags)
		if tags == nil {
			tags = map[string]string{}
		}
		if ss.ClusterTag != "" {
			if spec.Cluster == "" {
				panic("aws fake: AddNetwork: subnet " + ss.CIDRBlock + " has a cluster tag but the spec names no cluster")
			}
			tags[TagClusterPrefix+spec.Cluster] = ss.ClusterTag
		}
		if ss.RoleTag {
			if ss.Public {
				tags[TagRoleELB] = "1"
			} else {
				tags[TagRoleInternalELB] = "1"
			}
		}
		sub := s.addSubnetLocked(Subnet{
			VPCID: vpc.ID, AvailabilityZone: cmp.Or(ss.Zone, zones[k%len(zones)].Name), CIDRBlock: ss.CIDRBlock,
			MapPublicIPOnLaunch: ss.Public, Tags: tags,
		})
		if ss.Public {
			public.Associations = append(public.Associations, RouteTableAssociation{ID: s.ec2ID("rtbassoc"), SubnetID: sub.ID})
		}
		n.Subnets = append(n.Subnets, sub.clone())
	}
	n.PublicRouteTable = s.routeTableViewLocked(public)
	return n
}

// EC2 actions on internet gateways.

func (s *Server) lookupGatewayLocked(id string) (*igwRec, *apiError) {
	if id == "" {
		return nil, badRequest("MissingParameter", "The request must contain the parameter internetGatewayId")
	}
	if !validID("igw", id) {
		return nil, badRequest("InvalidInternetGatewayID.Malformed", "Invalid id: \"%s\"", id)
	}
	g := s.ec2.igws[id]
	if g == nil {
		return nil, badRequest("InvalidInternetGatewayID.NotFound", "The internetGateway ID '%s' does not exist", id)
	}
	return g, nil
}

func (s *Server) createInternetGateway(c *call) (any, *apiError) {
	tags, err := tagsFor(c.p, "internet-gateway")
	if err != nil {
		return nil, err
	}
	g := s.addInternetGatewayLocked("", tags)
	return &xmlCreateInternetGateway{Gateway: s.igwXML(g)}, nil
}

func (s *Server) attachInternetGateway(c *call) (any, *apiError) {
	g, err := s.lookupGatewayLocked(c.p.get("InternetGatewayId"))
	if err != nil {
		return nil, err
	}
	vpcID := c.p.get("VpcId")
	if vpcID == "" {
		return nil, badRequest("MissingParameter", "The request must contain the parameter vpcId")
	}
	if !validID("vpc", vpcID) {
		return nil, badRequest("InvalidVpcID.Malformed", "Invalid id: \"%s\"", vpcID)
	}
	if s.ec2.vpcs[vpcID] == nil {
		return nil, badRequest("InvalidVpcID.NotFound", "%s", notFoundIDs("vpc", []string{vpcID}))
	}
	if g.VPCID != "" {
		return nil, badRequest("Resource.AlreadyAssociated", "resource %s is already attached to network %s", g.ID, g.VPCID)
	}
	if other := s.vpcGatewayLocked(vpcID); other != nil {
		return nil, badRequest("InvalidParameterValue", "Network %s already has an internet gateway attached", vpcID)
	}
	g.VPCID = vpcID
	return returnTrue(), nil
}

func (s *Server) detachInternetGateway(c *call) (any, *apiError) {
	g, err := s.lookupGatewayLocked(c.p.get("InternetGatewayId"))
	if err != nil {
		return nil, err
	}
	vpcID := c.p.get("VpcId")
	if vpcID == "" {
		return nil, badRequest("MissingParameter", "The request must contain the parameter vpcId")
	}
	if g.VPCID != vpcID {
		return nil, badRequest("Gateway.NotAttached", "resource %s is not attached to network %s", g.ID, vpcID)
	}
	g.VPCID = ""
	return returnTrue(), nil
}

func (s *Server) deleteInternetGateway(c *call) (any, *apiError) {
	g, err := s.lookupGatewayLocked(c.p.get("InternetGatewayId"))
	if err != nil {
		return nil, err
	}
	if g.VPCID != "" {
		return nil, badRequest("DependencyViolation", "The internetGateway '%s' has dependencies and cannot be deleted.", g.ID)
	}
	delete(s.ec2.igws, g.ID)
	return returnTrue(), nil
}

var igwFilters = []string{"internet-gateway-id", "attachment.vpc-id", "attachment.state", "owner-id"}

func (s *Server) describeInternetGateways(c *call) (any, *apiError) {
	fs := c.p.filters()
	if err := checkFilters(fs, igwFilters); err != nil {
		return nil, err
	}
	ids := c.p.flat("InternetGatewayId")
	pg, err := parseEC2Paging(c.p, false, "")
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range ids {
		if !validID("igw", id) {
			return nil, badRequest("InvalidInternetGatewayID.Malformed", "Invalid id: \"%s\"", id)
		}
		if s.ec2.igws[id] == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, badRequest("InvalidInternetGatewayID.NotFound", "%s", notFoundIDs("internetGateway", missing))
	}
	var sel []*igwRec
	for _, g := range sortedBySeq(s.ec2.igws, func(r *igwRec) int { return r.seq }) {
		fields := func(name string) []string {
			switch name {
			case "internet-gateway-id":
				return []string{g.ID}
			case "attachment.vpc-id":
				if g.VPCID != "" {
					return []string{g.VPCID}
				}
			case "attachment.state":
				if g.VPCID != "" {
					return []string{"available"}
				}
			case "owner-id":
				return []string{s.account}
			}
			return nil
		}
		if (len(ids) == 0 || slices.Contains(ids, g.ID)) && matches(fs, fields, g.Tags) {
			sel = append(sel, g)
		}
	}
	sel, next := page(pg, sel, func(r *igwRec) int { return r.seq }, one)
	out := &xmlDescribeInternetGateways{Gateways: []xmlInternetGateway{}, NextToken: next}
	for _, g := range sel {
		out.Gateways = append(out.Gateways, s.igwXML(g.InternetGateway))
	}
	return out, nil
}

func (s *Server) igwXML(g InternetGateway) xmlInternetGateway {
	x := xmlInternetGateway{ID: g.ID, OwnerID: s.account, Attachments: []xmlIGWAttachment{}, Tags: xmlTags(g.Tags)}
	if g.VPCID != "" {
		// EC2 calls an internet gateway's live attachment "available".
		x.Attachments = append(x.Attachments, xmlIGWAttachment{State: "available", VPCID: g.VPCID})
	}
	return x
}

type xmlInternetGateway struct {
	ID          string             `xml:"internetGatewayId"`
	OwnerID     string             `xml:"ownerId"`
	Attachments []xmlIGWAttachment `xml:"attachmentSet>item"`
	Tags        []xmlTag           `xml:"tagSet>item"`
}

type xmlIGWAttachment struct {
	State string `xml:"state"`
	VPCID string `xml:"vpcId"`
}

type xmlCreateInternetGateway struct {
	ec2Head
	Gateway xmlInternetGateway `xml:"internetGateway"`
}

type xmlDescribeInternetGateways struct {
	ec2Head
	Gateways  []xmlInternetGateway `xml:"internetGatewaySet>item"`
	NextToken string               `xml:"nextToken,omitempty"`
}
