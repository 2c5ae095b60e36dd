package aws

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Instance health states of a Classic Load Balancer, as DescribeInstanceHealth
// names them.
const (
	InstanceHealthInService    = "InService"
	InstanceHealthOutOfService = "OutOfService"
)

// ClassicLoadBalancer is the fake's view of one Classic Load Balancer.
type ClassicLoadBalancer struct {
	Name                      string
	DNSName                   string
	CanonicalHostedZoneNameID string
	Scheme                    string // internet-facing or internal
	VPCID                     string
	Subnets                   []string
	AvailabilityZones         []string // the subnets' zones
	SecurityGroups            []string
	Listeners                 []ClassicListener
	Instances                 []string // registered instance ids
	HealthCheck               ClassicHealthCheck
	Attributes                ClassicAttributes
	Policies                  []ClassicPolicy
	// BackendPolicies are the policies set for an instance port
	// (SetLoadBalancerPoliciesForBackendServer).
	BackendPolicies map[int32][]string
	Tags            map[string]string
	CreatedTime     time.Time
}

// ClassicListener is one listener, with the policies set on it.
type ClassicListener struct {
	Protocol         string // HTTP, HTTPS, TCP or SSL
	LoadBalancerPort int32
	InstanceProtocol string
	InstancePort     int32
	SSLCertificateID string
	PolicyNames      []string
}

// ClassicHealthCheck is a Classic Load Balancer's health check.
type ClassicHealthCheck struct {
	Target             string // "TCP:31234", "HTTP:10256/healthz", ...
	Interval           int32
	Timeout            int32
	UnhealthyThreshold int32
	HealthyThreshold   int32
}

// ClassicAttributes are a Classic Load Balancer's attributes.
type ClassicAttributes struct {
	CrossZoneLoadBalancing    bool
	ConnectionDraining        bool
	ConnectionDrainingTimeout int32
	IdleTimeout               int32
	AccessLog                 bool
	AccessLogEmitInterval     int32 // 5 or 60
	AccessLogS3BucketName     string
	AccessLogS3BucketPrefix   string
	Additional                map[string]string
}

// ClassicPolicy is a policy made with CreateLoadBalancerPolicy.
type ClassicPolicy struct {
	Name       string
	TypeName   string
	Attributes []PolicyAttribute
}

// PolicyAttribute is one attribute of a policy, in the order given.
type PolicyAttribute struct {
	Name, Value string
}

type classicState struct {
	lbs map[string]*classicRec // by name
	// defaultELBGroup is the "default_elb_..." group ELB makes, once per
	// account, for load balancers created in the default VPC without
	// security groups.
	defaultELBGroup string
}

func (c *classicState) init() {
	c.lbs = map[string]*classicRec{}
}

type classicRec struct {
	ClassicLoadBalancer
	seq        int
	registered map[string]time.Time // instance id -> registration time
	health     map[string]string    // instance id -> forced state
}

func (lb ClassicLoadBalancer) clone() ClassicLoadBalancer {
	lb.Subnets = slices.Clone(lb.Subnets)
	lb.AvailabilityZones = slices.Clone(lb.AvailabilityZones)
	lb.SecurityGroups = slices.Clone(lb.SecurityGroups)
	lb.Listeners = slices.Clone(lb.Listeners)
	for k := range lb.Listeners {
		lb.Listeners[k].PolicyNames = slices.Clone(lb.Listeners[k].PolicyNames)
	}
	lb.Instances = slices.Clone(lb.Instances)
	lb.Attributes.Additional = cloneTags(lb.Attributes.Additional)
	lb.Policies = slices.Clone(lb.Policies)
	for k := range lb.Policies {
		lb.Policies[k].Attributes = slices.Clone(lb.Policies[k].Attributes)
	}
	if lb.BackendPolicies != nil {
		bp := make(map[int32][]string, len(lb.BackendPolicies))
		for port, names := range lb.BackendPolicies {
			bp[port] = slices.Clone(names)
		}
		lb.BackendPolicies = bp
	}
	lb.Tags = cloneTags(lb.Tags)
	return lb
}

// ClassicLoadBalancers returns every Classic Load Balancer in creation
// order.
func (s *Server) ClassicLoadBalancers() []ClassicLoadBalancer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ClassicLoadBalancer
	for _, lb := range sortedBySeq(s.clb.lbs, func(r *classicRec) int { return r.seq }) {
		out = append(out, lb.clone())
	}
	return out
}

// ClassicLoadBalancer returns a Classic Load Balancer by name.
func (s *Server) ClassicLoadBalancer(name string) (ClassicLoadBalancer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := s.clb.lbs[name]
	if lb == nil {
		return ClassicLoadBalancer{}, false
	}
	return lb.clone(), true
}

// AddClassicLoadBalancer adds a Classic Load Balancer as if another
// client had made it, so migration tests can start from what another
// controller built, and returns it completed. Unset fields get what
// CreateLoadBalancer would give: the default VPC's subnets in every zone,
// the internet-facing scheme, a DNS name, the default health check
// (TCP on the first listener's instance port) and attributes. Instances
// are registered long enough ago to be InService. It panics if the name
// is taken or a subnet does not exist.
func (s *Server) AddClassicLoadBalancer(lb ClassicLoadBalancer) ClassicLoadBalancer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkClassicName(lb.Name); err != nil {
		panic("aws fake: AddClassicLoadBalancer: " + err.message)
	}
	if s.clb.lbs[lb.Name] != nil {
		panic("aws fake: AddClassicLoadBalancer: " + lb.Name + " exists")
	}
	lb = lb.clone()
	if len(lb.Subnets) == 0 {
		for _, sub := range sortedBySeq(s.ec2.subnets, func(r *subnetRec) int { return r.seq }) {
			if sub.VPCID == s.ec2.defaultVPC && sub.DefaultForAZ {
				lb.Subnets = append(lb.Subnets, sub.ID)
			}
		}
	}
	lb.AvailabilityZones = nil
	for _, id := range lb.Subnets {
		sub := s.ec2.subnets[id]
		if sub == nil {
			panic("aws fake: AddClassicLoadBalancer: no subnet " + id)
		}
		lb.VPCID = sub.VPCID
		lb.AvailabilityZones = append(lb.AvailabilityZones, sub.AvailabilityZone)
	}
	lb.Scheme = cmp.Or(lb.Scheme, "internet-facing")
	if lb.DNSName == "" {
		lb.DNSName = s.lbDNSNameLocked("classic", lb.Scheme, lb.Name)
	}
	lb.CanonicalHostedZoneNameID = cmp.Or(lb.CanonicalHostedZoneNameID, s.hostedZoneLocked("classic"))
	for k := range lb.Listeners {
		l := &lb.Listeners[k]
		l.InstanceProtocol = cmp.Or(l.InstanceProtocol, defaultInstanceProtocol(l.Protocol))
	}
	if lb.HealthCheck.Target == "" {
		lb.HealthCheck = defaultClassicHealthCheck(lb.Listeners)
	}
	def := defaultClassicAttributes()
	lb.Attributes.IdleTimeout = cmp.Or(lb.Attributes.IdleTimeout, def.IdleTimeout)
	lb.Attributes.ConnectionDrainingTimeout = cmp.Or(lb.Attributes.ConnectionDrainingTimeout, def.ConnectionDrainingTimeout)
	if lb.Attributes.Additional == nil {
		lb.Attributes.Additional = def.Additional
	}
	if lb.CreatedTime.IsZero() {
		lb.CreatedTime = s.now().UTC().Truncate(time.Millisecond)
	}
	rec := &classicRec{ClassicLoadBalancer: lb, seq: s.nextSeq(), registered: map[string]time.Time{}, health: map[string]string{}}
	for _, id := range lb.Instances {
		rec.registered[id] = s.now().Add(-s.elb.healthDelay)
	}
	s.clb.lbs[lb.Name] = rec
	s.stats.ClassicLoadBalancers.created()
	return rec.clone()
}

// SetClassicInstanceHealth forces the health of an instance registered
// with a Classic Load Balancer (InstanceHealthOutOfService, ...); ""
// returns it to the computed state.
func (s *Server) SetClassicInstanceHealth(name, instanceID, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := s.clb.lbs[name]
	if lb == nil {
		return fmt.Errorf("aws fake: no classic load balancer %s", name)
	}
	if state == "" {
		delete(lb.health, instanceID)
	} else {
		lb.health[instanceID] = state
	}
	return nil
}

// classicUsesGroupLocked reports whether a Classic Load Balancer holds a
// security group: its network interfaces do, as an ELBv2 one's do.
func (s *Server) classicUsesGroupLocked(id string) bool {
	for _, lb := range s.clb.lbs {
		if slices.Contains(lb.SecurityGroups, id) {
			return true
		}
	}
	return false
}

func defaultInstanceProtocol(protocol string) string {
	if protocol == "HTTP" || protocol == "HTTPS" {
		return "HTTP"
	}
	return "TCP"
}

// defaultClassicHealthCheck is the check a load balancer made through the
// API starts with: TCP to the first listener's instance port, every 30s.
func defaultClassicHealthCheck(ls []ClassicListener) ClassicHealthCheck {
	port := int32(80)
	if len(ls) > 0 {
		port = ls[0].InstancePort
	}
	return ClassicHealthCheck{Target: fmt.Sprintf("TCP:%d", port), Interval: 30, Timeout: 5, UnhealthyThreshold: 2, HealthyThreshold: 10}
}

// defaultClassicAttributes are those of a load balancer made through the
// API (the console turns cross-zone and draining on; the API does not).
func defaultClassicAttributes() ClassicAttributes {
	return ClassicAttributes{
		ConnectionDrainingTimeout: 300, IdleTimeout: 60,
		Additional: map[string]string{"elb.http.desyncmitigationmode": "defensive"},
	}
}

func (lb *classicRec) listener(port int32) *ClassicListener {
	for k := range lb.Listeners {
		if lb.Listeners[k].LoadBalancerPort == port {
			return &lb.Listeners[k]
		}
	}
	return nil
}

func (lb *classicRec) policy(name string) *ClassicPolicy {
	for k := range lb.Policies {
		if lb.Policies[k].Name == name {
			return &lb.Policies[k]
		}
	}
	return nil
}

// backendPorts lists the instance ports with policies, in order.
func (lb *classicRec) backendPorts() []int32 {
	return slices.Sorted(maps.Keys(lb.BackendPolicies))
}
