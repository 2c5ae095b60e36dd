package aws

import (
	"cmp"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

func elbActions() map[string]actionFunc {
	return map[string]actionFunc{
		"CreateLoadBalancer":             (*Server).createLoadBalancer,
		"DescribeLoadBalancers":          (*Server).describeLoadBalancers,
		"DeleteLoadBalancer":             (*Server).deleteLoadBalancer,
		"DescribeLoadBalancerAttributes": (*Server).describeLoadBalancerAttributes,
		"ModifyLoadBalancerAttributes":   (*Server).modifyLoadBalancerAttributes,
		"SetSecurityGroups":              (*Server).setSecurityGroups,
		"SetSubnets":                     (*Server).setSubnets,
		"SetIpAddressType":               (*Server).setIPAddressType,
		"CreateTargetGroup":              (*Server).createTargetGroup,
		"DescribeTargetGroups":           (*Server).describeTargetGroups,
		"ModifyTargetGroup":              (*Server).modifyTargetGroup,
		"DeleteTargetGroup":              (*Server).deleteTargetGroup,
		"DescribeTargetGroupAttributes":  (*Server).describeTargetGroupAttributes,
		"ModifyTargetGroupAttributes":    (*Server).modifyTargetGroupAttributes,
		"RegisterTargets":                (*Server).registerTargets,
		"DeregisterTargets":              (*Server).deregisterTargets,
		"DescribeTargetHealth":           (*Server).describeTargetHealth,
		"CreateListener":                 (*Server).createListener,
		"DescribeListeners":              (*Server).describeListeners,
		"ModifyListener":                 (*Server).modifyListener,
		"DeleteListener":                 (*Server).deleteListener,
		"AddListenerCertificates":        (*Server).addListenerCertificates,
		"RemoveListenerCertificates":     (*Server).removeListenerCertificates,
		"DescribeListenerCertificates":   (*Server).describeListenerCertificates,
		"AddTags":                        (*Server).addTags,
		"RemoveTags":                     (*Server).removeTags,
		"DescribeTags":                   (*Server).describeTags,
	}
}

// validation is the AWS query services' error for input that breaks the
// model's constraints.
func validation(format string, args ...any) *apiError {
	return badRequest("ValidationError", format, args...)
}

// missing is the error for a required parameter left out, worded as the
// services' model validation words it.
func missing(member string) *apiError {
	return validation("1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", member)
}

// parseELBPaging reads Marker and PageSize (1..400).
func parseELBPaging(p params) (ec2Paging, *apiError) {
	var pg ec2Paging
	if ps := p.integer("PageSize"); ps.sent {
		if !ps.ok || ps.n < 1 || ps.n > 400 {
			return pg, validation("1 validation error detected: Value '%s' at 'pageSize' failed to satisfy constraint: Member must have value between 1 and 400", ps.raw)
		}
		pg.max = int(ps.n)
	}
	if m, ok := p.str("Marker"); ok {
		after, good := decodeToken(m)
		if !good {
			return pg, validation("Invalid marker: %s", m)
		}
		pg.after = after
	}
	return pg, nil
}

// readELBTags reads Tags.member.N.Key/Value, refusing duplicate keys and
// more than maxTags.
func readELBTags(p params) (map[string]string, *apiError) {
	ts, _ := p.memberStructs("Tags")
	if len(ts) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, t := range ts {
		k, v := t.get("Key"), t.get("Value")
		if k == "" {
			return nil, missing("tags.member.key")
		}
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			return nil, validation("Tag keys starting with 'aws:' are reserved for internal use")
		}
		if _, dup := out[k]; dup {
			return nil, badRequest("DuplicateTagKeys", "Tag key '%s' specified more than once", k)
		}
		out[k] = v
	}
	if len(out) > maxTags {
		return nil, badRequest("TooManyTags", "The quota for the number of tags that can be assigned to a load balancer has been reached")
	}
	return out, nil
}

var lbNameChars = regexp.MustCompile(`^[A-Za-z0-9-]+$`)

func checkLBName(name string) *apiError {
	switch {
	case name == "":
		return missing("name")
	case len(name) > 32:
		return validation("The load balancer name '%s' cannot be longer than '32' characters", name)
	case !lbNameChars.MatchString(name):
		return validation("The load balancer name '%s' can only contain characters that are alphanumeric characters and hyphens(-)", name)
	case strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
		return validation("The load balancer name '%s' cannot begin or end with '-'", name)
	case strings.HasPrefix(strings.ToLower(name), "internal-"):
		return validation("The load balancer name '%s' cannot begin with 'internal-'", name)
	}
	return nil
}

func (s *Server) lbARN(lbType, name, id string) string {
	short := map[string]string{"network": "net", "application": "app", "gateway": "gwy"}[lbType]
	return "arn:aws:elasticloadbalancing:" + s.region + ":" + s.account + ":loadbalancer/" + short + "/" + name + "/" + id
}

// lookupLBLocked finds a load balancer by ARN: a malformed ARN is a
// ValidationError, an unknown one LoadBalancerNotFound.
func (s *Server) lookupLBLocked(arn string) (*lbRec, *apiError) {
	if arn == "" {
		return nil, missing("loadBalancerArn")
	}
	if !lbARNPattern.MatchString(arn) {
		return nil, validation("'%s' is not a valid load balancer ARN", arn)
	}
	lb := s.elb.lbs[arn]
	if lb == nil {
		return nil, badRequest("LoadBalancerNotFound", "One or more load balancers not found")
	}
	return lb, nil
}

func (s *Server) createLoadBalancer(c *call) (any, *apiError) {
	name := c.p.get("Name")
	if err := checkLBName(name); err != nil {
		return nil, err
	}
	lbType := cmp.Or(c.p.get("Type"), "application")
	if !slices.Contains([]string{"application", "network", "gateway"}, lbType) {
		return nil, validation("1 validation error detected: Value '%s' at 'type' failed to satisfy constraint: Member must satisfy enum value set: [application, network, gateway]", lbType)
	}
	scheme := cmp.Or(c.p.get("Scheme"), "internet-facing")
	if scheme != "internet-facing" && scheme != "internal" {
		return nil, validation("1 validation error detected: Value '%s' at 'scheme' failed to satisfy constraint: Member must satisfy enum value set: [internal, internet-facing]", scheme)
	}
	ipType := cmp.Or(c.p.get("IpAddressType"), "ipv4")
	if !slices.Contains([]string{"ipv4", "dualstack", "dualstack-without-public-ipv4"}, ipType) {
		return nil, validation("1 validation error detected: Value '%s' at 'ipAddressType' failed to satisfy constraint: Member must satisfy enum value set: [dualstack, ipv4, dualstack-without-public-ipv4]", ipType)
	}
	subnets, err := s.readLBSubnetsLocked(c.p, lbType, scheme, ipType)
	if err != nil {
		return nil, err
	}
	vpc := s.ec2.subnets[subnets[0].SubnetID].VPCID
	sgs, sgsSent := c.p.members("SecurityGroups")
	if err := s.checkLBSecurityGroupsLocked(sgs, vpc); err != nil {
		return nil, err
	}
	if lbType == "application" && !sgsSent {
		sgs = []string{s.ec2.vpcs[vpc].DefaultSecurityGroupID}
	}
	if lbType == "gateway" && len(sgs) > 0 {
		return nil, badRequest("InvalidConfigurationRequest", "Security groups are not supported for load balancers with type 'gateway'")
	}
	tags, err := readELBTags(c.p)
	if err != nil {
		return nil, err
	}

	// Creating the same load balancer again answers with the existing
	// one; the same name with other settings is a conflict.
	if lb := s.lbByNameLocked(name); lb != nil {
		same := lb.Type == lbType && lb.Scheme == scheme && lb.IPAddressType == ipType &&
			sameSet(lb.SecurityGroups, sgs) && sameSubnets(lb.Subnets, subnets)
		if !same {
			return nil, badRequest("DuplicateLoadBalancerName", "A load balancer with the same name '%s' exists, but with different settings", name)
		}
		return &xmlLoadBalancers{LoadBalancers: []xmlLoadBalancer{s.lbXMLLocked(lb)}}, nil
	}

	if err := s.addressesFreeLocked(subnets); err != nil {
		return nil, err
	}

	id := s.hexID(16)
	lb := &lbRec{LoadBalancer: LoadBalancer{
		ARN: s.lbARN(lbType, name, id), Name: name, Type: lbType, Scheme: scheme,
		VPCID: vpc, IPAddressType: ipType, Subnets: subnets, SecurityGroups: sgs,
		CanonicalHostedZoneID: s.hostedZoneLocked(lbType),
		Attributes:            defaultLBAttributes(lbType, scheme),
		Tags:                  tags,
		CreatedTime:           c.now.UTC().Truncate(time.Millisecond),
	}, seq: s.nextSeq()}
	lb.DNSName = s.lbDNSNameLocked(lbType, scheme, name)
	s.elb.lbs[lb.ARN] = lb
	s.stats.LoadBalancers.created()
	x := s.lbXMLLocked(lb)
	x.State = xmlLBState{Code: LoadBalancerStateProvisioning}
	return &xmlLoadBalancers{LoadBalancers: []xmlLoadBalancer{x}}, nil
}

func (s *Server) lbByNameLocked(name string) *lbRec {
	for _, lb := range s.elb.lbs {
		if lb.Name == name {
			return lb
		}
	}
	return nil
}

func (s *Server) lbDNSNameLocked(lbType, scheme, name string) string {
	if lbType == "network" || lbType == "gateway" {
		return name + "-" + s.hexID(16) + ".elb." + s.region + ".amazonaws.com"
	}
	n := strconv.Itoa(1000000000 + s.rng.IntN(999999999))
	prefix := ""
	if scheme == "internal" {
		prefix = "internal-"
	}
	return prefix + name + "-" + n + "." + s.region + ".elb.amazonaws.com"
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func sameSubnets(a, b []LoadBalancerSubnet) bool {
	key := func(xs []LoadBalancerSubnet) []string {
		var out []string
		for _, x := range xs {
			out = append(out, x.SubnetID+"/"+x.AllocationID+"/"+x.PrivateIPv4Address+"/"+x.IPv6Address)
		}
		return out
	}
	return sameSet(key(a), key(b))
}

// readLBSubnetsLocked reads Subnets or SubnetMappings and checks them: all
// known, in one VPC, one per zone, enough zones, addresses that fit the
// scheme.
func (s *Server) readLBSubnetsLocked(p params, lbType, scheme, ipType string) ([]LoadBalancerSubnet, *apiError) {
	ids, _ := p.members("Subnets")
	maps, _ := p.memberStructs("SubnetMappings")
	if len(ids) > 0 && len(maps) > 0 {
		return nil, validation("You can specify subnets or subnet mappings, not both")
	}
	var out []LoadBalancerSubnet
	for _, id := range ids {
		out = append(out, LoadBalancerSubnet{SubnetID: id})
	}
	for _, m := range maps {
		out = append(out, LoadBalancerSubnet{
			SubnetID: m.get("SubnetId"), AllocationID: m.get("AllocationId"),
			PrivateIPv4Address: m.get("PrivateIPv4Address"), IPv6Address: m.get("IPv6Address"),
		})
	}
	if len(out) == 0 {
		return nil, validation("At least one subnet must be specified")
	}
	vpc := ""
	zones := map[string]bool{}
	for k := range out {
		m := &out[k]
		sub := s.ec2.subnets[m.SubnetID]
		if sub == nil {
			return nil, badRequest("SubnetNotFound", "The subnet ID '%s' is not valid", m.SubnetID)
		}
		if vpc == "" {
			vpc = sub.VPCID
		} else if sub.VPCID != vpc {
			return nil, badRequest("InvalidConfigurationRequest", "The subnets '%s' and '%s' are in different VPCs", out[0].SubnetID, m.SubnetID)
		}
		if zones[sub.AvailabilityZone] {
			return nil, badRequest("InvalidConfigurationRequest", "A load balancer cannot be attached to multiple subnets in the same Availability Zone")
		}
		zones[sub.AvailabilityZone] = true
		m.ZoneName = sub.AvailabilityZone
		if m.AllocationID != "" {
			if lbType != "network" || scheme != "internet-facing" {
				return nil, badRequest("InvalidConfigurationRequest", "Elastic IP addresses can only be assigned to internet-facing Network Load Balancers")
			}
			if !validID("eipalloc", m.AllocationID) {
				return nil, badRequest("AllocationIdNotFound", "The allocation ID '%s' does not exist", m.AllocationID)
			}
			m.IPAddress = s.eipAddress(m.AllocationID)
		}
		if m.PrivateIPv4Address != "" {
			if lbType != "network" || scheme != "internal" {
				return nil, badRequest("InvalidConfigurationRequest", "Private IPv4 addresses can only be assigned to internal Network Load Balancers")
			}
			a, err := netip.ParseAddr(m.PrivateIPv4Address)
			if err != nil || !mustPrefix(sub.CIDRBlock).Contains(a) {
				return nil, badRequest("InvalidConfigurationRequest", "Private IPv4 address '%s' is not in the CIDR of subnet '%s'", m.PrivateIPv4Address, m.SubnetID)
			}
		}
		if ipType != "ipv4" && len(sub.IPv6CIDRBlocks) == 0 {
			return nil, badRequest("InvalidSubnet", "Subnet '%s' does not have an IPv6 CIDR block, which a dualstack load balancer needs", m.SubnetID)
		}
	}
	if lbType == "application" && len(zones) < 2 {
		return nil, validation("At least two subnets in two different Availability Zones must be specified")
	}
	return out, nil
}

// addressesFreeLocked refuses Elastic IP allocations and private
// addresses another load balancer already holds: an address is one load
// balancer's at a time, and ELBv2 answers ResourceInUse.
func (s *Server) addressesFreeLocked(subnets []LoadBalancerSubnet) *apiError {
	for _, lb := range s.elb.lbs {
		for _, held := range lb.Subnets {
			for _, m := range subnets {
				if m.AllocationID != "" && m.AllocationID == held.AllocationID {
					return badRequest("ResourceInUse", "The allocation IDs are not available for use")
				}
				if m.PrivateIPv4Address != "" && m.PrivateIPv4Address == held.PrivateIPv4Address && m.SubnetID == held.SubnetID {
					return badRequest("ResourceInUse", "The private IPv4 address '%s' is already in use", m.PrivateIPv4Address)
				}
			}
		}
	}
	return nil
}

// eipAddress makes up a stable public address for an Elastic IP
// allocation id.
func (s *Server) eipAddress(alloc string) string {
	h := 0
	for _, c := range alloc {
		h = h*31 + int(c)
	}
	h &= 0xffff
	return "34.240." + strconv.Itoa(h>>8) + "." + strconv.Itoa(1+h&0xfe)
}

func (s *Server) checkLBSecurityGroupsLocked(ids []string, vpc string) *apiError {
	for _, id := range ids {
		g := s.sgLocked(id)
		if g == nil || g.vpc != vpc {
			return badRequest("InvalidSecurityGroup", "Security group '%s' does not exist in VPC '%s'", id, vpc)
		}
	}
	if len(ids) > 5 {
		return badRequest("InvalidConfigurationRequest", "A load balancer can have at most 5 security groups")
	}
	return nil
}

func (s *Server) lbXMLLocked(lb *lbRec) xmlLoadBalancer {
	x := xmlLoadBalancer{
		LoadBalancerArn: lb.ARN, DNSName: lb.DNSName, CanonicalHostedZoneID: lb.CanonicalHostedZoneID,
		CreatedTime: isoTime(lb.CreatedTime), LoadBalancerName: lb.Name, Scheme: lb.Scheme,
		VpcID: lb.VPCID, State: xmlLBState{Code: s.lbStateLocked(lb)}, Type: lb.Type,
		AvailabilityZones: []xmlLBZone{}, SecurityGroups: lb.SecurityGroups, IPAddressType: lb.IPAddressType,
	}
	if lb.Type == "network" && len(lb.SecurityGroups) > 0 {
		x.EnforceSGInbound = "on"
	}
	for _, m := range lb.Subnets {
		z := xmlLBZone{ZoneName: m.ZoneName, SubnetID: m.SubnetID}
		if lb.Type == "network" {
			addrs := []xmlLBAddress{}
			if m.AllocationID != "" || m.PrivateIPv4Address != "" || m.IPv6Address != "" {
				addrs = append(addrs, xmlLBAddress{IPAddress: m.IPAddress, AllocationID: m.AllocationID, PrivateIPv4Address: m.PrivateIPv4Address, IPv6Address: m.IPv6Address})
			}
			z.LoadBalancerAddresses = &addrs
		}
		x.AvailabilityZones = append(x.AvailabilityZones, z)
	}
	return x
}

func (s *Server) describeLoadBalancers(c *call) (any, *apiError) {
	arns, _ := c.p.members("LoadBalancerArns")
	names, _ := c.p.members("Names")
	if len(arns) > 0 && len(names) > 0 {
		return nil, validation("Load balancer names and load balancer ARNs cannot be specified at the same time")
	}
	if len(arns) > 20 || len(names) > 20 {
		return nil, validation("A maximum of 20 load balancers can be specified")
	}
	pg, err := parseELBPaging(c.p)
	if err != nil {
		return nil, err
	}
	var sel []*lbRec
	switch {
	case len(arns) > 0:
		for _, a := range arns {
			lb, err := s.lookupLBLocked(a)
			if err != nil {
				return nil, err
			}
			sel = append(sel, lb)
		}
	case len(names) > 0:
		var notFound []string
		for _, n := range names {
			lb := s.lbByNameLocked(n)
			if lb == nil {
				notFound = append(notFound, n)
				continue
			}
			sel = append(sel, lb)
		}
		if len(notFound) > 0 {
			return nil, badRequest("LoadBalancerNotFound", "Load balancers '[%s]' not found", strings.Join(notFound, ", "))
		}
	default:
		sel = sortedBySeq(s.elb.lbs, func(r *lbRec) int { return r.seq })
	}
	slices.SortFunc(sel, func(a, b *lbRec) int { return a.seq - b.seq })
	sel = slices.Compact(sel)
	sel, next := page(pg, sel, func(r *lbRec) int { return r.seq }, one)
	out := &xmlLoadBalancers{LoadBalancers: []xmlLoadBalancer{}, NextMarker: next}
	for _, lb := range sel {
		out.LoadBalancers = append(out.LoadBalancers, s.lbXMLLocked(lb))
	}
	return out, nil
}

// deleteLoadBalancer deletes the load balancer and its listeners. An ARN
// that names no load balancer succeeds, as the API reference says.
func (s *Server) deleteLoadBalancer(c *call) (any, *apiError) {
	arn := c.p.get("LoadBalancerArn")
	lb, err := s.lookupLBLocked(arn)
	if err != nil {
		if err.code == "LoadBalancerNotFound" {
			return nil, nil
		}
		return nil, err
	}
	if lb.Attributes["deletion_protection.enabled"] == "true" {
		return nil, badRequest("OperationNotPermitted", "Load balancer '%s' cannot be deleted because deletion protection is enabled", arn)
	}
	for id, l := range s.elb.listeners {
		if l.LoadBalancerARN == arn {
			delete(s.elb.listeners, id)
			s.stats.Listeners.deleted()
		}
	}
	delete(s.elb.lbs, arn)
	if s.ec2.linger > 0 {
		for _, id := range lb.SecurityGroups {
			s.ec2.lingering[id] = s.now().Add(s.ec2.linger)
		}
	}
	s.stats.LoadBalancers.deleted()
	return nil, nil
}

func (s *Server) describeLoadBalancerAttributes(c *call) (any, *apiError) {
	lb, err := s.lookupLBLocked(c.p.get("LoadBalancerArn"))
	if err != nil {
		return nil, err
	}
	return &xmlAttributes{Attributes: xmlKVs(lb.Attributes)}, nil
}

func (s *Server) modifyLoadBalancerAttributes(c *call) (any, *apiError) {
	lb, err := s.lookupLBLocked(c.p.get("LoadBalancerArn"))
	if err != nil {
		return nil, err
	}
	attrs, _ := c.p.memberStructs("Attributes")
	if len(attrs) == 0 {
		return nil, missing("attributes")
	}
	next := cloneTags(lb.Attributes)
	for _, a := range attrs {
		k, v := a.get("Key"), a.get("Value")
		if _, ok := lb.Attributes[k]; !ok {
			return nil, validation("Load balancer attribute key '%s' is not recognized", k)
		}
		if err := checkAttributeValue(k, v, "Load balancer"); err != nil {
			return nil, err
		}
		next[k] = v
	}
	lb.Attributes = next
	return &xmlAttributes{Attributes: xmlKVs(lb.Attributes)}, nil
}

func (s *Server) setSecurityGroups(c *call) (any, *apiError) {
	lb, err := s.lookupLBLocked(c.p.get("LoadBalancerArn"))
	if err != nil {
		return nil, err
	}
	sgs, sent := c.p.members("SecurityGroups")
	if !sent {
		return nil, missing("securityGroups")
	}
	switch {
	case lb.Type == "gateway":
		return nil, badRequest("InvalidConfigurationRequest", "Security groups are not supported for load balancers with type 'gateway'")
	case lb.Type == "network" && len(lb.SecurityGroups) == 0 && len(sgs) > 0:
		return nil, badRequest("InvalidConfigurationRequest", "You cannot set security groups on a Network Load Balancer which was created without any security groups.")
	case lb.Type == "network" && len(lb.SecurityGroups) > 0 && len(sgs) == 0:
		return nil, validation("You cannot remove all security groups from a Network Load Balancer which was created with security groups.")
	case lb.Type == "application" && len(sgs) == 0:
		return nil, validation("At least one security group must be specified for an Application Load Balancer")
	}
	if err := s.checkLBSecurityGroupsLocked(sgs, lb.VPCID); err != nil {
		return nil, err
	}
	lb.SecurityGroups = slices.Clone(sgs)
	out := &xmlSetSecurityGroups{SecurityGroupIDs: slices.Clone(sgs)}
	if lb.Type == "network" {
		out.EnforceSGInbound = "on"
	}
	return out, nil
}

// setSubnets replaces a load balancer's subnets (and, if given, its IP
// address type), checked as CreateLoadBalancer checks them: known, in the
// load balancer's VPC, one per zone, addresses that fit the scheme.
func (s *Server) setSubnets(c *call) (any, *apiError) {
	lb, err := s.lookupLBLocked(c.p.get("LoadBalancerArn"))
	if err != nil {
		return nil, err
	}
	if lb.Type == "gateway" {
		return nil, badRequest("InvalidConfigurationRequest", "Subnets cannot be changed for load balancers with type 'gateway'")
	}
	ipType := cmp.Or(c.p.get("IpAddressType"), lb.IPAddressType)
	if err := checkIPAddressType(lb.Type, ipType); err != nil {
		return nil, err
	}
	subnets, err := s.readLBSubnetsLocked(c.p, lb.Type, lb.Scheme, ipType)
	if err != nil {
		return nil, err
	}
	for _, m := range subnets {
		if vpc := s.ec2.subnets[m.SubnetID].VPCID; vpc != lb.VPCID {
			return nil, badRequest("InvalidConfigurationRequest", "The subnet '%s' is not in the VPC '%s' of the load balancer", m.SubnetID, lb.VPCID)
		}
	}
	lb.Subnets, lb.IPAddressType = subnets, ipType
	return &xmlSetSubnets{AvailabilityZones: s.lbXMLLocked(lb).AvailabilityZones, IPAddressType: ipType}, nil
}

// setIPAddressType switches a load balancer between ipv4 and dualstack;
// dualstack needs IPv6 in every subnet.
func (s *Server) setIPAddressType(c *call) (any, *apiError) {
	lb, err := s.lookupLBLocked(c.p.get("LoadBalancerArn"))
	if err != nil {
		return nil, err
	}
	ipType, ok := c.p.str("IpAddressType")
	if !ok {
		return nil, missing("ipAddressType")
	}
	if err := checkIPAddressType(lb.Type, ipType); err != nil {
		return nil, err
	}
	if ipType != "ipv4" {
		for _, m := range lb.Subnets {
			if len(s.ec2.subnets[m.SubnetID].IPv6CIDRBlocks) == 0 {
				return nil, badRequest("InvalidSubnet", "Subnet '%s' does not have an IPv6 CIDR block, which a dualstack load balancer needs", m.SubnetID)
			}
		}
	}
	lb.IPAddressType = ipType
	return &xmlSetIPAddressType{IPAddressType: ipType}, nil
}

func checkIPAddressType(lbType, ipType string) *apiError {
	switch {
	case !slices.Contains([]string{"ipv4", "dualstack", "dualstack-without-public-ipv4"}, ipType):
		return validation("1 validation error detected: Value '%s' at 'ipAddressType' failed to satisfy constraint: Member must satisfy enum value set: [dualstack, ipv4, dualstack-without-public-ipv4]", ipType)
	case ipType == "dualstack-without-public-ipv4" && lbType != "application":
		return badRequest("InvalidConfigurationRequest", "IP address type 'dualstack-without-public-ipv4' is only supported for Application Load Balancers")
	}
	return nil
}

// Attributes. Each key has a kind of value the services check.

func defaultLBAttributes(lbType, scheme string) map[string]string {
	common := map[string]string{
		"access_logs.s3.enabled":      "false",
		"access_logs.s3.bucket":       "",
		"access_logs.s3.prefix":       "",
		"deletion_protection.enabled": "false",
		"zonal_shift.config.enabled":  "false",
	}
	switch lbType {
	case "network":
		common["load_balancing.cross_zone.enabled"] = "false"
		common["dns_record.client_routing_policy"] = "any_availability_zone"
		common["ipv6.deny_all_igw_traffic"] = strconv.FormatBool(scheme == "internal")
		common["secondary_ips.auto_assigned.per_subnet"] = "0"
	case "application":
		common["load_balancing.cross_zone.enabled"] = "true"
		common["idle_timeout.timeout_seconds"] = "60"
		common["client_keep_alive.seconds"] = "3600"
		common["routing.http.desync_mitigation_mode"] = "defensive"
		common["routing.http.drop_invalid_header_fields.enabled"] = "false"
		common["routing.http.preserve_host_header.enabled"] = "false"
		common["routing.http.x_amzn_tls_version_and_cipher_suite.enabled"] = "false"
		common["routing.http.xff_client_port.enabled"] = "false"
		common["routing.http.xff_header_processing.mode"] = "append"
		common["routing.http2.enabled"] = "true"
		common["waf.fail_open.enabled"] = "false"
		common["connection_logs.s3.enabled"] = "false"
		common["connection_logs.s3.bucket"] = ""
		common["connection_logs.s3.prefix"] = ""
	default:
		common["load_balancing.cross_zone.enabled"] = "false"
	}
	return common
}

// checkAttributeValue checks booleans and numbers where the key says so.
func checkAttributeValue(key, value, what string) *apiError {
	bad := func() *apiError {
		return validation("%s attribute value '%s' is not valid for key '%s'", what, value, key)
	}
	switch {
	case strings.HasSuffix(key, ".enabled") && key != "load_balancing.cross_zone.enabled":
		if value != "true" && value != "false" {
			return bad()
		}
	case key == "load_balancing.cross_zone.enabled":
		if value != "true" && value != "false" && !(what == "Target group" && value == "use_load_balancer_configuration") {
			return bad()
		}
	case strings.HasSuffix(key, "_seconds") || strings.HasSuffix(key, ".seconds") || strings.HasSuffix(key, ".count") || key == "secondary_ips.auto_assigned.per_subnet":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return bad()
		}
		if key == "deregistration_delay.timeout_seconds" && n > 3600 {
			return bad()
		}
	}
	return nil
}
