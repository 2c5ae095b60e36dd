package aws

import (
	"regexp"
	"slices"
	"strings"
)

// DefaultSSLPolicy is the security policy TLS and HTTPS listeners get when
// the request names none: the API's default, which is also the CLI's,
// CloudFormation's and the CDK's. Only the console picks a TLS 1.3 policy
// (Elastic Load Balancing guide, "Security policies for your Network Load
// Balancer").
const DefaultSSLPolicy = "ELBSecurityPolicy-2016-08"

var sslPolicies = []string{
	"ELBSecurityPolicy-2016-08", "ELBSecurityPolicy-2015-05", "ELBSecurityPolicy-TLS-1-0-2015-04",
	"ELBSecurityPolicy-TLS-1-1-2017-01", "ELBSecurityPolicy-TLS-1-2-2017-01", "ELBSecurityPolicy-TLS-1-2-Ext-2018-06",
	"ELBSecurityPolicy-FS-2018-06", "ELBSecurityPolicy-FS-1-1-2019-08", "ELBSecurityPolicy-FS-1-2-2019-08",
	"ELBSecurityPolicy-FS-1-2-Res-2019-08", "ELBSecurityPolicy-FS-1-2-Res-2020-10",
	"ELBSecurityPolicy-TLS13-1-2-2021-06", "ELBSecurityPolicy-TLS13-1-2-Res-2021-06",
	"ELBSecurityPolicy-TLS13-1-2-Ext1-2021-06", "ELBSecurityPolicy-TLS13-1-2-Ext2-2021-06",
	"ELBSecurityPolicy-TLS13-1-1-2021-06", "ELBSecurityPolicy-TLS13-1-0-2021-06",
	"ELBSecurityPolicy-TLS13-1-3-2021-06",
}

var alpnPolicies = []string{"HTTP1Only", "HTTP2Only", "HTTP2Optional", "HTTP2Preferred", "None"}

var certificateARN = regexp.MustCompile(`^arn:aws[a-z-]*:(acm:[a-z0-9-]+:\d{12}:certificate/[A-Za-z0-9-]+|iam::\d{12}:server-certificate/.+)$`)

// maxListeners is ELBv2's quota of listeners per load balancer.
const maxListeners = 50

func (s *Server) listenerARN(lb *lbRec) string {
	return strings.Replace(lb.ARN, ":loadbalancer/", ":listener/", 1) + "/" + s.hexID(16)
}

func (s *Server) lookupListenerLocked(arn string) (*listenerRec, *apiError) {
	if arn == "" {
		return nil, missing("listenerArn")
	}
	if !listenerARNPattern.MatchString(arn) {
		return nil, validation("'%s' is not a valid listener ARN", arn)
	}
	l := s.elb.listeners[arn]
	if l == nil {
		return nil, badRequest("ListenerNotFound", "One or more listeners not found")
	}
	return l, nil
}

// applyListenerParams applies CreateListener / ModifyListener parameters
// to l; create says every required one must be there.
func (s *Server) applyListenerParams(p params, l *Listener, create bool) *apiError {
	if v, ok := p.str("Protocol"); ok {
		if v != l.Protocol && (v == "TCP" || v == "UDP" || v == "TCP_UDP" || v == "HTTP") {
			// Leaving TLS/HTTPS drops the certificates and policy.
			l.Certificates, l.ExtraCertificates, l.SSLPolicy, l.ALPNPolicy = nil, nil, "", nil
		}
		l.Protocol = v
	} else if create {
		return validation("A listener protocol must be specified")
	}
	if pp := p.integer("Port"); pp.sent {
		if !pp.ok || pp.n < 1 || pp.n > 65535 {
			return validation("1 validation error detected: Value '%s' at 'port' failed to satisfy constraint: Member must have value between 1 and 65535", pp.raw)
		}
		l.Port = int32(pp.n)
	} else if create {
		return validation("A listener port must be specified")
	}
	if v, ok := p.str("SslPolicy"); ok {
		l.SSLPolicy = v
	}
	if certs, ok := p.memberStructs("Certificates"); ok {
		l.Certificates = nil
		for _, c := range certs {
			l.Certificates = append(l.Certificates, Certificate{ARN: c.get("CertificateArn"), IsDefault: true})
			// A certificate made the default is no longer among the others.
			l.ExtraCertificates = slices.DeleteFunc(slices.Clone(l.ExtraCertificates), func(a string) bool { return a == c.get("CertificateArn") })
		}
	}
	if alpn, ok := p.members("AlpnPolicy"); ok {
		l.ALPNPolicy = alpn
	}
	if actions, ok := p.memberStructs("DefaultActions"); ok {
		l.DefaultActions = nil
		for _, a := range actions {
			act := Action{Type: a.get("Type")}
			if o := a.integer("Order"); o.sent && o.ok {
				act.Order = int32(o.n)
			}
			act.TargetGroupARN = a.get("TargetGroupArn")
			fwd := a.sub("ForwardConfig")
			tgs, _ := fwd.memberStructs("TargetGroups")
			for _, t := range tgs {
				w := int32(1)
				if wp := t.integer("Weight"); wp.sent && wp.ok {
					w = int32(wp.n)
				}
				act.TargetGroups = append(act.TargetGroups, WeightedTargetGroup{ARN: t.get("TargetGroupArn"), Weight: w})
			}
			if en, sent, _ := fwd.boolean("TargetGroupStickinessConfig.Enabled"); sent {
				act.StickinessEnabled = en
			}
			if d := fwd.integer("TargetGroupStickinessConfig.DurationSeconds"); d.sent && d.ok {
				act.StickinessDuration = int32(d.n)
			}
			if act.TargetGroupARN == "" && len(act.TargetGroups) == 1 {
				act.TargetGroupARN = act.TargetGroups[0].ARN
			}
			if len(act.TargetGroups) == 0 && act.TargetGroupARN != "" {
				act.TargetGroups = []WeightedTargetGroup{{ARN: act.TargetGroupARN, Weight: 1}}
			}
			l.DefaultActions = append(l.DefaultActions, act)
		}
	} else if create {
		return missing("defaultActions")
	}
	return nil
}

// checkListenerLocked validates a listener as it would be after the
// request.
func (s *Server) checkListenerLocked(lb *lbRec, l *Listener) *apiError {
	tls := l.Protocol == "TLS" || l.Protocol == "HTTPS"
	switch lb.Type {
	case "network":
		if !slices.Contains([]string{"TCP", "TLS", "UDP", "TCP_UDP", "QUIC", "TCP_QUIC"}, l.Protocol) {
			return badRequest("UnsupportedProtocol", "The protocol '%s' is not supported for load balancers of type 'network'", l.Protocol)
		}
	case "application":
		if l.Protocol != "HTTP" && l.Protocol != "HTTPS" {
			return badRequest("UnsupportedProtocol", "The protocol '%s' is not supported for load balancers of type 'application'", l.Protocol)
		}
	}
	if tls {
		if len(l.Certificates) == 0 {
			return badRequest("ValidationError", "A certificate must be specified for %s listeners", l.Protocol)
		}
		if len(l.Certificates) > 1 {
			return badRequest("TooManyCertificates", "Only one default certificate can be specified for a listener")
		}
		for _, c := range l.Certificates {
			if !certificateARN.MatchString(c.ARN) {
				return badRequest("CertificateNotFound", "Certificate '%s' not found", c.ARN)
			}
		}
		if l.SSLPolicy == "" {
			l.SSLPolicy = DefaultSSLPolicy
		}
		if !slices.Contains(sslPolicies, l.SSLPolicy) {
			return badRequest("SSLPolicyNotFound", "SSL policy '%s' not found", l.SSLPolicy)
		}
	} else {
		if len(l.Certificates) > 0 {
			return validation("Certificates cannot be specified for %s listeners", l.Protocol)
		}
		if l.SSLPolicy != "" {
			return validation("An SSL policy cannot be specified for %s listeners", l.Protocol)
		}
	}
	if len(l.ALPNPolicy) > 0 {
		if l.Protocol != "TLS" {
			return validation("An ALPN policy can only be specified for TLS listeners")
		}
		if len(l.ALPNPolicy) > 1 || !slices.Contains(alpnPolicies, l.ALPNPolicy[0]) {
			return badRequest("ALPNPolicyNotFound", "ALPN policy '%s' not found", strings.Join(l.ALPNPolicy, ", "))
		}
	}
	if len(l.DefaultActions) == 0 {
		return missing("defaultActions")
	}
	for _, a := range l.DefaultActions {
		if a.Type != "forward" {
			if lb.Type == "network" {
				return badRequest("InvalidLoadBalancerAction", "The action type '%s' is not supported for Network Load Balancers", a.Type)
			}
			return validation("The action type '%s' is not supported by this fake", a.Type)
		}
		if len(a.TargetGroups) == 0 {
			return validation("A target group ARN must be specified for a forward action")
		}
		if lb.Type == "network" && len(a.TargetGroups) > 1 {
			return badRequest("InvalidLoadBalancerAction", "Network Load Balancers support only one target group per forward action")
		}
		for _, w := range a.TargetGroups {
			tg, err := s.lookupTGLocked(w.ARN)
			if err != nil {
				return err
			}
			if tg.VPCID != lb.VPCID {
				return validation("The VPC of target group '%s' does not match the VPC of load balancer '%s'", tg.ARN, lb.ARN)
			}
			if !compatibleProtocols(l.Protocol, tg.Protocol) {
				return badRequest("IncompatibleProtocols", "The target group protocol '%s' is incompatible with the listener protocol '%s'", tg.Protocol, l.Protocol)
			}
			for _, other := range s.tgLoadBalancersLocked(tg.ARN) {
				if other != lb.ARN {
					return badRequest("TargetGroupAssociationLimit", "The following target groups cannot be associated with more than one load balancer: %s", tg.ARN)
				}
			}
		}
	}
	return nil
}

func compatibleProtocols(listener, tg string) bool {
	switch listener {
	case "TCP":
		return tg == "TCP"
	case "TLS":
		return tg == "TCP" || tg == "TLS"
	case "UDP":
		return tg == "UDP"
	case "TCP_UDP":
		return tg == "TCP_UDP"
	case "HTTP", "HTTPS":
		return tg == "HTTP" || tg == "HTTPS"
	}
	return listener == tg
}

func sameListener(a, b Listener) bool {
	return a.Protocol == b.Protocol && a.Port == b.Port && a.SSLPolicy == b.SSLPolicy &&
		slices.Equal(a.Certificates, b.Certificates) && slices.Equal(a.ALPNPolicy, b.ALPNPolicy) &&
		slices.EqualFunc(a.DefaultActions, b.DefaultActions, func(x, y Action) bool {
			return x.Type == y.Type && x.TargetGroupARN == y.TargetGroupARN && slices.Equal(x.TargetGroups, y.TargetGroups)
		})
}

func (s *Server) createListener(c *call) (any, *apiError) {
	lb, err := s.lookupLBLocked(c.p.get("LoadBalancerArn"))
	if err != nil {
		return nil, err
	}
	l := Listener{LoadBalancerARN: lb.ARN}
	if err := s.applyListenerParams(c.p, &l, true); err != nil {
		return nil, err
	}
	if err := s.checkListenerLocked(lb, &l); err != nil {
		return nil, err
	}
	tags, err := readELBTags(c.p)
	if err != nil {
		return nil, err
	}
	count := 0
	for _, other := range sortedBySeq(s.elb.listeners, func(r *listenerRec) int { return r.seq }) {
		if other.LoadBalancerARN != lb.ARN {
			continue
		}
		count++
		if other.Port != l.Port {
			continue
		}
		// The same listener again answers with the existing one.
		if sameListener(other.Listener, l) {
			return &xmlListeners{Listeners: []xmlListener{listenerXML(other)}}, nil
		}
		return nil, badRequest("DuplicateListener", "A listener already exists on this port for this load balancer '%s'", lb.ARN)
	}
	if count >= maxListeners {
		return nil, badRequest("TooManyListeners", "You've reached the limit on the number of listeners per load balancer.")
	}
	l.ARN = s.listenerARN(lb)
	l.Tags = tags
	rec := &listenerRec{Listener: l, seq: s.nextSeq()}
	s.elb.listeners[l.ARN] = rec
	s.stats.Listeners.created()
	return &xmlListeners{Listeners: []xmlListener{listenerXML(rec)}}, nil
}

func listenerXML(l *listenerRec) xmlListener {
	x := xmlListener{
		ListenerArn: l.ARN, LoadBalancerArn: l.LoadBalancerARN, Port: l.Port, Protocol: l.Protocol,
		SslPolicy: l.SSLPolicy, DefaultActions: []xmlAction{}, AlpnPolicy: l.ALPNPolicy,
	}
	for _, c := range l.Certificates {
		x.Certificates = append(x.Certificates, xmlCertificate{CertificateArn: c.ARN})
	}
	for _, a := range l.DefaultActions {
		xa := xmlAction{Type: a.Type, TargetGroupArn: a.TargetGroupARN}
		if a.Order != 0 {
			o := a.Order
			xa.Order = &o
		}
		if len(a.TargetGroups) > 0 {
			fc := &xmlForwardConfig{Stickiness: &xmlStickiness{Enabled: a.StickinessEnabled}}
			if a.StickinessDuration != 0 {
				d := a.StickinessDuration
				fc.Stickiness.DurationSeconds = &d
			}
			for _, w := range a.TargetGroups {
				fc.TargetGroups = append(fc.TargetGroups, xmlTGTuple{TargetGroupArn: w.ARN, Weight: w.Weight})
			}
			xa.ForwardConfig = fc
		}
		x.DefaultActions = append(x.DefaultActions, xa)
	}
	return x
}

func (s *Server) describeListeners(c *call) (any, *apiError) {
	lbARN, byLB := c.p.str("LoadBalancerArn")
	arns, _ := c.p.members("ListenerArns")
	switch {
	case byLB && len(arns) > 0:
		return nil, validation("Listener ARNs and a load balancer ARN cannot be specified at the same time")
	case !byLB && len(arns) == 0:
		return nil, validation("You must specify either listener ARNs or a load balancer ARN")
	}
	pg, err := parseELBPaging(c.p)
	if err != nil {
		return nil, err
	}
	var sel []*listenerRec
	if byLB {
		if _, err := s.lookupLBLocked(lbARN); err != nil {
			return nil, err
		}
		for _, l := range sortedBySeq(s.elb.listeners, func(r *listenerRec) int { return r.seq }) {
			if l.LoadBalancerARN == lbARN {
				sel = append(sel, l)
			}
		}
	} else {
		for _, a := range arns {
			l, err := s.lookupListenerLocked(a)
			if err != nil {
				return nil, err
			}
			sel = append(sel, l)
		}
		slices.SortFunc(sel, func(a, b *listenerRec) int { return a.seq - b.seq })
		sel = slices.Compact(sel)
	}
	sel, next := page(pg, sel, func(r *listenerRec) int { return r.seq }, one)
	out := &xmlListeners{Listeners: []xmlListener{}, NextMarker: next}
	for _, l := range sel {
		out.Listeners = append(out.Listeners, listenerXML(l))
	}
	return out, nil
}

func (s *Server) modifyListener(c *call) (any, *apiError) {
	rec, err := s.lookupListenerLocked(c.p.get("ListenerArn"))
	if err != nil {
		return nil, err
	}
	lb := s.elb.lbs[rec.LoadBalancerARN]
	l := rec.clone()
	if err := s.applyListenerParams(c.p, &l, false); err != nil {
		return nil, err
	}
	if err := s.checkListenerLocked(lb, &l); err != nil {
		return nil, err
	}
	for _, other := range s.elb.listeners {
		if other != rec && other.LoadBalancerARN == lb.ARN && other.Port == l.Port {
			return nil, badRequest("DuplicateListener", "A listener already exists on this port for this load balancer '%s'", lb.ARN)
		}
	}
	rec.Listener = l
	return &xmlListeners{Listeners: []xmlListener{listenerXML(rec)}}, nil
}

func (s *Server) deleteListener(c *call) (any, *apiError) {
	l, err := s.lookupListenerLocked(c.p.get("ListenerArn"))
	if err != nil {
		return nil, err
	}
	delete(s.elb.listeners, l.ARN)
	s.stats.Listeners.deleted()
	return nil, nil
}

// Tags of load balancers, target groups and listeners.

// elbTagsLocked returns a pointer to the tags of the resource an ARN
// names, or the service's error for a malformed or unknown ARN.
func (s *Server) elbTagsLocked(arn string) (*map[string]string, *apiError) {
	switch {
	case lbARNPattern.MatchString(arn):
		if lb := s.elb.lbs[arn]; lb != nil {
			return &lb.Tags, nil
		}
		return nil, badRequest("LoadBalancerNotFound", "Load balancer '%s' not found", arn)
	case tgARNPattern.MatchString(arn):
		if tg := s.elb.tgs[arn]; tg != nil {
			return &tg.Tags, nil
		}
		return nil, badRequest("TargetGroupNotFound", "Target groups '%s' not found", arn)
	case listenerARNPattern.MatchString(arn):
		if l := s.elb.listeners[arn]; l != nil {
			return &l.Tags, nil
		}
		return nil, badRequest("ListenerNotFound", "Listener '%s' not found", arn)
	}
	return nil, validation("'%s' is not a valid resource ARN", arn)
}

func readResourceARNs(p params) ([]string, *apiError) {
	arns, _ := p.members("ResourceArns")
	if len(arns) == 0 {
		return nil, missing("resourceArns")
	}
	if len(arns) > 20 {
		return nil, validation("1 validation error detected: Value '[%s]' at 'resourceArns' failed to satisfy constraint: Member must have length less than or equal to 20", strings.Join(arns, ", "))
	}
	return arns, nil
}

func (s *Server) addTags(c *call) (any, *apiError) {
	arns, err := readResourceARNs(c.p)
	if err != nil {
		return nil, err
	}
	tags, err := readELBTags(c.p)
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, missing("tags")
	}
	var targets []*map[string]string
	for _, a := range arns {
		m, err := s.elbTagsLocked(a)
		if err != nil {
			return nil, err
		}
		merged := cloneTags(*m)
		if merged == nil {
			merged = map[string]string{}
		}
		for k, v := range tags {
			merged[k] = v
		}
		if len(merged) > maxTags {
			return nil, badRequest("TooManyTags", "The quota for the number of tags that can be assigned to a load balancer has been reached")
		}
		targets = append(targets, m)
	}
	for _, m := range targets {
		if *m == nil {
			*m = map[string]string{}
		}
		for k, v := range tags {
			(*m)[k] = v
		}
	}
	return nil, nil
}

func (s *Server) removeTags(c *call) (any, *apiError) {
	arns, err := readResourceARNs(c.p)
	if err != nil {
		return nil, err
	}
	keys, _ := c.p.members("TagKeys")
	if len(keys) == 0 {
		return nil, missing("tagKeys")
	}
	var targets []*map[string]string
	for _, a := range arns {
		m, err := s.elbTagsLocked(a)
		if err != nil {
			return nil, err
		}
		targets = append(targets, m)
	}
	for _, m := range targets {
		for _, k := range keys {
			delete(*m, k)
		}
	}
	return nil, nil
}

func (s *Server) describeTags(c *call) (any, *apiError) {
	arns, err := readResourceARNs(c.p)
	if err != nil {
		return nil, err
	}
	out := &xmlTagDescriptions{TagDescriptions: []xmlTagDescription{}}
	for _, a := range arns {
		m, err := s.elbTagsLocked(a)
		if err != nil {
			return nil, err
		}
		out.TagDescriptions = append(out.TagDescriptions, xmlTagDescription{ResourceArn: a, Tags: xmlKVs(*m)})
	}
	return out, nil
}
