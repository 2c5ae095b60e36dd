package aws

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Instances, health checks, attributes and policies of Classic Load
// Balancers.

// readClassicInstancesLocked reads Instances.member.N.InstanceId; every
// instance must exist, not be terminated, and (when registering) be in
// the load balancer's VPC, or the call is InvalidInstance.
func (s *Server) readClassicInstancesLocked(p params, lb *classicRec, registering bool) ([]string, *apiError) {
	ms, _ := p.memberStructs("Instances")
	var ids, invalid []string
	for _, m := range ms {
		id := m.get("InstanceId")
		inst := s.ec2.instances[id]
		switch {
		case !validID("i", id) || inst == nil || inst.State == InstanceStateTerminated:
			invalid = append(invalid, id)
		case registering && inst.VPCID != lb.VPCID:
			invalid = append(invalid, id)
		default:
			ids = append(ids, id)
		}
	}
	if len(invalid) > 0 {
		return nil, badRequest("InvalidInstance", "The specified instances are not valid: %s", joinQuoted(invalid))
	}
	return ids, nil
}

func (lb *classicRec) instancesXML() *xmlClassicInstances {
	out := &xmlClassicInstances{Instances: xmlList[xmlInstanceID]{}}
	for _, id := range lb.Instances {
		out.Instances = append(out.Instances, xmlInstanceID{InstanceID: id})
	}
	return out
}

// registerClassicInstances adds instances and answers with every instance
// the load balancer has. Registering one again changes nothing.
func (s *Server) registerClassicInstances(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	ids, err := s.readClassicInstancesLocked(c.p, lb, true)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, missing("instances")
	}
	for _, id := range ids {
		if !slices.Contains(lb.Instances, id) {
			lb.Instances = append(lb.Instances, id)
			lb.registered[id] = c.now
		}
	}
	return lb.instancesXML(), nil
}

// deregisterClassicInstances removes instances and answers with those
// left. An existing instance that is not registered is passed over.
func (s *Server) deregisterClassicInstances(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	ids, err := s.readClassicInstancesLocked(c.p, lb, false)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, missing("instances")
	}
	lb.Instances = slices.DeleteFunc(lb.Instances, func(id string) bool { return slices.Contains(ids, id) })
	for _, id := range ids {
		delete(lb.registered, id)
	}
	return lb.instancesXML(), nil
}

// instanceHealthLocked computes an instance's health: forced by
// SetClassicInstanceHealth; OutOfService while not running, and for the
// target health delay after registration (the health checks have yet to
// pass HealthyThreshold times); InService otherwise.
func (s *Server) instanceHealthLocked(lb *classicRec, id string) xmlClassicInstanceState {
	st := xmlClassicInstanceState{InstanceID: id, State: InstanceHealthInService, ReasonCode: "N/A", Description: "N/A"}
	inst := s.ec2.instances[id]
	registered, ok := lb.registered[id]
	switch {
	case !ok:
		st.State, st.ReasonCode, st.Description = InstanceHealthOutOfService, "Instance", "Instance is not currently registered with the LoadBalancer."
	case lb.health[id] == InstanceHealthOutOfService:
		st.State, st.ReasonCode, st.Description = InstanceHealthOutOfService, "Instance", "Instance has failed at least the UnhealthyThreshold number of health checks consecutively."
	case lb.health[id] == InstanceHealthInService:
	case inst == nil || inst.State != InstanceStateRunning:
		state := InstanceStateTerminated
		if inst != nil {
			state = inst.State
		}
		st.State, st.ReasonCode, st.Description = InstanceHealthOutOfService, "Instance", "Instance is in "+state+" state."
	case s.now().Before(registered.Add(s.elb.healthDelay)):
		st.State, st.ReasonCode, st.Description = InstanceHealthOutOfService, "ELB", "Instance registration is still in progress."
	}
	return st
}

// describeInstanceHealth reports the registered instances, or those
// asked for (an unregistered one as OutOfService, an unknown one
// InvalidInstance).
func (s *Server) describeInstanceHealth(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	ids, err := s.readClassicInstancesLocked(c.p, lb, false)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		ids = lb.Instances
	}
	out := &xmlClassicInstanceStates{InstanceStates: xmlList[xmlClassicInstanceState]{}}
	for _, id := range ids {
		out.InstanceStates = append(out.InstanceStates, s.instanceHealthLocked(lb, id))
	}
	return out, nil
}

// healthTarget is PROTOCOL:PORT, with a path for HTTP and HTTPS only.
var healthTarget = regexp.MustCompile(`^(TCP|SSL|HTTP|HTTPS):(\d{1,5})(/.*)?$`)

// configureHealthCheck replaces the health check, checked against the
// model's ranges and the rule that the timeout be shorter than the
// interval.
func (s *Server) configureHealthCheck(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	hp := c.p.sub("HealthCheck")
	target, ok := hp.str("Target")
	if !ok {
		return nil, missing("healthCheck.target")
	}
	m := healthTarget.FindStringSubmatch(target)
	if m == nil {
		return nil, validation("Invalid health check target '%s': must be PROTOCOL:PORT, with a path for HTTP and HTTPS", target)
	}
	if port, _ := strconv.Atoi(m[2]); port < 1 || port > 65535 {
		return nil, validation("Invalid health check target '%s': the port must be between 1 and 65535", target)
	}
	if m[3] != "" && (m[1] == "TCP" || m[1] == "SSL") {
		return nil, validation("Invalid health check target '%s': TCP and SSL targets take no path", target)
	}
	if m[3] == "" && (m[1] == "HTTP" || m[1] == "HTTPS") {
		target += "/"
	}
	hc := ClassicHealthCheck{Target: target}
	for _, f := range []struct {
		name     string
		min, max int64
		dst      *int32
	}{
		{"Interval", 5, 300, &hc.Interval}, {"Timeout", 2, 60, &hc.Timeout},
		{"UnhealthyThreshold", 2, 10, &hc.UnhealthyThreshold}, {"HealthyThreshold", 2, 10, &hc.HealthyThreshold},
	} {
		n := hp.integer(f.name)
		field := "healthCheck." + strings.ToLower(f.name[:1]) + f.name[1:]
		switch {
		case !n.sent:
			return nil, missing(field)
		case !n.ok || n.n < f.min || n.n > f.max:
			return nil, validation("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have value between %d and %d", n.raw, field, f.min, f.max)
		}
		*f.dst = int32(n.n)
	}
	if hc.Timeout >= hc.Interval {
		return nil, validation("HealthCheck Timeout must be less than Interval")
	}
	lb.HealthCheck = hc
	return &xmlHealthCheckResult{HealthCheck: classicHealthCheckXML(hc)}, nil
}

func (s *Server) describeClassicAttributes(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	return &xmlDescribeClassicAttributes{LoadBalancerAttributes: classicAttributesXML(lb.Attributes)}, nil
}

// classicAdditional are the AdditionalAttributes keys the service knows,
// with their values.
var classicAdditional = map[string][]string{
	"elb.http.desyncmitigationmode": {"monitor", "defensive", "strictest"},
}

// modifyClassicAttributes changes the attributes sent and answers with
// all of them. Nothing changes unless all are valid.
func (s *Server) modifyClassicAttributes(c *call) (any, *apiError) {
	lb, err := s.lookupClassicLocked(c.p)
	if err != nil {
		return nil, err
	}
	ap := c.p.sub("LoadBalancerAttributes")
	if !c.p.has("LoadBalancerAttributes") {
		return nil, missing("loadBalancerAttributes")
	}
	a := lb.Attributes
	a.Additional = cloneTags(a.Additional)
	enabled := func(section string) (bool, bool, *apiError) {
		if !ap.has(section) {
			return false, false, nil
		}
		v, sent, ok := ap.sub(section).boolean("Enabled")
		switch {
		case !sent:
			return false, false, missing("loadBalancerAttributes." + strings.ToLower(section[:1]) + section[1:] + ".enabled")
		case !ok:
			return false, false, validation("Invalid value for %s.Enabled: %s", section, ap.sub(section).get("Enabled"))
		}
		return v, true, nil
	}
	if v, sent, err := enabled("CrossZoneLoadBalancing"); err != nil {
		return nil, err
	} else if sent {
		a.CrossZoneLoadBalancing = v
	}
	if v, sent, err := enabled("ConnectionDraining"); err != nil {
		return nil, err
	} else if sent {
		a.ConnectionDraining = v
		if t := ap.sub("ConnectionDraining").integer("Timeout"); t.sent {
			if !t.ok || t.n < 1 || t.n > 3600 {
				return nil, validation("ConnectionDraining timeout must be between 1 and 3600 seconds, not '%s'", t.raw)
			}
			a.ConnectionDrainingTimeout = int32(t.n)
		}
	}
	if ap.has("ConnectionSettings") {
		t := ap.sub("ConnectionSettings").integer("IdleTimeout")
		switch {
		case !t.sent:
			return nil, missing("loadBalancerAttributes.connectionSettings.idleTimeout")
		case !t.ok || t.n < 1 || t.n > 3600:
			return nil, validation("1 validation error detected: Value '%s' at 'loadBalancerAttributes.connectionSettings.idleTimeout' failed to satisfy constraint: Member must have value between 1 and 3600", t.raw)
		}
		a.IdleTimeout = int32(t.n)
	}
	if v, sent, err := enabled("AccessLog"); err != nil {
		return nil, err
	} else if sent {
		if err := readAccessLog(ap.sub("AccessLog"), v, &a); err != nil {
			return nil, err
		}
	}
	extra, _ := ap.memberStructs("AdditionalAttributes")
	if len(extra) > 10 {
		return nil, validation("At most 10 AdditionalAttributes may be specified")
	}
	for _, kv := range extra {
		k, v := kv.get("Key"), kv.get("Value")
		values, known := classicAdditional[k]
		if !known {
			return nil, badRequest("LoadBalancerAttributeNotFound", "The specified load balancer attribute does not exist: %s", k)
		}
		if !slices.Contains(values, v) {
			return nil, validation("Invalid value '%s' for attribute %s: must be one of %s", v, k, strings.Join(values, ", "))
		}
		a.Additional[k] = v
	}
	lb.Attributes = a
	return &xmlModifyClassicAttributes{LoadBalancerName: lb.Name, LoadBalancerAttributes: classicAttributesXML(a)}, nil
}

// readAccessLog applies AccessLog: enabling it needs a bucket, and logs
// are emitted every 5 or 60 minutes (60 unless told).
func readAccessLog(p params, enabled bool, a *ClassicAttributes) *apiError {
	a.AccessLog = enabled
	if !enabled {
		a.AccessLogS3BucketName, a.AccessLogS3BucketPrefix, a.AccessLogEmitInterval = "", "", 0
		return nil
	}
	a.AccessLogS3BucketName = p.get("S3BucketName")
	a.AccessLogS3BucketPrefix = p.get("S3BucketPrefix")
	a.AccessLogEmitInterval = 60
	if n := p.integer("EmitInterval"); n.sent {
		if !n.ok || (n.n != 5 && n.n != 60) {
			return validation("EmitInterval must be 5 or 60, not '%s'", n.raw)
		}
		a.AccessLogEmitInterval = int32(n.n)
	}
	if a.AccessLogS3BucketName == "" {
		return invalidConfig("An S3 bucket name is required to enable access logs")
	}
	return nil
}
