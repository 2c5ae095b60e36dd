package aws

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

var tgProtocols = []string{"HTTP", "HTTPS", "TCP", "TLS", "UDP", "TCP_UDP", "GENEVE", "QUIC", "TCP_QUIC"}

func isNLBProtocol(p string) bool {
	return p == "TCP" || p == "TLS" || p == "UDP" || p == "TCP_UDP" || p == "QUIC" || p == "TCP_QUIC"
}

func (s *Server) tgARN(name, id string) string {
	return "arn:aws:elasticloadbalancing:" + s.region + ":" + s.account + ":targetgroup/" + name + "/" + id
}

func checkTGName(name string) *apiError {
	switch {
	case name == "":
		return missing("name")
	case len(name) > 32:
		return validation("Target group name '%s' cannot be longer than '32' characters", name)
	case !lbNameChars.MatchString(name):
		return validation("Target group name '%s' can only contain characters that are alphanumeric characters or hyphens(-)", name)
	case strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
		return validation("Target group name '%s' cannot begin or end with '-'", name)
	}
	return nil
}

// lookupTGLocked finds a target group by ARN: malformed is a
// ValidationError, unknown TargetGroupNotFound.
func (s *Server) lookupTGLocked(arn string) (*tgRec, *apiError) {
	if arn == "" {
		return nil, missing("targetGroupArn")
	}
	if !tgARNPattern.MatchString(arn) {
		return nil, validation("'%s' is not a valid target group ARN", arn)
	}
	tg := s.elb.tgs[arn]
	if tg == nil {
		return nil, badRequest("TargetGroupNotFound", "Target groups '%s' not found", arn)
	}
	return tg, nil
}

// readHealthCheck applies the health check parameters of CreateTargetGroup
// or ModifyTargetGroup to hc.
func readHealthCheck(p params, hc *HealthCheck) *apiError {
	if v, ok := p.str("HealthCheckProtocol"); ok {
		if !slices.Contains([]string{"HTTP", "HTTPS", "TCP"}, v) {
			return validation("Health check protocol '%s' is not supported", v)
		}
		if hc.Protocol != v && (v == "HTTP" || v == "HTTPS") && hc.Path == "" {
			hc.Path, hc.Matcher = "/", "200-399"
		}
		if v == "TCP" {
			hc.Path, hc.Matcher = "", ""
		}
		hc.Protocol = v
	}
	if v, ok := p.str("HealthCheckPort"); ok {
		if v != "traffic-port" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				return validation("Health check port '%s' must be 'traffic-port' or a port between 1 and 65535", v)
			}
		}
		hc.Port = v
	}
	if v, sent, ok := p.boolean("HealthCheckEnabled"); sent {
		if !ok {
			return validation("Health check enabled must be true or false")
		}
		hc.Enabled = v
	}
	if v, ok := p.str("HealthCheckPath"); ok {
		if hc.Protocol == "TCP" {
			return validation("Health check path cannot be set when the health check protocol is 'TCP'")
		}
		if !strings.HasPrefix(v, "/") || len(v) > 1024 {
			return validation("Health check path '%s' must begin with '/' and be at most 1024 characters", v)
		}
		hc.Path = v
	}
	for _, f := range []struct {
		key      string
		dst      *int32
		min, max int64
	}{
		{"HealthCheckIntervalSeconds", &hc.IntervalSeconds, 5, 300},
		{"HealthCheckTimeoutSeconds", &hc.TimeoutSeconds, 2, 120},
		{"HealthyThresholdCount", &hc.HealthyThreshold, 2, 10},
		{"UnhealthyThresholdCount", &hc.UnhealthyThreshold, 2, 10},
	} {
		v := p.integer(f.key)
		if !v.sent {
			continue
		}
		if !v.ok || v.n < f.min || v.n > f.max {
			member := strings.ToLower(f.key[:1]) + f.key[1:]
			return validation("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have value between %d and %d", v.raw, member, f.min, f.max)
		}
		*f.dst = int32(v.n)
	}
	if m, ok := p.str("Matcher.HttpCode"); ok {
		if hc.Protocol == "TCP" {
			return validation("A matcher cannot be set when the health check protocol is 'TCP'")
		}
		hc.Matcher = m
	}
	if hc.TimeoutSeconds >= hc.IntervalSeconds {
		return validation("Health check timeout '%d' must be smaller than the interval '%d'", hc.TimeoutSeconds, hc.IntervalSeconds)
	}
	return nil
}

// defaultHealthCheck is what a target group of the protocol gets when the
// request says nothing.
func defaultHealthCheck(protocol, targetType string) HealthCheck {
	switch {
	case protocol == "HTTP" || protocol == "HTTPS":
		return HealthCheck{Enabled: true, Protocol: protocol, Port: "traffic-port", Path: "/", IntervalSeconds: 30, TimeoutSeconds: 5, HealthyThreshold: 5, UnhealthyThreshold: 2, Matcher: "200"}
	case targetType == "lambda":
		return HealthCheck{Enabled: false, Protocol: "HTTP", Path: "/", IntervalSeconds: 35, TimeoutSeconds: 30, HealthyThreshold: 5, UnhealthyThreshold: 2, Matcher: "200"}
	default:
		return HealthCheck{Enabled: true, Protocol: "TCP", Port: "traffic-port", IntervalSeconds: 30, TimeoutSeconds: 10, HealthyThreshold: 5, UnhealthyThreshold: 2}
	}
}

func defaultTGAttributes(protocol, targetType string) map[string]string {
	a := map[string]string{
		"deregistration_delay.timeout_seconds":                                           "300",
		"stickiness.enabled":                                                             "false",
		"load_balancing.cross_zone.enabled":                                              "use_load_balancer_configuration",
		"target_group_health.dns_failover.minimum_healthy_targets.count":                 "1",
		"target_group_health.dns_failover.minimum_healthy_targets.percentage":            "off",
		"target_group_health.unhealthy_state_routing.minimum_healthy_targets.count":      "1",
		"target_group_health.unhealthy_state_routing.minimum_healthy_targets.percentage": "off",
	}
	if isNLBProtocol(protocol) {
		a["stickiness.type"] = "source_ip"
		a["proxy_protocol_v2.enabled"] = "false"
		a["deregistration_delay.connection_termination.enabled"] = "false"
		a["target_health_state.unhealthy.connection_termination.enabled"] = "true"
		a["target_health_state.unhealthy.draining_interval_seconds"] = "0"
		preserve := targetType == "instance" || protocol == "UDP" || protocol == "TCP_UDP"
		a["preserve_client_ip.enabled"] = strconv.FormatBool(preserve)
		return a
	}
	a["stickiness.type"] = "lb_cookie"
	a["stickiness.lb_cookie.duration_seconds"] = "86400"
	a["stickiness.app_cookie.cookie_name"] = ""
	a["stickiness.app_cookie.duration_seconds"] = "86400"
	a["slow_start.duration_seconds"] = "0"
	a["load_balancing.algorithm.type"] = "round_robin"
	a["load_balancing.algorithm.anomaly_mitigation"] = "off"
	return a
}

func (s *Server) createTargetGroup(c *call) (any, *apiError) {
	name := c.p.get("Name")
	if err := checkTGName(name); err != nil {
		return nil, err
	}
	targetType := cmp.Or(c.p.get("TargetType"), "instance")
	if !slices.Contains([]string{"instance", "ip", "lambda", "alb"}, targetType) {
		return nil, validation("1 validation error detected: Value '%s' at 'targetType' failed to satisfy constraint: Member must satisfy enum value set: [instance, ip, lambda, alb]", targetType)
	}
	tg := TargetGroup{Name: name, TargetType: targetType}
	if targetType != "lambda" {
		tg.Protocol = c.p.get("Protocol")
		if tg.Protocol == "" {
			return nil, validation("A protocol must be specified")
		}
		if !slices.Contains(tgProtocols, tg.Protocol) {
			return nil, validation("1 validation error detected: Value '%s' at 'protocol' failed to satisfy constraint: Member must satisfy enum value set: [%s]", tg.Protocol, strings.Join(tgProtocols, ", "))
		}
		port := c.p.integer("Port")
		if !port.sent {
			return nil, validation("A port must be specified")
		}
		if !port.ok || port.n < 1 || port.n > 65535 {
			return nil, validation("1 validation error detected: Value '%s' at 'port' failed to satisfy constraint: Member must have value between 1 and 65535", port.raw)
		}
		tg.Port = int32(port.n)
		tg.VPCID = c.p.get("VpcId")
		if tg.VPCID == "" {
			return nil, validation("A VPC ID must be specified")
		}
		if s.ec2.vpcs[tg.VPCID] == nil {
			return nil, validation("The VPC ID '%s' is not found", tg.VPCID)
		}
		tg.IPAddressType = cmp.Or(c.p.get("IpAddressType"), "ipv4")
	}
	tg.HealthCheck = defaultHealthCheck(tg.Protocol, targetType)
	if isNLBProtocol(tg.Protocol) && c.p.get("HealthCheckProtocol") == "HTTP" && !c.p.has("HealthCheckTimeoutSeconds") {
		// An NLB target group's health check times out after 6s over HTTP
		// and 10s over TCP and HTTPS unless told otherwise (NLB guide,
		// "Health check settings"; cloud-provider-aws relies on it).
		tg.HealthCheck.TimeoutSeconds = 6
	}
	if err := readHealthCheck(c.p, &tg.HealthCheck); err != nil {
		return nil, err
	}
	if (tg.Protocol == "UDP" || tg.Protocol == "TCP_UDP") && tg.HealthCheck.Protocol == "UDP" {
		return nil, validation("Health check protocol 'UDP' is not supported")
	}
	tags, err := readELBTags(c.p)
	if err != nil {
		return nil, err
	}
	for _, other := range s.elb.tgs {
		if other.Name != name {
			continue
		}
		same := other.Protocol == tg.Protocol && other.Port == tg.Port && other.VPCID == tg.VPCID &&
			other.TargetType == tg.TargetType && other.HealthCheck == tg.HealthCheck && other.IPAddressType == tg.IPAddressType
		if !same {
			return nil, badRequest("DuplicateTargetGroupName", "A target group with the same name '%s' exists, but with different settings", name)
		}
		return &xmlTargetGroups{TargetGroups: []xmlTargetGroup{s.tgXMLLocked(other)}}, nil
	}
	tg.ARN = s.tgARN(name, s.hexID(16))
	tg.Attributes = defaultTGAttributes(tg.Protocol, targetType)
	tg.Tags = tags
	rec := &tgRec{TargetGroup: tg, seq: s.nextSeq(), health: map[string]string{}}
	s.elb.tgs[tg.ARN] = rec
	s.stats.TargetGroups.created()
	return &xmlTargetGroups{TargetGroups: []xmlTargetGroup{s.tgXMLLocked(rec)}}, nil
}

func (s *Server) tgXMLLocked(tg *tgRec) xmlTargetGroup {
	hc := tg.HealthCheck
	x := xmlTargetGroup{
		TargetGroupArn: tg.ARN, TargetGroupName: tg.Name, Protocol: tg.Protocol, Port: tg.Port, VpcID: tg.VPCID,
		HealthCheckProtocol: hc.Protocol, HealthCheckPort: hc.Port, HealthCheckEnabled: hc.Enabled,
		HealthCheckIntervalSeconds: hc.IntervalSeconds, HealthCheckTimeoutSeconds: hc.TimeoutSeconds,
		HealthyThresholdCount: hc.HealthyThreshold, UnhealthyThresholdCount: hc.UnhealthyThreshold,
		HealthCheckPath: hc.Path, LoadBalancerArns: s.tgLoadBalancersLocked(tg.ARN),
		TargetType: tg.TargetType, IPAddressType: tg.IPAddressType,
	}
	if hc.Matcher != "" {
		x.Matcher = &xmlMatcher{HTTPCode: hc.Matcher}
	}
	return x
}

func (s *Server) describeTargetGroups(c *call) (any, *apiError) {
	lbARN, byLB := c.p.str("LoadBalancerArn")
	arns, _ := c.p.members("TargetGroupArns")
	names, _ := c.p.members("Names")
	given := 0
	for _, b := range []bool{byLB, len(arns) > 0, len(names) > 0} {
		if b {
			given++
		}
	}
	if given > 1 {
		return nil, validation("Only one of load balancer ARN, target group ARNs or names can be specified")
	}
	pg, err := parseELBPaging(c.p)
	if err != nil {
		return nil, err
	}
	all := sortedBySeq(s.elb.tgs, func(r *tgRec) int { return r.seq })
	var sel []*tgRec
	switch {
	case byLB:
		if _, err := s.lookupLBLocked(lbARN); err != nil {
			return nil, err
		}
		for _, tg := range all {
			if slices.Contains(s.tgLoadBalancersLocked(tg.ARN), lbARN) {
				sel = append(sel, tg)
			}
		}
	case len(arns) > 0:
		var notFound []string
		for _, a := range arns {
			if !tgARNPattern.MatchString(a) {
				return nil, validation("'%s' is not a valid target group ARN", a)
			}
			if tg := s.elb.tgs[a]; tg != nil {
				sel = append(sel, tg)
			} else {
				notFound = append(notFound, a)
			}
		}
		if len(notFound) > 0 {
			return nil, badRequest("TargetGroupNotFound", "Target groups '[%s]' not found", strings.Join(notFound, ", "))
		}
	case len(names) > 0:
		var notFound []string
		for _, n := range names {
			i := slices.IndexFunc(all, func(tg *tgRec) bool { return tg.Name == n })
			if i < 0 {
				notFound = append(notFound, n)
				continue
			}
			sel = append(sel, all[i])
		}
		if len(notFound) > 0 {
			return nil, badRequest("TargetGroupNotFound", "Target groups '[%s]' not found", strings.Join(notFound, ", "))
		}
	default:
		sel = all
	}
	slices.SortFunc(sel, func(a, b *tgRec) int { return a.seq - b.seq })
	sel = slices.Compact(sel)
	sel, next := page(pg, sel, func(r *tgRec) int { return r.seq }, one)
	out := &xmlTargetGroups{TargetGroups: []xmlTargetGroup{}, NextMarker: next}
	for _, tg := range sel {
		out.TargetGroups = append(out.TargetGroups, s.tgXMLLocked(tg))
	}
	return out, nil
}

func (s *Server) modifyTargetGroup(c *call) (any, *apiError) {
	tg, err := s.lookupTGLocked(c.p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	hc := tg.HealthCheck
	if err := readHealthCheck(c.p, &hc); err != nil {
		return nil, err
	}
	tg.HealthCheck = hc
	return &xmlTargetGroups{TargetGroups: []xmlTargetGroup{s.tgXMLLocked(tg)}}, nil
}

// deleteTargetGroup refuses while a listener forwards to the group. An ARN
// naming no group succeeds: the API lists no not-found error for it.
func (s *Server) deleteTargetGroup(c *call) (any, *apiError) {
	arn := c.p.get("TargetGroupArn")
	tg, err := s.lookupTGLocked(arn)
	if err != nil {
		if err.code == "TargetGroupNotFound" {
			return nil, nil
		}
		return nil, err
	}
	if len(s.tgLoadBalancersLocked(arn)) > 0 {
		return nil, badRequest("ResourceInUse", "Target group '%s' is currently in use by a listener or a rule", arn)
	}
	delete(s.elb.tgs, tg.ARN)
	s.stats.TargetGroups.deleted()
	return nil, nil
}

func (s *Server) describeTargetGroupAttributes(c *call) (any, *apiError) {
	tg, err := s.lookupTGLocked(c.p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	return &xmlAttributes{Attributes: xmlKVs(tg.Attributes)}, nil
}

func (s *Server) modifyTargetGroupAttributes(c *call) (any, *apiError) {
	tg, err := s.lookupTGLocked(c.p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	attrs, _ := c.p.memberStructs("Attributes")
	if len(attrs) == 0 {
		return nil, missing("attributes")
	}
	next := cloneTags(tg.Attributes)
	for _, a := range attrs {
		k, v := a.get("Key"), a.get("Value")
		if _, ok := tg.Attributes[k]; !ok {
			return nil, validation("Target group attribute key '%s' is not recognized", k)
		}
		if err := checkAttributeValue(k, v, "Target group"); err != nil {
			return nil, err
		}
		if k == "stickiness.type" && isNLBProtocol(tg.Protocol) && v != "source_ip" {
			return nil, validation("Target group attribute value '%s' is not valid for key '%s'", v, k)
		}
		next[k] = v
	}
	tg.Attributes = next
	return &xmlAttributes{Attributes: xmlKVs(tg.Attributes)}, nil
}

// readTargets reads Targets.member.N, defaulting ports to the group's.
func readTargets(p params, tg *tgRec) ([]Target, *apiError) {
	ts, _ := p.memberStructs("Targets")
	if len(ts) == 0 {
		return nil, missing("targets")
	}
	var out []Target
	for _, t := range ts {
		id := t.get("Id")
		if id == "" {
			return nil, missing("targets.member.id")
		}
		port := tg.Port
		if pp := t.integer("Port"); pp.sent {
			if !pp.ok || pp.n < 1 || pp.n > 65535 {
				return nil, validation("1 validation error detected: Value '%s' at 'targets.member.port' failed to satisfy constraint: Member must have value between 1 and 65535", pp.raw)
			}
			port = int32(pp.n)
		}
		out = append(out, Target{ID: id, Port: port, AvailabilityZone: t.get("AvailabilityZone")})
	}
	return out, nil
}

// checkTargetsLocked applies RegisterTargets' rules: instances must exist,
// run, and sit in the group's VPC; IP targets must be addresses of it.
func (s *Server) checkTargetsLocked(tg *tgRec, ts []Target, registering bool) *apiError {
	var invalid, notRunning, otherVPC []string
	for _, t := range ts {
		switch tg.TargetType {
		case "instance":
			inst := s.ec2.instances[t.ID]
			switch {
			case !validID("i", t.ID) || inst == nil:
				invalid = append(invalid, t.ID)
			case registering && inst.State != InstanceStateRunning && inst.State != InstanceStatePending:
				notRunning = append(notRunning, t.ID)
			case inst.VPCID != tg.VPCID:
				otherVPC = append(otherVPC, t.ID)
			}
		case "ip":
			a, err := netip.ParseAddr(t.ID)
			if err != nil {
				return validation("The IP address '%s' is not a valid IPv4 or IPv6 address", t.ID)
			}
			if vpc := s.ec2.vpcs[tg.VPCID]; vpc != nil && !mustPrefix(vpc.CIDRBlock).Contains(a) && t.AvailabilityZone != "all" && !a.IsPrivate() {
				return badRequest("InvalidTarget", "The IP address '%s' is not within a VPC CIDR or a private range, and its Availability Zone is not 'all'", t.ID)
			}
		}
	}
	switch {
	case len(invalid) > 0:
		return badRequest("InvalidTarget", "The following targets are not valid instances: %s", joinQuoted(invalid))
	case len(notRunning) > 0:
		return badRequest("InvalidTarget", "The following targets are not in a running state and cannot be registered: %s", joinQuoted(notRunning))
	case len(otherVPC) > 0:
		return badRequest("InvalidTarget", "The following targets are not in the target group VPC '%s': %s", tg.VPCID, joinQuoted(otherVPC))
	}
	return nil
}

// maxTargetsPerGroup is ELBv2's quota of targets per target group.
const maxTargetsPerGroup = 1000

func (s *Server) registerTargets(c *call) (any, *apiError) {
	tg, err := s.lookupTGLocked(c.p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	ts, err := readTargets(c.p, tg)
	if err != nil {
		return nil, err
	}
	if err := s.checkTargetsLocked(tg, ts, true); err != nil {
		return nil, err
	}
	live := s.liveTargetsLocked(tg)
	added := 0
	for _, t := range ts {
		k := slices.IndexFunc(live, func(x *targetRec) bool { return x.ID == t.ID && x.Port == t.Port })
		if k < 0 {
			added++
		}
	}
	if len(live)+added > maxTargetsPerGroup {
		return nil, badRequest("TooManyTargets", "You've reached the limit on the number of targets.")
	}
	for _, t := range ts {
		k := slices.IndexFunc(tg.targets, func(x *targetRec) bool { return x.ID == t.ID && x.Port == t.Port })
		if k >= 0 {
			if !tg.targets[k].drainUntil.IsZero() { // registering again ends the draining
				tg.targets[k].drainUntil = time.Time{}
				tg.targets[k].registered = c.now
			}
			continue
		}
		tg.targets = append(tg.targets, &targetRec{Target: t, registered: c.now})
	}
	return nil, nil
}

func (s *Server) deregisterTargets(c *call) (any, *apiError) {
	tg, err := s.lookupTGLocked(c.p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	ts, err := readTargets(c.p, tg)
	if err != nil {
		return nil, err
	}
	if tg.TargetType == "instance" {
		var invalid []string
		for _, t := range ts {
			if !validID("i", t.ID) || s.ec2.instances[t.ID] == nil {
				invalid = append(invalid, t.ID)
			}
		}
		if len(invalid) > 0 {
			return nil, badRequest("InvalidTarget", "The following targets are not valid instances: %s", joinQuoted(invalid))
		}
	}
	delay, _ := strconv.Atoi(tg.Attributes["deregistration_delay.timeout_seconds"])
	for _, t := range s.liveTargetsLocked(tg) {
		if !slices.ContainsFunc(ts, func(x Target) bool { return x.ID == t.ID && x.Port == t.Port }) || !t.drainUntil.IsZero() {
			continue
		}
		// Deregistered targets drain for the deregistration delay (only
		// while the group receives traffic), then disappear.
		if delay > 0 && len(s.tgLoadBalancersLocked(tg.ARN)) > 0 {
			t.drainUntil = c.now.Add(time.Duration(delay) * time.Second)
		} else {
			t.drainUntil = c.now
		}
	}
	s.liveTargetsLocked(tg)
	return nil, nil
}

// targetHealthLocked computes a target's health: draining after
// deregistration, forced by SetTargetHealth, unused when no load balancer
// sends the group traffic or the instance is not running, initial while
// registration (SetTargetHealthDelay) or the load balancer is in progress,
// healthy otherwise.
func (s *Server) targetHealthLocked(tg *tgRec, t *targetRec) xmlTargetHealth {
	now := s.now()
	if !t.drainUntil.IsZero() {
		return xmlTargetHealth{State: TargetHealthDraining, Reason: "Target.DeregistrationInProgress", Description: "Target deregistration is in progress"}
	}
	if forced := tg.health[t.ID]; forced != "" {
		return healthFor(forced)
	}
	lbs := s.tgLoadBalancersLocked(tg.ARN)
	if len(lbs) == 0 {
		return xmlTargetHealth{State: TargetHealthUnused, Reason: "Target.NotInUse", Description: "Target group is not configured to receive traffic from the load balancer"}
	}
	if tg.TargetType == "instance" {
		inst := s.ec2.instances[t.ID]
		if inst == nil || inst.State != InstanceStateRunning {
			state := InstanceStateTerminated
			if inst != nil {
				state = inst.State
			}
			return xmlTargetHealth{State: TargetHealthUnused, Reason: "Target.InvalidState", Description: "Target is in the " + state + " state"}
		}
	}
	if now.Before(t.registered.Add(s.elb.healthDelay)) {
		return xmlTargetHealth{State: TargetHealthInitial, Reason: "Elb.RegistrationInProgress", Description: "Target registration is in progress"}
	}
	for _, arn := range lbs {
		if lb := s.elb.lbs[arn]; lb != nil && s.lbStateLocked(lb) == LoadBalancerStateProvisioning {
			return xmlTargetHealth{State: TargetHealthInitial, Reason: "Elb.InitialHealthChecking", Description: "Initial health checks in progress"}
		}
	}
	return xmlTargetHealth{State: TargetHealthHealthy}
}

func healthFor(state string) xmlTargetHealth {
	switch state {
	case TargetHealthUnhealthy:
		return xmlTargetHealth{State: state, Reason: "Target.FailedHealthChecks", Description: "Health checks failed"}
	case TargetHealthInitial:
		return xmlTargetHealth{State: state, Reason: "Elb.InitialHealthChecking", Description: "Initial health checks in progress"}
	case TargetHealthUnused:
		return xmlTargetHealth{State: state, Reason: "Target.NotInUse", Description: "Target group is not configured to receive traffic from the load balancer"}
	case TargetHealthDraining:
		return xmlTargetHealth{State: state, Reason: "Target.DeregistrationInProgress", Description: "Target deregistration is in progress"}
	case TargetHealthUnavailable:
		return xmlTargetHealth{State: state, Reason: "Target.HealthCheckDisabled", Description: "Health checks disabled"}
	}
	return xmlTargetHealth{State: state}
}

func (s *Server) describeTargetHealth(c *call) (any, *apiError) {
	tg, err := s.lookupTGLocked(c.p.get("TargetGroupArn"))
	if err != nil {
		return nil, err
	}
	live := s.liveTargetsLocked(tg)
	hcPort := func(port int32) string {
		if tg.HealthCheck.Port == "traffic-port" || tg.HealthCheck.Port == "" {
			return strconv.Itoa(int(port))
		}
		return tg.HealthCheck.Port
	}
	out := &xmlTargetHealthDescriptions{TargetHealthDescriptions: []xmlTargetHealthDescription{}}
	add := func(t Target, h xmlTargetHealth) {
		out.TargetHealthDescriptions = append(out.TargetHealthDescriptions, xmlTargetHealthDescription{
			Target:          xmlTargetDescription{ID: t.ID, Port: t.Port, AvailabilityZone: t.AvailabilityZone},
			HealthCheckPort: hcPort(t.Port), TargetHealth: h,
		})
	}
	if c.p.has("Targets") {
		want, err := readTargets(c.p, tg)
		if err != nil {
			return nil, err
		}
		if tg.TargetType == "instance" {
			if err := s.checkTargetsLocked(tg, want, false); err != nil {
				return nil, err
			}
		}
		for _, w := range want {
			k := slices.IndexFunc(live, func(x *targetRec) bool { return x.ID == w.ID && x.Port == w.Port })
			if k < 0 {
				add(w, xmlTargetHealth{State: TargetHealthUnused, Reason: "Target.NotRegistered", Description: "Target is not registered to the target group"})
				continue
			}
			add(live[k].Target, s.targetHealthLocked(tg, live[k]))
		}
		return out, nil
	}
	for _, t := range live {
		add(t.Target, s.targetHealthLocked(tg, t))
	}
	return out, nil
}
