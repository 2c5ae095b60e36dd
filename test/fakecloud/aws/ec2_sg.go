package aws

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SecurityGroup is the fake's view of one security group, its rules grouped
// into permissions by protocol and port range as EC2 describes them.
type SecurityGroup struct {
	ID          string
	Name        string
	Description string
	VPCID       string // default: the default VPC
	Ingress     []IPPermission
	// Egress defaults, when AddSecurityGroup is given none, to the
	// allow-all rule EC2 gives every new VPC security group.
	Egress []IPPermission
	Tags   map[string]string
}

// IPPermission is a set of rules sharing a protocol and port range.
type IPPermission struct {
	Protocol string // "tcp", "udp", "icmp", "icmpv6", "-1" (all) or a number
	// FromPort and ToPort are the port range (ICMP type and code); -1 for
	// protocol "-1".
	FromPort, ToPort int32
	IPRanges         []IPRange
	IPv6Ranges       []IPRange
	Groups           []GroupPair
}

// IPRange is a CIDR source or destination of a rule.
type IPRange struct {
	CIDR        string
	Description string
}

// GroupPair is a security group source or destination of a rule.
type GroupPair struct {
	GroupID     string
	Description string
}

// sgRule is one rule: one protocol and port range, one peer.
type sgRule struct {
	id       string
	egress   bool
	protocol string
	from, to int32
	cidr4    string
	cidr6    string
	group    string
	desc     string
}

func (r sgRule) sameAs(o sgRule) bool {
	return r.egress == o.egress && r.protocol == o.protocol && r.from == o.from && r.to == o.to &&
		r.cidr4 == o.cidr4 && r.cidr6 == o.cidr6 && r.group == o.group
}

func (r sgRule) peer() string { return cmp.Or(r.cidr4, r.cidr6, r.group) }

type sgRec struct {
	id, name, desc, vpc string
	tags                map[string]string
	rules               []sgRule
	seq                 int
	builtin             bool // a VPC's "default" group
	// visibleAt is when a group created through the API shows in reads:
	// EC2 is eventually consistent, and a group just created may answer
	// InvalidGroup.NotFound for a while.
	visibleAt time.Time
}

// sgLocked is the group with id as reads see it: nil while it is
// unknown or not yet visible.
func (s *Server) sgLocked(id string) *sgRec {
	g := s.ec2.sgs[id]
	if g == nil || s.now().Before(g.visibleAt) {
		return nil
	}
	return g
}

// maxRulesPerGroup is EC2's default quota of inbound (and, separately,
// outbound) rules per security group.
const maxRulesPerGroup = 60

func (s *Server) addSecurityGroupLocked(name, desc, vpc string, tags map[string]string, builtin bool) *sgRec {
	g := &sgRec{
		id: s.ec2ID("sg"), name: name, desc: desc, vpc: vpc,
		tags: cloneTags(tags), seq: s.nextSeq(), builtin: builtin,
	}
	g.rules = []sgRule{{id: s.ec2ID("sgr"), egress: true, protocol: "-1", from: -1, to: -1, cidr4: "0.0.0.0/0"}}
	if builtin {
		g.rules = append(g.rules, sgRule{id: s.ec2ID("sgr"), protocol: "-1", from: -1, to: -1, group: g.id})
	} else {
		s.stats.SecurityGroups.created()
	}
	s.ec2.sgs[g.id] = g
	return g
}

// AddSecurityGroup adds a security group with the given rules and returns
// it with its id. It panics if the VPC does not exist.
func (s *Server) AddSecurityGroup(sg SecurityGroup) SecurityGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	vpc := cmp.Or(sg.VPCID, s.ec2.defaultVPC)
	if s.ec2.vpcs[vpc] == nil {
		panic("aws fake: AddSecurityGroup: no VPC " + vpc)
	}
	g := s.addSecurityGroupLocked(sg.Name, sg.Description, vpc, sg.Tags, false)
	if sg.Egress != nil {
		g.rules = nil
	}
	for _, dir := range []struct {
		perms  []IPPermission
		egress bool
	}{{sg.Ingress, false}, {sg.Egress, true}} {
		for _, p := range dir.perms {
			for _, r := range expandPermission(p, dir.egress) {
				r.id = s.ec2ID("sgr")
				g.rules = append(g.rules, r)
			}
		}
	}
	return s.sgViewLocked(g)
}

func expandPermission(p IPPermission, egress bool) []sgRule {
	proto, _ := normProtocol(p.Protocol)
	from, to := p.FromPort, p.ToPort
	if proto == "-1" {
		from, to = -1, -1
	}
	base := sgRule{egress: egress, protocol: proto, from: from, to: to}
	var out []sgRule
	for _, r := range p.IPRanges {
		x := base
		x.cidr4, x.desc = r.CIDR, r.Description
		out = append(out, x)
	}
	for _, r := range p.IPv6Ranges {
		x := base
		x.cidr6, x.desc = r.CIDR, r.Description
		out = append(out, x)
	}
	for _, g := range p.Groups {
		x := base
		x.group, x.desc = g.GroupID, g.Description
		out = append(out, x)
	}
	return out
}

// SecurityGroup returns a security group.
func (s *Server) SecurityGroup(id string) (SecurityGroup, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.ec2.sgs[id]
	if g == nil {
		return SecurityGroup{}, false
	}
	return s.sgViewLocked(g), true
}

// SecurityGroups returns every security group in creation order,
// including the VPCs' "default" ones.
func (s *Server) SecurityGroups() []SecurityGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SecurityGroup
	for _, g := range sortedBySeq(s.ec2.sgs, func(g *sgRec) int { return g.seq }) {
		out = append(out, s.sgViewLocked(g))
	}
	return out
}

func (s *Server) sgViewLocked(g *sgRec) SecurityGroup {
	return SecurityGroup{
		ID: g.id, Name: g.name, Description: g.desc, VPCID: g.vpc,
		Ingress: groupRules(g.rules, false),
		Egress:  groupRules(g.rules, true),
		Tags:    cloneTags(g.tags),
	}
}

// groupRules folds rules into permissions by protocol and port range, in
// the order the ranges first appear.
func groupRules(rules []sgRule, egress bool) []IPPermission {
	var out []IPPermission
	idx := map[string]int{}
	for _, r := range rules {
		if r.egress != egress {
			continue
		}
		key := r.protocol + "/" + strconv.Itoa(int(r.from)) + "/" + strconv.Itoa(int(r.to))
		k, ok := idx[key]
		if !ok {
			k = len(out)
			idx[key] = k
			out = append(out, IPPermission{Protocol: r.protocol, FromPort: r.from, ToPort: r.to})
		}
		p := &out[k]
		switch {
		case r.cidr4 != "":
			p.IPRanges = append(p.IPRanges, IPRange{CIDR: r.cidr4, Description: r.desc})
		case r.cidr6 != "":
			p.IPv6Ranges = append(p.IPv6Ranges, IPRange{CIDR: r.cidr6, Description: r.desc})
		default:
			p.Groups = append(p.Groups, GroupPair{GroupID: r.group, Description: r.desc})
		}
	}
	return out
}

func (s *Server) permissionsXMLLocked(perms []IPPermission) []xmlIPPermission {
	out := []xmlIPPermission{}
	for _, p := range perms {
		x := xmlIPPermission{IPProtocol: p.Protocol, Groups: []xmlGroupPair{}, IPRanges: []xmlIPRange{}, IPv6Ranges: []xmlIPv6Range{}}
		if p.Protocol != "-1" {
			from, to := p.FromPort, p.ToPort
			x.FromPort, x.ToPort = &from, &to
		}
		for _, r := range p.IPRanges {
			x.IPRanges = append(x.IPRanges, xmlIPRange{CidrIP: r.CIDR, Description: r.Description})
		}
		for _, r := range p.IPv6Ranges {
			x.IPv6Ranges = append(x.IPv6Ranges, xmlIPv6Range{CidrIPv6: r.CIDR, Description: r.Description})
		}
		for _, g := range p.Groups {
			x.Groups = append(x.Groups, xmlGroupPair{UserID: s.account, GroupID: g.GroupID, Description: g.Description})
		}
		out = append(out, x)
	}
	return out
}

func (s *Server) sgARN(id string) string {
	return "arn:aws:ec2:" + s.region + ":" + s.account + ":security-group/" + id
}

func (s *Server) sgXMLLocked(g *sgRec) xmlSecurityGroup {
	return xmlSecurityGroup{
		OwnerID: s.account, GroupID: g.id, GroupName: g.name, GroupDescription: g.desc, VpcID: g.vpc,
		IPPermissions:       s.permissionsXMLLocked(groupRules(g.rules, false)),
		IPPermissionsEgress: s.permissionsXMLLocked(groupRules(g.rules, true)),
		Tags:                xmlTags(g.tags),
		SecurityGroupArn:    s.sgARN(g.id),
	}
}

// normProtocol canonicalizes an IpProtocol as EC2 stores it.
func normProtocol(p string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(p)) {
	case "tcp", "6":
		return "tcp", true
	case "udp", "17":
		return "udp", true
	case "icmp", "1":
		return "icmp", true
	case "icmpv6", "58":
		return "icmpv6", true
	case "-1", "all":
		return "-1", true
	}
	if n, err := strconv.Atoi(p); err == nil && n >= 0 && n <= 255 {
		return p, true
	}
	return "", false
}

// readPermissions parses IpPermissions.N (or the legacy top-level
// IpProtocol/FromPort/ToPort/CidrIp) into single rules.
func (s *Server) readPermissionsLocked(p params, egress bool) ([]sgRule, *apiError) {
	perms := p.flatStructs("IpPermissions")
	if len(perms) == 0 && p.has("IpProtocol") {
		perms = []params{p}
	}
	var out []sgRule
	for _, pp := range perms {
		proto, ok := normProtocol(pp.get("IpProtocol"))
		if !ok {
			return nil, badRequest("InvalidParameterValue", "Invalid value '%s' for IP protocol. Unknown protocol.", pp.get("IpProtocol"))
		}
		from, to := int32(-1), int32(-1)
		if proto != "-1" {
			f, t := pp.integer("FromPort"), pp.integer("ToPort")
			if proto == "tcp" || proto == "udp" {
				if !f.sent || !t.sent {
					return nil, badRequest("InvalidParameterValue", "Invalid value 'Must specify both from and to ports with TCP/UDP.' for portRange.")
				}
				if !f.ok || !t.ok || f.n < 0 || t.n > 65535 || f.n > t.n {
					return nil, badRequest("InvalidParameterValue", "Invalid value '%s-%s' for portRange. Must be in the range 0-65535 with from port <= to port.", f.raw, t.raw)
				}
			}
			if f.sent && f.ok {
				from = int32(f.n)
			}
			if t.sent && t.ok {
				to = int32(t.n)
			}
		}
		base := sgRule{egress: egress, protocol: proto, from: from, to: to}
		ranges := pp.flatStructs("IpRanges")
		if pp.prefix == "" && p.has("CidrIp") { // legacy form
			ranges = []params{{v: p.v, prefix: ""}}
		}
		for _, r := range ranges {
			c, err := normCIDR(r.get("CidrIp"), false)
			if err != nil {
				return nil, err
			}
			x := base
			x.cidr4, x.desc = c, r.get("Description")
			out = append(out, x)
		}
		for _, r := range pp.flatStructs("Ipv6Ranges") {
			c, err := normCIDR(r.get("CidrIpv6"), true)
			if err != nil {
				return nil, err
			}
			x := base
			x.cidr6, x.desc = c, r.get("Description")
			out = append(out, x)
		}
		for _, r := range pp.flatStructs("Groups") {
			id := r.get("GroupId")
			if id == "" && r.get("GroupName") != "" {
				if g := s.sgByNameLocked(r.get("GroupName"), s.ec2.defaultVPC); g != nil {
					id = g.id
				}
			}
			if s.sgLocked(id) == nil {
				return nil, badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist", cmp.Or(id, r.get("GroupName")))
			}
			x := base
			x.group, x.desc = id, r.get("Description")
			out = append(out, x)
		}
	}
	return out, nil
}

func normCIDR(c string, v6 bool) (string, *apiError) {
	p, err := netip.ParsePrefix(c)
	if err != nil || p.Addr().Is6() != v6 || p.Addr().Zone() != "" {
		return "", badRequest("InvalidParameterValue", "CIDR block %s is malformed", c)
	}
	return p.Masked().String(), nil
}

func (s *Server) sgByNameLocked(name, vpc string) *sgRec {
	for _, g := range s.ec2.sgs {
		if g.name == name && g.vpc == vpc {
			return g
		}
	}
	return nil
}

// lookupGroupLocked finds the group of a request: GroupId, or GroupName in
// the default VPC.
func (s *Server) lookupGroupLocked(p params) (*sgRec, *apiError) {
	if id, ok := p.str("GroupId"); ok {
		if !validID("sg", id) {
			return nil, badRequest("InvalidGroupId.Malformed", "Invalid id: \"%s\" (expecting \"sg-...\")", id)
		}
		g := s.sgLocked(id)
		if g == nil {
			return nil, badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
		return g, nil
	}
	if name, ok := p.str("GroupName"); ok {
		g := s.sgByNameLocked(name, s.ec2.defaultVPC)
		if g == nil {
			return nil, badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'", name, s.ec2.defaultVPC)
		}
		return g, nil
	}
	return nil, badRequest("MissingParameter", "Either groupId or groupName must be specified")
}

func (s *Server) createSecurityGroup(c *call) (any, *apiError) {
	name, ok := c.p.str("GroupName")
	if !ok || name == "" {
		return nil, badRequest("MissingParameter", "The request must contain the parameter groupName")
	}
	desc, ok := c.p.str("GroupDescription")
	if !ok || desc == "" {
		return nil, badRequest("MissingParameter", "The request must contain the parameter groupDescription")
	}
	if len(name) > 255 || len(desc) > 255 {
		return nil, badRequest("InvalidParameterValue", "Value for parameter groupName or groupDescription is too long. The maximum length is 255 characters.")
	}
	if strings.HasPrefix(strings.ToLower(name), "sg-") {
		return nil, badRequest("InvalidParameterValue", "Group names may not be in the format sg-*")
	}
	vpc, ok := c.p.str("VpcId")
	if !ok {
		if s.ec2.defaultVPC == "" || s.ec2.vpcs[s.ec2.defaultVPC] == nil {
			return nil, badRequest("VPCIdNotSpecified", "No default VPC for this user")
		}
		vpc = s.ec2.defaultVPC
	}
	if s.ec2.vpcs[vpc] == nil {
		return nil, badRequest("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", vpc)
	}
	if name == "default" || s.sgByNameLocked(name, vpc) != nil {
		return nil, badRequest("InvalidGroup.Duplicate", "The security group '%s' already exists for VPC '%s'", name, vpc)
	}
	tags, err := tagsFor(c.p, "security-group")
	if err != nil {
		return nil, err
	}
	g := s.addSecurityGroupLocked(name, desc, vpc, tags, false)
	g.visibleAt = s.now().Add(s.ec2.consistency)
	return &xmlCreateSecurityGroup{Return: true, GroupID: g.id, SecurityGroupArn: s.sgARN(g.id), Tags: xmlTags(g.tags)}, nil
}

// tagsFor reads the TagSpecification tags for one resource type; tags for
// other resource types are refused.
func tagsFor(p params, resourceType string) (map[string]string, *apiError) {
	specs := p.tagSpecs()
	var tags map[string]string
	for rt, ts := range specs {
		if rt != resourceType {
			return nil, badRequest("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", rt)
		}
		if tags == nil {
			tags = map[string]string{}
		}
		for _, t := range ts {
			if err := checkTag(t.key, t.value); err != nil {
				return nil, err
			}
			tags[t.key] = t.value
		}
	}
	return tags, nil
}

var securityGroupFilters = []string{
	"group-id", "group-name", "vpc-id", "description", "owner-id",
	"ip-permission.cidr", "ip-permission.ipv6-cidr", "ip-permission.from-port",
	"ip-permission.to-port", "ip-permission.protocol", "ip-permission.group-id",
	"egress.ip-permission.cidr", "egress.ip-permission.protocol",
}

func (g *sgRec) fields(name string) []string {
	collect := func(egress bool, f func(sgRule) string) []string {
		var out []string
		for _, r := range g.rules {
			if r.egress == egress {
				if v := f(r); v != "" {
					out = append(out, v)
				}
			}
		}
		return out
	}
	switch name {
	case "group-id":
		return []string{g.id}
	case "group-name":
		return []string{g.name}
	case "vpc-id":
		return []string{g.vpc}
	case "description":
		return []string{g.desc}
	case "ip-permission.cidr":
		return collect(false, func(r sgRule) string { return r.cidr4 })
	case "ip-permission.ipv6-cidr":
		return collect(false, func(r sgRule) string { return r.cidr6 })
	case "ip-permission.group-id":
		return collect(false, func(r sgRule) string { return r.group })
	case "ip-permission.protocol":
		return collect(false, func(r sgRule) string { return r.protocol })
	case "ip-permission.from-port":
		return collect(false, func(r sgRule) string { return strconv.Itoa(int(r.from)) })
	case "ip-permission.to-port":
		return collect(false, func(r sgRule) string { return strconv.Itoa(int(r.to)) })
	case "egress.ip-permission.cidr":
		return collect(true, func(r sgRule) string { return r.cidr4 })
	case "egress.ip-permission.protocol":
		return collect(true, func(r sgRule) string { return r.protocol })
	}
	return nil
}

func (s *Server) describeSecurityGroups(c *call) (any, *apiError) {
	fs := c.p.filters()
	if err := checkFilters(fs, securityGroupFilters); err != nil {
		return nil, err
	}
	ids, names := c.p.flat("GroupId"), c.p.flat("GroupName")
	pg, err := parseEC2Paging(c.p, len(ids)+len(names) > 0, "groupIds")
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range ids {
		if !validID("sg", id) {
			return nil, badRequest("InvalidGroupId.Malformed", "Invalid id: \"%s\" (expecting \"sg-...\")", id)
		}
		if s.sgLocked(id) == nil {
			return nil, badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
		want[id] = true
	}
	for _, n := range names {
		g := s.sgByNameLocked(n, s.ec2.defaultVPC)
		if g == nil {
			return nil, badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'", n, s.ec2.defaultVPC)
		}
		want[g.id] = true
	}
	var sel []*sgRec
	for _, g := range sortedBySeq(s.ec2.sgs, func(g *sgRec) int { return g.seq }) {
		if (len(want) == 0 || want[g.id]) && s.sgLocked(g.id) != nil && matches(fs, g.fields, g.tags) {
			sel = append(sel, g)
		}
	}
	sel, next := page(pg, sel, func(g *sgRec) int { return g.seq }, one)
	out := &xmlDescribeSecurityGroups{Groups: []xmlSecurityGroup{}, NextToken: next}
	for _, g := range sel {
		out.Groups = append(out.Groups, s.sgXMLLocked(g))
	}
	return out, nil
}

func (s *Server) deleteSecurityGroup(c *call) (any, *apiError) {
	g, err := s.lookupGroupLocked(c.p)
	if err != nil {
		return nil, err
	}
	if g.builtin {
		return nil, badRequest("CannotDelete", "the specified group: \"%s\" name: \"%s\" cannot be deleted by a user", g.id, g.name)
	}
	if s.sgInUseLocked(g.id) || s.now().Before(s.ec2.lingering[g.id]) {
		return nil, badRequest("DependencyViolation", "resource %s has a dependent object", g.id)
	}
	delete(s.ec2.lingering, g.id)
	delete(s.ec2.sgs, g.id)
	s.stats.SecurityGroups.deleted()
	return &xmlDeleteSecurityGroup{Return: true, GroupID: g.id}, nil
}

// sgInUseLocked reports whether a load balancer, a live instance or
// another group's rule refers to the group.
func (s *Server) sgInUseLocked(id string) bool {
	if s.classicUsesGroupLocked(id) {
		return true
	}
	for _, lb := range s.elb.lbs {
		if slices.Contains(lb.SecurityGroups, id) {
			return true
		}
	}
	for _, i := range s.ec2.instances {
		if i.State != InstanceStateTerminated && slices.Contains(i.SecurityGroupIDs, id) {
			return true
		}
	}
	for _, other := range s.ec2.sgs {
		if other.id == id {
			continue
		}
		for _, r := range other.rules {
			if r.group == id {
				return true
			}
		}
	}
	return false
}

func (s *Server) authorizeIngress(c *call) (any, *apiError) { return s.authorize(c, false) }
func (s *Server) authorizeEgress(c *call) (any, *apiError)  { return s.authorize(c, true) }
func (s *Server) revokeIngress(c *call) (any, *apiError)    { return s.revoke(c, false) }
func (s *Server) revokeEgress(c *call) (any, *apiError)     { return s.revoke(c, true) }

func (s *Server) authorize(c *call, egress bool) (any, *apiError) {
	if egress && !c.p.has("GroupId") {
		return nil, badRequest("MissingParameter", "The request must contain the parameter groupId")
	}
	g, err := s.lookupGroupLocked(c.p)
	if err != nil {
		return nil, err
	}
	rules, err := s.readPermissionsLocked(c.p, egress)
	if err != nil {
		return nil, err
	}
	if len(rules) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter ipPermissions")
	}
	for k, r := range rules {
		dup := slices.ContainsFunc(g.rules, r.sameAs) || slices.ContainsFunc(rules[:k], r.sameAs)
		if dup {
			return nil, badRequest("InvalidPermission.Duplicate", "the specified rule %s already exists", describeRule(r))
		}
	}
	count := 0
	for _, r := range g.rules {
		if r.egress == egress {
			count++
		}
	}
	if count+len(rules) > maxRulesPerGroup {
		return nil, badRequest("RulesPerSecurityGroupLimitExceeded", "The maximum number of rules per security group has been reached.")
	}
	out := &xmlAuthorizeIngress{Return: true}
	for _, r := range rules {
		r.id = s.ec2ID("sgr")
		g.rules = append(g.rules, r)
		out.Rules = append(out.Rules, s.ruleXML(g.id, r))
	}
	return out, nil
}

func (s *Server) ruleXML(group string, r sgRule) xmlSecurityGroupRule {
	x := xmlSecurityGroupRule{
		SecurityGroupRuleID: r.id, GroupID: group, GroupOwnerID: s.account, IsEgress: r.egress,
		IPProtocol: r.protocol, FromPort: r.from, ToPort: r.to, CidrIPv4: r.cidr4, CidrIPv6: r.cidr6,
		Description:          r.desc,
		SecurityGroupRuleArn: "arn:aws:ec2:" + s.region + ":" + s.account + ":security-group-rule/" + r.id,
	}
	if r.group != "" {
		x.ReferencedGroupInfo = &xmlReferencedSG{GroupID: r.group, UserID: s.account}
	}
	return x
}

// describeRule renders a rule the way EC2's duplicate error does:
// "peer: 0.0.0.0/0, TCP, from port: 80, to port: 80, ALLOW".
func describeRule(r sgRule) string {
	var b strings.Builder
	b.WriteString(`"peer: ` + r.peer() + ", ")
	if r.protocol == "-1" {
		b.WriteString("ALL")
	} else {
		b.WriteString(strings.ToUpper(r.protocol) + fmt.Sprintf(", from port: %d, to port: %d", r.from, r.to))
	}
	b.WriteString(`, ALLOW"`)
	return b.String()
}

func (s *Server) revoke(c *call, egress bool) (any, *apiError) {
	g, err := s.lookupGroupLocked(c.p)
	if err != nil {
		return nil, err
	}
	var targets []sgRule
	if ruleIDs := c.p.flat("SecurityGroupRuleId"); len(ruleIDs) > 0 {
		for _, id := range ruleIDs {
			k := slices.IndexFunc(g.rules, func(r sgRule) bool { return r.id == id && r.egress == egress })
			if k < 0 {
				return nil, badRequest("InvalidSecurityGroupRuleId.NotFound", "The security group rule ID '%s' does not exist", id)
			}
			targets = append(targets, g.rules[k])
		}
	} else {
		targets, err = s.readPermissionsLocked(c.p, egress)
		if err != nil {
			return nil, err
		}
	}
	if len(targets) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter ipPermissions")
	}
	var unknown []sgRule
	var found []sgRule
	for _, t := range targets {
		k := slices.IndexFunc(g.rules, t.sameAs)
		if k < 0 {
			unknown = append(unknown, t)
			continue
		}
		found = append(found, g.rules[k])
	}
	// Outside the default VPC a rule that does not exist fails the whole
	// call; in the default VPC the others are revoked and the unknown ones
	// reported.
	if len(unknown) > 0 && g.vpc != s.ec2.defaultVPC {
		return nil, badRequest("InvalidPermission.NotFound", "The specified rule does not exist in this security group.")
	}
	out := &xmlRevokeIngress{Return: true}
	for _, f := range found {
		g.rules = slices.DeleteFunc(g.rules, func(r sgRule) bool { return r.id == f.id })
		out.RevokedRules = append(out.RevokedRules, xmlRevokedSGRule{
			SecurityGroupRuleID: f.id, GroupID: g.id, IsEgress: f.egress, IPProtocol: f.protocol,
			FromPort: f.from, ToPort: f.to, CidrIPv4: f.cidr4, CidrIPv6: f.cidr6, ReferencedGroupID: f.group, Description: f.desc,
		})
	}
	if len(unknown) > 0 {
		out.Unknown = s.permissionsXMLLocked(groupRules(unknown, egress))
	}
	return out, nil
}

// checkGroupsLocked checks the groups given to an instance
// (ModifyInstanceAttribute GroupId.N) exist in its VPC.
func (s *Server) checkGroupsLocked(ids []string, vpc string) *apiError {
	for _, id := range ids {
		g := s.sgLocked(id)
		if g == nil {
			return badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
		if g.vpc != vpc {
			return badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist in VPC '%s'", id, vpc)
		}
	}
	return nil
}
