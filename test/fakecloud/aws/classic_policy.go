package aws

import (
	"slices"
	"strconv"
	"strings"
)

// Policies of Classic Load Balancers: made with CreateLoadBalancerPolicy,
// then set on listeners (SSL negotiation, stickiness) or instance ports
// (proxy protocol, back-end authentication).

// classicPolicyTypes are the policy types the fake knows, with where they
// may be set: "listener" or "backend".
var classicPolicyTypes = map[string]string{
	"ProxyProtocolPolicyType":               "backend",
	"BackendServerAuthenticationPolicyType": "backend",
	"PublicKeyPolicyType":                   "",
	"SSLNegotiationPolicyType":              "listener",
	"AppCookieStickinessPolicyType":         "listener",
	"LBCookieStickinessPolicyType":          "listener",
}

// samplePolicies are some of the predefined security policies
// DescribeLoadBalancerPolicies lists when no load balancer is named, and
// that Reference-Security-Policy may name.
var samplePolicies = []string{
	"ELBSecurityPolicy-TLS-1-2-2017-01", "ELBSecurityPolicy-TLS-1-1-2017-01", "ELBSecurityPolicy-2016-08",
	"ELBSecurityPolicy-2015-05", "ELBSecurityPolicy-TLS-1-2-Ext-2018-06",
}

func samplePolicy(name string) ClassicPolicy {
	p := ClassicPolicy{Name: name, TypeName: "SSLNegotiationPolicyType"}
	for _, proto := range []string{"Protocol-TLSv1", "Protocol-TLSv1.1", "Protocol-TLSv1.2"} {
		on := strings.Contains(name, "2016-08") || strings.Contains(name, "2015-05") ||
			proto == "Protocol-TLSv1.2" || (proto == "Protocol-TLSv1.1" && strings.Contains(name, "1-1"))
		p.Attributes = append(p.Attributes, PolicyAttribute{Name: proto, Value: strconv.FormatBool(on)})
	}
	p.Attributes = append(p.Attributes, PolicyAttribute{Name: "Server-Defined-Cipher-Order", Value: "true"})
	return p
}

// checkPolicyAttributes applies each type's rules to its attributes.
func checkPolicyAttributes(typ string, attrs []PolicyAttribute) *apiError {
	boolean := func(a PolicyAttribute) *apiError {
		if a.Value != "true" && a.Value != "false" {
			return invalidConfig("Invalid value '%s' for policy attribute %s: must be true or false", a.Value, a.Name)
		}
		return nil
	}
	for _, a := range attrs {
		switch typ {
		case "ProxyProtocolPolicyType":
			if a.Name != "ProxyProtocol" {
				return invalidConfig("Policy attribute %s is not valid for policy type %s", a.Name, typ)
			}
			if err := boolean(a); err != nil {
				return err
			}
		case "SSLNegotiationPolicyType":
			switch {
			case a.Name == "Reference-Security-Policy":
				if !slices.Contains(samplePolicies, a.Value) {
					return invalidConfig("Reference-Security-Policy '%s' is not a predefined security policy", a.Value)
				}
			default:
				if err := boolean(a); err != nil {
					return err
				}
			}
		case "AppCookieStickinessPolicyType":
			if a.Name != "CookieName" || a.Value == "" {
				return invalidConfig("Policy attribute %s is not valid for policy type %s", a.Name, typ)
			}
		case "LBCookieStickinessPolicyType":
			if n, err := strconv.ParseInt(a.Value, 10, 64); a.Name != "CookieExpirationPeriod" || err != nil || n < 0 {
				return invalidConfig("Policy attribute %s is not valid for policy type %s", a.Name, typ)
			}
		}
	}
	if typ == "ProxyProtocolPolicyType" && len(attrs) == 0 {
		return invalidConfig("Policy type %s requires the attribute ProxyProtocol", typ)
	}
	return nil
}

func (s *Server) createClassicPolicy(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	name, typ := c.p.get("PolicyName"), c.p.get("PolicyTypeName")
	switch {
	case name == "":
		return nil, missing("policyName")
	case typ == "":
		return nil, missing("policyTypeName")
	}
	if _, ok := classicPolicyTypes[typ]; !ok {
		return nil, badRequest("PolicyTypeNotFound", "One or more specified policy types do not exist: %s", typ)
	}
	if lb.policy(name) != nil {
		return nil, badRequest("DuplicatePolicyName", "Policy name %s already exists for load balancer %s", name, lb.Name)
	}
	ms, _ := c.p.memberStructs("PolicyAttributes")
	var attrs []PolicyAttribute
	for _, m := range ms {
		attrs = append(attrs, PolicyAttribute{Name: m.get("AttributeName"), Value: m.get("AttributeValue")})
	}
	if err := checkPolicyAttributes(typ, attrs); err != nil {
		return nil, err
	}
	lb.Policies = append(lb.Policies, ClassicPolicy{Name: name, TypeName: typ, Attributes: attrs})
	return nil, nil
}

// describeClassicPolicies lists a load balancer's policies (all, or those
// named: an unknown one is PolicyNotFound) or, with no load balancer, the
// predefined ones.
func (s *Server) describeClassicPolicies(c *call) (any, *apiError) {
	var all []ClassicPolicy
	if c.p.get("LoadBalancerName") != "" {
		lb, err := s.lookupClassicLocked(c.p)
		if err != nil {
			return nil, err
		}
		all = lb.Policies
	} else {
		for _, n := range samplePolicies {
			all = append(all, samplePolicy(n))
		}
	}
	names, _ := c.p.members("PolicyNames")
	out := &xmlPolicyDescriptions{PolicyDescriptions: xmlList[xmlPolicyDescription]{}}
	if len(names) == 0 {
		for _, p := range all {
			out.PolicyDescriptions = append(out.PolicyDescriptions, policyXML(p))
		}
		return out, nil
	}
	for _, n := range names {
		k := slices.IndexFunc(all, func(p ClassicPolicy) bool { return p.Name == n })
		if k < 0 {
			return nil, badRequest("PolicyNotFound", "There is no policy with name %s", n)
		}
		out.PolicyDescriptions = append(out.PolicyDescriptions, policyXML(all[k]))
	}
	return out, nil
}

// deleteClassicPolicy deletes a policy no listener or instance port uses;
// one that does not exist is no error.
func (s *Server) deleteClassicPolicy(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	name := c.p.get("PolicyName")
	if name == "" {
		return nil, missing("policyName")
	}
	inUse := slices.ContainsFunc(lb.Listeners, func(l ClassicListener) bool { return slices.Contains(l.PolicyNames, name) })
	for _, names := range lb.BackendPolicies {
		inUse = inUse || slices.Contains(names, name)
	}
	if inUse {
		return nil, invalidConfig("Cannot delete policy %s: it is in use by a listener or a back-end server", name)
	}
	lb.Policies = slices.DeleteFunc(lb.Policies, func(p ClassicPolicy) bool { return p.Name == name })
	return nil, nil
}

// readPolicyNamesLocked reads PolicyNames (an empty list clears) and
// checks each exists and may be set where asked.
func readPolicyNamesLocked(p params, lb *classicRec, where string) ([]string, *apiError) {
	names, sent := p.members("PolicyNames")
	if !sent {
		return nil, missing("policyNames")
	}
	for _, n := range names {
		pol := lb.policy(n)
		if pol == nil {
			return nil, badRequest("PolicyNotFound", "There is no policy with name %s for load balancer %s", n, lb.Name)
		}
		if classicPolicyTypes[pol.TypeName] != where {
			return nil, invalidConfig("Policy %s of type %s cannot be set on a %s", n, pol.TypeName, map[string]string{"listener": "listener", "backend": "back-end server"}[where])
		}
	}
	return slices.Compact(slices.Clone(names)), nil
}

func (s *Server) setListenerPolicies(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	port := c.p.integer("LoadBalancerPort")
	if !port.sent {
		return nil, missing("loadBalancerPort")
	}
	l := lb.listener(int32(port.n))
	if !port.ok || l == nil {
		return nil, badRequest("ListenerNotFound", "There is no listener on port %s of load balancer %s", port.raw, lb.Name)
	}
	names, err := readPolicyNamesLocked(c.p, lb, "listener")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if lb.policy(n).TypeName == "SSLNegotiationPolicyType" && l.Protocol != "HTTPS" && l.Protocol != "SSL" {
			return nil, invalidConfig("SSL negotiation policy %s can only be set on an HTTPS or SSL listener", n)
		}
	}
	l.PolicyNames = names
	return nil, nil
}

func (s *Server) setBackendPolicies(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	port := c.p.integer("InstancePort")
	switch {
	case !port.sent:
		return nil, missing("instancePort")
	case !port.ok || port.n < 1 || port.n > 65535:
		return nil, validation("1 validation error detected: Value '%s' at 'instancePort' failed to satisfy constraint: Member must have value between 1 and 65535", port.raw)
	}
	names, err := readPolicyNamesLocked(c.p, lb, "backend")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		delete(lb.BackendPolicies, int32(port.n))
		return nil, nil
	}
	if lb.BackendPolicies == nil {
		lb.BackendPolicies = map[int32][]string{}
	}
	lb.BackendPolicies[int32(port.n)] = names
	return nil, nil
}
