package aws

import (
	"cmp"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

func classicActions() map[string]actionFunc {
	return map[string]actionFunc{
		"CreateLoadBalancer":                      (*Server).createClassicLB,
		"DescribeLoadBalancers":                   (*Server).describeClassicLBs,
		"DeleteLoadBalancer":                      (*Server).deleteClassicLB,
		"CreateLoadBalancerListeners":             (*Server).createClassicListeners,
		"DeleteLoadBalancerListeners":             (*Server).deleteClassicListeners,
		"RegisterInstancesWithLoadBalancer":       (*Server).registerClassicInstances,
		"DeregisterInstancesFromLoadBalancer":     (*Server).deregisterClassicInstances,
		"DescribeInstanceHealth":                  (*Server).describeInstanceHealth,
		"ConfigureHealthCheck":                    (*Server).configureHealthCheck,
		"DescribeLoadBalancerAttributes":          (*Server).describeClassicAttributes,
		"ModifyLoadBalancerAttributes":            (*Server).modifyClassicAttributes,
		"CreateLoadBalancerPolicy":                (*Server).createClassicPolicy,
		"DescribeLoadBalancerPolicies":            (*Server).describeClassicPolicies,
		"DeleteLoadBalancerPolicy":                (*Server).deleteClassicPolicy,
		"SetLoadBalancerPoliciesOfListener":       (*Server).setListenerPolicies,
		"SetLoadBalancerPoliciesForBackendServer": (*Server).setBackendPolicies,
		"ApplySecurityGroupsToLoadBalancer":       (*Server).applyClassicSecurityGroups,
		"AttachLoadBalancerToSubnets":             (*Server).attachClassicSubnets,
		"DetachLoadBalancerFromSubnets":           (*Server).detachClassicSubnets,
		"AddTags":                                 (*Server).addClassicTags,
		"RemoveTags":                              (*Server).removeClassicTags,
		"DescribeTags":                            (*Server).describeClassicTags,
	}
}

// invalidConfig is the Classic API's InvalidConfigurationRequest, which,
// unlike ELBv2's, answers HTTP 409.
func invalidConfig(format string, args ...any) *apiError {
	return errorf(http.StatusConflict, "InvalidConfigurationRequest", format, args...)
}

func classicNotFound(name string) *apiError {
	return badRequest("LoadBalancerNotFound", "Cannot find Load Balancer %s", name)
}

var classicNameChars = regexp.MustCompile(`^[A-Za-z0-9-]+$`)

// checkClassicName applies the documented rule: at most 32 characters,
// alphanumerics and hyphens, not beginning or ending with a hyphen.
func checkClassicName(name string) *apiError {
	switch {
	case name == "":
		return missing("loadBalancerName")
	case len(name) > 32 || !classicNameChars.MatchString(name) || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
		return validation("LoadBalancerName '%s' must have a maximum of 32 characters, contain only alphanumeric characters or hyphens, and not begin or end with a hyphen", name)
	}
	return nil
}

// lookupClassicLocked finds the load balancer the LoadBalancerName
// parameter names.
func (s *Server) lookupClassicLocked(p params) (*classicRec, *apiError) {
	name := p.get("LoadBalancerName")
	if name == "" {
		return nil, missing("loadBalancerName")
	}
	lb := s.clb.lbs[name]
	if lb == nil {
		return nil, classicNotFound(name)
	}
	return lb, nil
}

var certificateIDPattern = regexp.MustCompile(`^arn:aws[a-z-]*:(acm:[a-z0-9-]+:\d{12}:certificate/[A-Za-z0-9-]+|iam::\d{12}:server-certificate/.+)$`)

// readClassicListeners reads Listeners.member.N and checks each: known
// protocols (upper-cased, as the service stores them), ports in range,
// an instance protocol of the same layer, certificates exactly where
// HTTPS and SSL need them.
func readClassicListeners(p params) ([]ClassicListener, *apiError) {
	ms, _ := p.memberStructs("Listeners")
	if len(ms) == 0 {
		return nil, missing("listeners")
	}
	var out []ClassicListener
	for _, m := range ms {
		l := ClassicListener{
			Protocol:         strings.ToUpper(m.get("Protocol")),
			InstanceProtocol: strings.ToUpper(m.get("InstanceProtocol")),
			SSLCertificateID: m.get("SSLCertificateId"),
		}
		if l.Protocol == "" {
			return nil, missing("listeners.member.protocol")
		}
		if !slices.Contains([]string{"HTTP", "HTTPS", "TCP", "SSL"}, l.Protocol) {
			return nil, validation("Invalid protocol '%s': must be one of HTTP, HTTPS, TCP, SSL", m.get("Protocol"))
		}
		for _, port := range []struct {
			name string
			dst  *int32
		}{{"LoadBalancerPort", &l.LoadBalancerPort}, {"InstancePort", &l.InstancePort}} {
			n := m.integer(port.name)
			switch {
			case !n.sent:
				return nil, missing("listeners.member." + strings.ToLower(port.name[:1]) + port.name[1:])
			case !n.ok || n.n < 1 || n.n > 65535:
				return nil, validation("1 validation error detected: Value '%s' at 'listeners.member.%s' failed to satisfy constraint: Member must have value between 1 and 65535", n.raw, port.name)
			}
			*port.dst = int32(n.n)
		}
		l.InstanceProtocol = cmp.Or(l.InstanceProtocol, defaultInstanceProtocol(l.Protocol))
		if !slices.Contains([]string{"HTTP", "HTTPS", "TCP", "SSL"}, l.InstanceProtocol) {
			return nil, validation("Invalid instance protocol '%s': must be one of HTTP, HTTPS, TCP, SSL", m.get("InstanceProtocol"))
		}
		if layer7(l.Protocol) != layer7(l.InstanceProtocol) {
			return nil, invalidConfig("Listener protocol %s cannot be used with instance protocol %s", l.Protocol, l.InstanceProtocol)
		}
		secure := l.Protocol == "HTTPS" || l.Protocol == "SSL"
		switch {
		case secure && l.SSLCertificateID == "":
			return nil, validation("SSLCertificateId is required for %s listeners", l.Protocol)
		case !secure && l.SSLCertificateID != "":
			return nil, validation("SSLCertificateId can only be specified for HTTPS or SSL listeners")
		case secure && !certificateIDPattern.MatchString(l.SSLCertificateID):
			return nil, badRequest("CertificateNotFound", "Server Certificate not found for the key: %s", l.SSLCertificateID)
		}
		out = append(out, l)
	}
	return out, nil
}

func layer7(protocol string) bool { return protocol == "HTTP" || protocol == "HTTPS" }

func sameClassicListener(a, b ClassicListener) bool {
	return a.Protocol == b.Protocol && a.LoadBalancerPort == b.LoadBalancerPort && a.InstanceProtocol == b.InstanceProtocol &&
		a.InstancePort == b.InstancePort && a.SSLCertificateID == b.SSLCertificateID
}

// mergeListeners adds listeners to ls. A port already listened on with the
// same settings is left as it is; with others it is DuplicateListener.
func mergeListeners(ls, add []ClassicListener) ([]ClassicListener, *apiError) {
	ls = slices.Clone(ls)
	for _, l := range add {
		k := slices.IndexFunc(ls, func(x ClassicListener) bool { return x.LoadBalancerPort == l.LoadBalancerPort })
		if k < 0 {
			ls = append(ls, l)
			continue
		}
		if !sameClassicListener(ls[k], l) {
			return nil, badRequest("DuplicateListener", "A listener already exists for the load balancer with a different configuration on port %d", l.LoadBalancerPort)
		}
	}
	return ls, nil
}

// readClassicSubnetsLocked reads Subnets or AvailabilityZones: subnets
// must exist, share a VPC and be one per zone; zones stand for the
// default VPC's default subnet in each.
func (s *Server) readClassicSubnetsLocked(p params) (subnets []string, vpc string, err *apiError) {
	ids, _ := p.members("Subnets")
	zones, _ := p.members("AvailabilityZones")
	switch {
	case len(ids) > 0 && len(zones) > 0:
		return nil, "", validation("Only one of Subnets or AvailabilityZones may be specified")
	case len(ids) == 0 && len(zones) == 0:
		return nil, "", validation("Either AvailabilityZones or Subnets must be specified")
	}
	all := sortedBySeq(s.ec2.subnets, func(r *subnetRec) int { return r.seq })
	for _, z := range zones {
		k := slices.IndexFunc(all, func(r *subnetRec) bool {
			return r.VPCID == s.ec2.defaultVPC && r.DefaultForAZ && r.AvailabilityZone == z
		})
		if k < 0 {
			return nil, "", validation("Invalid Availability Zone: %s", z)
		}
		ids = append(ids, all[k].ID)
	}
	if err := s.checkClassicSubnetsLocked(ids, ""); err != nil {
		return nil, "", err
	}
	var uniq []string
	for _, id := range ids {
		if !slices.Contains(uniq, id) {
			uniq = append(uniq, id)
		}
	}
	return uniq, s.ec2.subnets[ids[0]].VPCID, nil
}

// checkClassicSubnetsLocked checks that subnets exist, lie in one VPC
// (vpc, if given) and cover each zone at most once.
func (s *Server) checkClassicSubnetsLocked(ids []string, vpc string) *apiError {
	zones := map[string]string{}
	for _, id := range ids {
		sub := s.ec2.subnets[id]
		if sub == nil {
			return badRequest("SubnetNotFound", "One or more subnets were not found: %s", id)
		}
		if vpc == "" {
			vpc = sub.VPCID
		}
		if sub.VPCID != vpc {
			return badRequest("InvalidSubnet", "Subnet %s is not in VPC %s", id, vpc)
		}
		if other, ok := zones[sub.AvailabilityZone]; ok && other != id {
			return invalidConfig("Only one subnet per Availability Zone may be specified; %s and %s are both in %s", other, id, sub.AvailabilityZone)
		}
		zones[sub.AvailabilityZone] = id
	}
	return nil
}

func (s *Server) checkClassicGroupsLocked(ids []string, vpc string) *apiError {
	for _, id := range ids {
		if g := s.sgLocked(id); g == nil || g.vpc != vpc {
			return badRequest("InvalidSecurityGroup", "One or more security groups are invalid: %s", id)
		}
	}
	if len(ids) > 5 {
		return invalidConfig("A load balancer can have at most 5 security groups")
	}
	return nil
}

// defaultClassicGroupsLocked is what a load balancer made without
// security groups gets: in a nondefault VPC that VPC's default group; in
// the default VPC the account's "default_elb_..." group, made on first
// use with the listener ports open ("Configure security groups for your
// Classic Load Balancer").
func (s *Server) defaultClassicGroupsLocked(vpc string, ls []ClassicListener) []string {
	if vpc != s.ec2.defaultVPC {
		return []string{s.ec2.vpcs[vpc].DefaultSecurityGroupID}
	}
	g := s.ec2.sgs[s.clb.defaultELBGroup]
	if g == nil {
		g = s.addSecurityGroupLocked("default_elb_"+s.hexID(8)+"-"+s.hexID(4)+"-"+s.hexID(4)+"-"+s.hexID(4)+"-"+s.hexID(12),
			"ELB created security group used when no security group is specified during ELB creation - modifications could impact traffic to future ELBs", vpc, nil, false)
		s.clb.defaultELBGroup = g.id
	}
	for _, l := range ls {
		r := sgRule{protocol: "tcp", from: l.LoadBalancerPort, to: l.LoadBalancerPort, cidr4: "0.0.0.0/0"}
		if !slices.ContainsFunc(g.rules, r.sameAs) {
			r.id = s.ec2ID("sgr")
			g.rules = append(g.rules, r)
		}
	}
	return []string{g.id}
}

// createClassicLB creates a load balancer. The API reference says nothing
// of a repeated call, but the service answers one that matches the
// existing load balancer (listeners, scheme, subnets, security groups)
// with its DNS name and changes nothing, as ELBv2 does (and as
// aws/aws-sdk-java#469 records); only a differing one is
// DuplicateLoadBalancerName. Tags of a repeat are not compared.
func (s *Server) createClassicLB(c *call) (any, *apiError) {
	name := c.p.get("LoadBalancerName")
	if err := checkClassicName(name); err != nil {
		return nil, err
	}
	ls, err := readClassicListeners(c.p)
	if err != nil {
		return nil, err
	}
	if ls, err = mergeListeners(nil, ls); err != nil {
		return nil, err
	}
	scheme := cmp.Or(c.p.get("Scheme"), "internet-facing")
	if scheme != "internet-facing" && scheme != "internal" {
		return nil, badRequest("InvalidScheme", "Invalid scheme '%s': must be internet-facing or internal", scheme)
	}
	subnets, vpc, err := s.readClassicSubnetsLocked(c.p)
	if err != nil {
		return nil, err
	}
	sgs, sgsSent := c.p.members("SecurityGroups")
	if err := s.checkClassicGroupsLocked(sgs, vpc); err != nil {
		return nil, err
	}
	tags, err := readELBTags(c.p)
	if err != nil {
		return nil, err
	}
	if lb := s.clb.lbs[name]; lb != nil {
		same := lb.Scheme == scheme && sameSet(lb.Subnets, subnets) &&
			slices.EqualFunc(sortedListeners(lb.Listeners), sortedListeners(ls), sameClassicListener) &&
			(!sgsSent || sameSet(lb.SecurityGroups, sgs))
		if !same {
			return nil, badRequest("DuplicateLoadBalancerName", "Load Balancer named '%s' already exists and it is configured with different parameters.", name)
		}
		return &xmlCreateClassicLB{DNSName: lb.DNSName}, nil
	}
	if len(sgs) == 0 {
		sgs = s.defaultClassicGroupsLocked(vpc, ls)
	}
	lb := &classicRec{ClassicLoadBalancer: ClassicLoadBalancer{
		Name: name, Scheme: scheme, VPCID: vpc, Subnets: subnets, SecurityGroups: sgs, Listeners: ls,
		DNSName:                   s.lbDNSNameLocked("classic", scheme, name),
		CanonicalHostedZoneNameID: s.hostedZoneLocked("classic"),
		HealthCheck:               defaultClassicHealthCheck(ls),
		Attributes:                defaultClassicAttributes(),
		Tags:                      tags,
		CreatedTime:               c.now.UTC().Truncate(time.Millisecond),
	}, seq: s.nextSeq(), registered: map[string]time.Time{}, health: map[string]string{}}
	lb.AvailabilityZones = s.zonesOfLocked(subnets)
	s.clb.lbs[name] = lb
	s.stats.ClassicLoadBalancers.created()
	return &xmlCreateClassicLB{DNSName: lb.DNSName}, nil
}

func sortedListeners(ls []ClassicListener) []ClassicListener {
	ls = slices.Clone(ls)
	slices.SortFunc(ls, func(a, b ClassicListener) int { return int(a.LoadBalancerPort - b.LoadBalancerPort) })
	return ls
}

func (s *Server) zonesOfLocked(subnets []string) []string {
	var out []string
	for _, id := range subnets {
		out = append(out, s.ec2.subnets[id].AvailabilityZone)
	}
	return out
}

func (s *Server) classicXMLLocked(lb *classicRec) xmlClassicLB {
	x := xmlClassicLB{
		LoadBalancerName: lb.Name, DNSName: lb.DNSName, CanonicalHostedZoneName: lb.DNSName,
		CanonicalHostedZoneNameID: lb.CanonicalHostedZoneNameID,
		Policies: xmlClassicPolicies{
			AppCookieStickinessPolicies: xmlList[xmlAppCookiePolicy]{}, LBCookieStickinessPolicies: xmlList[xmlLBCookiePolicy]{}, OtherPolicies: xmlList[string]{},
		},
		AvailabilityZones: xmlList[string](lb.AvailabilityZones), Subnets: xmlList[string](lb.Subnets),
		VPCID: lb.VPCID, HealthCheck: classicHealthCheckXML(lb.HealthCheck),
		SecurityGroups: xmlList[string](lb.SecurityGroups), CreatedTime: isoTime(lb.CreatedTime), Scheme: lb.Scheme,
	}
	for _, l := range lb.Listeners {
		x.ListenerDescriptions = append(x.ListenerDescriptions, xmlListenerDescription{
			Listener:    xmlClassicListener{Protocol: l.Protocol, LoadBalancerPort: l.LoadBalancerPort, InstanceProtocol: l.InstanceProtocol, InstancePort: l.InstancePort, SSLCertificateID: l.SSLCertificateID},
			PolicyNames: xmlList[string](l.PolicyNames),
		})
	}
	for _, p := range lb.Policies {
		switch p.TypeName {
		case "AppCookieStickinessPolicyType":
			x.Policies.AppCookieStickinessPolicies = append(x.Policies.AppCookieStickinessPolicies, xmlAppCookiePolicy{PolicyName: p.Name, CookieName: policyAttr(p, "CookieName")})
		case "LBCookieStickinessPolicyType":
			x.Policies.LBCookieStickinessPolicies = append(x.Policies.LBCookieStickinessPolicies, xmlLBCookiePolicy{PolicyName: p.Name, CookieExpirationPeriod: policyAttr(p, "CookieExpirationPeriod")})
		default:
			x.Policies.OtherPolicies = append(x.Policies.OtherPolicies, p.Name)
		}
	}
	for _, port := range lb.backendPorts() {
		x.BackendServerDescriptions = append(x.BackendServerDescriptions, xmlBackendServer{InstancePort: port, PolicyNames: lb.BackendPolicies[port]})
	}
	for _, id := range lb.Instances {
		x.Instances = append(x.Instances, xmlInstanceID{InstanceID: id})
	}
	if len(lb.SecurityGroups) > 0 {
		if g := s.ec2.sgs[lb.SecurityGroups[0]]; g != nil {
			x.SourceSecurityGroup = &xmlSourceSecurityGroup{OwnerAlias: s.account, GroupName: g.name}
		}
	}
	return x
}

func policyAttr(p ClassicPolicy, name string) string {
	for _, a := range p.Attributes {
		if a.Name == name {
			return a.Value
		}
	}
	return ""
}

// describeClassicLBs lists load balancers, all or by name, in creation
// order, PageSize (1..400) at a time.
func (s *Server) describeClassicLBs(c *call) (any, *apiError) {
	names, _ := c.p.members("LoadBalancerNames")
	pg, err := parseELBPaging(c.p)
	if err != nil {
		return nil, err
	}
	var sel []*classicRec
	for _, n := range names {
		lb := s.clb.lbs[n]
		if lb == nil {
			return nil, classicNotFound(n)
		}
		sel = append(sel, lb)
	}
	if len(names) == 0 {
		sel = sortedBySeq(s.clb.lbs, func(r *classicRec) int { return r.seq })
	}
	slices.SortFunc(sel, func(a, b *classicRec) int { return a.seq - b.seq })
	sel = slices.Compact(sel)
	sel, next := page(pg, sel, func(r *classicRec) int { return r.seq }, one)
	out := &xmlClassicLBs{LoadBalancerDescriptions: xmlList[xmlClassicLB]{}, NextMarker: next}
	for _, lb := range sel {
		out.LoadBalancerDescriptions = append(out.LoadBalancerDescriptions, s.classicXMLLocked(lb))
	}
	return out, nil
}

// deleteClassicLB deletes a load balancer; one that does not exist is no
// error, as the API reference says. Its network interfaces keep its
// security groups in use for the dependency linger.
func (s *Server) deleteClassicLB(c *call) (any, *apiError) {
	name := c.p.get("LoadBalancerName")
	if name == "" {
		return nil, missing("loadBalancerName")
	}
	lb := s.clb.lbs[name]
	if lb == nil {
		return nil, nil
	}
	delete(s.clb.lbs, name)
	if s.ec2.linger > 0 {
		for _, id := range lb.SecurityGroups {
			s.ec2.lingering[id] = s.now().Add(s.ec2.linger)
		}
	}
	s.stats.ClassicLoadBalancers.deleted()
	return nil, nil
}

func (s *Server) createClassicListeners(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	ls, err := readClassicListeners(c.p)
	if err != nil {
		return nil, err
	}
	merged, err := mergeListeners(lb.Listeners, ls)
	if err != nil {
		return nil, err
	}
	lb.Listeners = merged
	return nil, nil
}

// deleteClassicListeners removes the listeners on the given ports, with
// their policies; ports without one are ignored.
func (s *Server) deleteClassicListeners(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	ports, _ := c.p.members("LoadBalancerPorts")
	if len(ports) == 0 {
		return nil, missing("loadBalancerPorts")
	}
	for _, raw := range ports {
		n, err := strconv.Atoi(raw)
		if err != nil {
			return nil, validation("Invalid load balancer port '%s'", raw)
		}
		lb.Listeners = slices.DeleteFunc(lb.Listeners, func(l ClassicListener) bool { return int(l.LoadBalancerPort) == n })
	}
	return nil, nil
}

func (s *Server) applyClassicSecurityGroups(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	sgs, _ := c.p.members("SecurityGroups")
	if len(sgs) == 0 {
		return nil, missing("securityGroups")
	}
	if err := s.checkClassicGroupsLocked(sgs, lb.VPCID); err != nil {
		return nil, err
	}
	lb.SecurityGroups = slices.Compact(slices.Clone(sgs))
	return &xmlSecurityGroupIDs{SecurityGroups: xmlList[string](slices.Clone(lb.SecurityGroups))}, nil
}

func (s *Server) attachClassicSubnets(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	ids, _ := c.p.members("Subnets")
	if len(ids) == 0 {
		return nil, missing("subnets")
	}
	next := slices.Clone(lb.Subnets)
	for _, id := range ids {
		if !slices.Contains(next, id) {
			next = append(next, id)
		}
	}
	if err := s.checkClassicSubnetsLocked(next, lb.VPCID); err != nil {
		return nil, err
	}
	lb.Subnets, lb.AvailabilityZones = next, s.zonesOfLocked(next)
	return &xmlSubnetIDs{Subnets: xmlList[string](slices.Clone(next))}, nil
}

// detachClassicSubnets removes subnets; a load balancer keeps at least
// one.
func (s *Server) detachClassicSubnets(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	ids, _ := c.p.members("Subnets")
	if len(ids) == 0 {
		return nil, missing("subnets")
	}
	next := slices.DeleteFunc(slices.Clone(lb.Subnets), func(id string) bool { return slices.Contains(ids, id) })
	if len(next) == 0 {
		return nil, invalidConfig("A load balancer must be attached to at least one subnet")
	}
	lb.Subnets, lb.AvailabilityZones = next, s.zonesOfLocked(next)
	return &xmlSubnetIDs{Subnets: xmlList[string](slices.Clone(next))}, nil
}
