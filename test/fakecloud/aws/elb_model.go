package aws

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Load balancer states, as ELBv2 names them.
const (
	LoadBalancerStateProvisioning = "provisioning"
	LoadBalancerStateActive       = "active"
	LoadBalancerStateFailed       = "failed"
)

// Target health states, as ELBv2 names them.
const (
	TargetHealthInitial     = "initial"
	TargetHealthHealthy     = "healthy"
	TargetHealthUnhealthy   = "unhealthy"
	TargetHealthUnused      = "unused"
	TargetHealthDraining    = "draining"
	TargetHealthUnavailable = "unavailable"
)

// LoadBalancer is the fake's view of one ELBv2 load balancer.
type LoadBalancer struct {
	ARN                   string
	Name                  string
	Type                  string // network, application or gateway
	Scheme                string // internet-facing or internal
	State                 string // provisioning, active or failed
	VPCID                 string
	DNSName               string
	CanonicalHostedZoneID string
	IPAddressType         string // ipv4 or dualstack
	Subnets               []LoadBalancerSubnet
	SecurityGroups        []string
	Attributes            map[string]string
	Tags                  map[string]string
	CreatedTime           time.Time
}

// LoadBalancerSubnet is one subnet (zone) of a load balancer, with the
// addresses given for it in SubnetMappings.
type LoadBalancerSubnet struct {
	SubnetID           string
	ZoneName           string
	AllocationID       string // an Elastic IP of an internet-facing NLB
	IPAddress          string // the Elastic IP's address
	PrivateIPv4Address string // of an internal NLB
	IPv6Address        string
}

// TargetGroup is the fake's view of one target group.
type TargetGroup struct {
	ARN              string
	Name             string
	Protocol         string
	Port             int32
	VPCID            string
	TargetType       string // instance, ip, lambda or alb
	IPAddressType    string
	HealthCheck      HealthCheck
	LoadBalancerARNs []string // the load balancers whose listeners forward to it
	// Targets are the registered targets; those draining after
	// deregistration are not included.
	Targets    []Target
	Attributes map[string]string
	Tags       map[string]string
}

// HealthCheck is a target group's health check.
type HealthCheck struct {
	Enabled            bool
	Protocol           string
	Port               string // "traffic-port" or a number
	Path               string
	IntervalSeconds    int32
	TimeoutSeconds     int32
	HealthyThreshold   int32
	UnhealthyThreshold int32
	Matcher            string // HTTP codes, e.g. "200-399"
}

// Target is a registered target.
type Target struct {
	ID               string
	Port             int32
	AvailabilityZone string
}

// Listener is the fake's view of one listener.
type Listener struct {
	ARN             string
	LoadBalancerARN string
	Protocol        string
	Port            int32
	DefaultActions  []Action
	Certificates    []Certificate // the default one
	// ExtraCertificates are those added with AddListenerCertificates.
	ExtraCertificates []string
	SSLPolicy         string
	ALPNPolicy        []string
	Tags              map[string]string
}

// Action is a listener's forward action.
type Action struct {
	Type           string // forward
	TargetGroupARN string
	Order          int32
	// TargetGroups are the weighted target groups of the forward config;
	// a plain TargetGroupArn shows as one with weight 1.
	TargetGroups       []WeightedTargetGroup
	StickinessEnabled  bool
	StickinessDuration int32
}

// WeightedTargetGroup is one target group of a forward action.
type WeightedTargetGroup struct {
	ARN    string
	Weight int32
}

// Certificate is a listener certificate.
type Certificate struct {
	ARN       string
	IsDefault bool
}

// Stats counts resources over the fake's life, whether made through the
// API or the helpers, so tests can check nothing leaks and nothing is made
// twice. Security groups exclude the VPCs' "default" ones.
type Stats struct {
	LoadBalancers        ResourceStats
	TargetGroups         ResourceStats
	Listeners            ResourceStats
	SecurityGroups       ResourceStats
	ClassicLoadBalancers ResourceStats
}

// ResourceStats counts one kind of resource: Created and Deleted ever,
// Live now and Peak, the most that existed at once.
type ResourceStats struct {
	Created, Deleted, Live, Peak int
}

func (r *ResourceStats) created() {
	r.Created++
	r.Live++
	r.Peak = max(r.Peak, r.Live)
}

func (r *ResourceStats) deleted() {
	r.Deleted++
	r.Live--
}

// Stats returns the resource counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

type elbState struct {
	lbs             map[string]*lbRec
	tgs             map[string]*tgRec
	listeners       map[string]*listenerRec
	activationDelay time.Duration
	healthDelay     time.Duration
}

func (e *elbState) init() {
	e.lbs = map[string]*lbRec{}
	e.tgs = map[string]*tgRec{}
	e.listeners = map[string]*listenerRec{}
}

type lbRec struct {
	LoadBalancer
	seq           int
	stateOverride string
}

type tgRec struct {
	TargetGroup
	seq     int
	targets []*targetRec
	health  map[string]string // target id -> forced health state
}

type targetRec struct {
	Target
	registered time.Time
	drainUntil time.Time // set while draining after deregistration
}

type listenerRec struct {
	Listener
	seq int
}

// SetLoadBalancerActivationDelay sets how long load balancers created
// through the API stay "provisioning" before turning "active". The
// default, 0, makes them active from the next read on (the create answer
// itself always says provisioning, as on AWS).
func (s *Server) SetLoadBalancerActivationDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.elb.activationDelay = d
}

// SetConsistencyDelay sets how long a security group created through the
// API stays invisible to reads: describing it, naming it in a rule or a
// load balancer answers InvalidGroup.NotFound (InvalidSecurityGroup from
// ELBv2) and filtered listings leave it out, as EC2's eventual consistency
// allows ("Eventual consistency in the Amazon EC2 API"). The default, 0,
// makes groups visible at once.
func (s *Server) SetConsistencyDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ec2.consistency = d
}

// SetDependencyLinger sets how long a deleted load balancer's network
// interfaces keep its security groups in use: deleting such a group
// answers DependencyViolation until then, as on AWS, where an NLB's (or a
// Classic Load Balancer's) interfaces go some time after it. The default, 0, frees them at
// once.
func (s *Server) SetDependencyLinger(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ec2.linger = d
}

// SetTargetHealthDelay sets how long newly registered targets stay
// "initial" before turning "healthy", and instances newly registered with
// a Classic Load Balancer OutOfService before turning InService. The
// default, 0, makes them healthy from the next read on.
func (s *Server) SetTargetHealthDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.elb.healthDelay = d
}

// SetLoadBalancerState forces a load balancer's state ("failed", say);
// "" returns it to the normal provisioning-then-active course.
func (s *Server) SetLoadBalancerState(arn, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := s.elb.lbs[arn]
	if lb == nil {
		return fmt.Errorf("aws fake: no load balancer %s", arn)
	}
	lb.stateOverride = state
	return nil
}

// SetTargetHealth forces the health of a target (every port of it) in a
// target group: TargetHealthUnhealthy, TargetHealthHealthy, ...; ""
// returns it to the computed state.
func (s *Server) SetTargetHealth(targetGroupARN, targetID, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tg := s.elb.tgs[targetGroupARN]
	if tg == nil {
		return fmt.Errorf("aws fake: no target group %s", targetGroupARN)
	}
	if state == "" {
		delete(tg.health, targetID)
	} else {
		tg.health[targetID] = state
	}
	return nil
}

func (s *Server) lbStateLocked(lb *lbRec) string {
	if lb.stateOverride != "" {
		return lb.stateOverride
	}
	if s.now().Before(lb.CreatedTime.Add(s.elb.activationDelay)) {
		return LoadBalancerStateProvisioning
	}
	return LoadBalancerStateActive
}

func (s *Server) lbViewLocked(lb *lbRec) LoadBalancer {
	v := lb.LoadBalancer
	v.Subnets = slices.Clone(v.Subnets)
	v.SecurityGroups = slices.Clone(v.SecurityGroups)
	v.Attributes = cloneTags(v.Attributes)
	v.Tags = cloneTags(v.Tags)
	v.State = s.lbStateLocked(lb)
	return v
}

// LoadBalancers returns every load balancer in creation order.
func (s *Server) LoadBalancers() []LoadBalancer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []LoadBalancer
	for _, lb := range sortedBySeq(s.elb.lbs, func(r *lbRec) int { return r.seq }) {
		out = append(out, s.lbViewLocked(lb))
	}
	return out
}

// LoadBalancer returns a load balancer by ARN.
func (s *Server) LoadBalancer(arn string) (LoadBalancer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := s.elb.lbs[arn]
	if lb == nil {
		return LoadBalancer{}, false
	}
	return s.lbViewLocked(lb), true
}

func (s *Server) tgViewLocked(tg *tgRec) TargetGroup {
	v := tg.TargetGroup
	v.Attributes = cloneTags(v.Attributes)
	v.Tags = cloneTags(v.Tags)
	v.LoadBalancerARNs = s.tgLoadBalancersLocked(tg.ARN)
	v.Targets = nil
	for _, t := range s.liveTargetsLocked(tg) {
		if t.drainUntil.IsZero() {
			v.Targets = append(v.Targets, t.Target)
		}
	}
	return v
}

// TargetGroups returns every target group in creation order.
func (s *Server) TargetGroups() []TargetGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TargetGroup
	for _, tg := range sortedBySeq(s.elb.tgs, func(r *tgRec) int { return r.seq }) {
		out = append(out, s.tgViewLocked(tg))
	}
	return out
}

// TargetGroup returns a target group by ARN.
func (s *Server) TargetGroup(arn string) (TargetGroup, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tg := s.elb.tgs[arn]
	if tg == nil {
		return TargetGroup{}, false
	}
	return s.tgViewLocked(tg), true
}

func (l Listener) clone() Listener {
	l.DefaultActions = slices.Clone(l.DefaultActions)
	for k := range l.DefaultActions {
		l.DefaultActions[k].TargetGroups = slices.Clone(l.DefaultActions[k].TargetGroups)
	}
	l.Certificates = slices.Clone(l.Certificates)
	l.ExtraCertificates = slices.Clone(l.ExtraCertificates)
	l.ALPNPolicy = slices.Clone(l.ALPNPolicy)
	l.Tags = cloneTags(l.Tags)
	return l
}

// Listeners returns every listener in creation order.
func (s *Server) Listeners() []Listener {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Listener
	for _, l := range sortedBySeq(s.elb.listeners, func(r *listenerRec) int { return r.seq }) {
		out = append(out, l.clone())
	}
	return out
}

// liveTargetsLocked drops targets whose draining is over and returns the
// rest.
func (s *Server) liveTargetsLocked(tg *tgRec) []*targetRec {
	now := s.now()
	tg.targets = slices.DeleteFunc(tg.targets, func(t *targetRec) bool {
		return !t.drainUntil.IsZero() && !now.Before(t.drainUntil)
	})
	return tg.targets
}

// tgLoadBalancersLocked lists the load balancers whose listeners forward to
// a target group.
func (s *Server) tgLoadBalancersLocked(arn string) []string {
	var out []string
	for _, l := range sortedBySeq(s.elb.listeners, func(r *listenerRec) int { return r.seq }) {
		if l.forwardsTo(arn) && !slices.Contains(out, l.LoadBalancerARN) {
			out = append(out, l.LoadBalancerARN)
		}
	}
	return out
}

func (l *listenerRec) forwardsTo(tgARN string) bool {
	for _, a := range l.DefaultActions {
		if a.TargetGroupARN == tgARN {
			return true
		}
		for _, w := range a.TargetGroups {
			if w.ARN == tgARN {
				return true
			}
		}
	}
	return false
}

// ARN shapes; a malformed ARN is a ValidationError, a well-formed unknown
// one a *NotFound.
var (
	lbARNPattern       = regexp.MustCompile(`^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\d{12}:loadbalancer/(app|net|gwy)/[A-Za-z0-9-]{1,32}/[0-9a-f]{16}$`)
	tgARNPattern       = regexp.MustCompile(`^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\d{12}:targetgroup/[A-Za-z0-9-]{1,32}/[0-9a-f]{16}$`)
	listenerARNPattern = regexp.MustCompile(`^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\d{12}:listener/(app|net|gwy)/[A-Za-z0-9-]{1,32}/[0-9a-f]{16}/[0-9a-f]{16}$`)
)

// canonicalHostedZones are the Route 53 zones of load balancer DNS names
// in a few regions; others get a made-up one.
var canonicalHostedZones = map[string][2]string{ // region -> {network, application}
	"us-east-1":      {"Z26RNL4JYFTOTI", "Z35SXDOTRQ7X7K"},
	"us-east-2":      {"ZLMOA37VPKANP", "Z3AADJGX6KTTL2"},
	"us-west-1":      {"Z24FKFUX50B4VW", "Z368ELLRRE2KJ0"},
	"us-west-2":      {"Z18D5FSROUN65G", "Z1H1FL5HABSF5"},
	"eu-west-1":      {"Z2IFOLAFXWLO4F", "Z32O12XQLNTSW2"},
	"eu-west-2":      {"ZD4D7Y8KGAS4G", "ZHURV8PSTC4K8"},
	"eu-central-1":   {"Z3F0SRJ5LGBH90", "Z215JYRZR1TBD5"},
	"ap-northeast-1": {"Z31USIVHYNEOWT", "Z14GRHDCWA56QT"},
	"ap-southeast-1": {"ZKVM4W9LS7TM", "Z1LMS91P8CMLE5"},
	"ap-southeast-2": {"ZCT6FZBF4DROD", "Z1GM3OXH4ZPM65"},
}

func (s *Server) hostedZoneLocked(lbType string) string {
	z, ok := canonicalHostedZones[s.region]
	if !ok {
		z = [2]string{"Z0FAKENLB" + regionAbbrev(s.region), "Z0FAKEALB" + regionAbbrev(s.region)}
	}
	if lbType == "network" {
		return z[0]
	}
	return z[1]
}
