package aws

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/annotations"
)

// Annotations only Classic Load Balancers use, with the AWS CCM's names.
const (
	AnnAccessLogEnabled          = annPrefix + "access-log-enabled"
	AnnAccessLogEmitInterval     = annPrefix + "access-log-emit-interval"
	AnnAccessLogS3BucketName     = annPrefix + "access-log-s3-bucket-name"
	AnnAccessLogS3BucketPrefix   = annPrefix + "access-log-s3-bucket-prefix"
	AnnConnectionDrainingEnabled = annPrefix + "connection-draining-enabled"
	AnnConnectionDrainingTimeout = annPrefix + "connection-draining-timeout"
	AnnConnectionIdleTimeout     = annPrefix + "connection-idle-timeout"
	AnnExtraSecurityGroups       = annPrefix + "extra-security-groups"
	AnnSecurityGroups            = annPrefix + "security-groups"
)

// The names of the policies the AWS CCM makes on a Classic Load Balancer;
// the same names let polyccm take over its load balancers as they are.
const (
	proxyProtocolPolicy = "k8s-proxyprotocol-enabled"
	sslPolicyPrefix     = "k8s-SSLNegotiationPolicy-"
)

// The AWS CCM's health check defaults for Classic Load Balancers.
const (
	classicHCHealthy   = 2
	classicHCUnhealthy = 6
	classicHCTimeout   = 5
	classicHCInterval  = 10
	classicIdleTimeout = 60
)

var (
	sgIDRE     = regexp.MustCompile(`^sg-[0-9a-f]{8,17}$`)
	bucketRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	checkSGIDs = func(s string) error {
		if !sgIDRE.MatchString(s) {
			return fmt.Errorf("not a security group ID")
		}
		return nil
	}
)

// classicAnnotationSpecs are declared with the NLB's in LBAnnotations.
var classicAnnotationSpecs = []annotations.Spec{
	annotations.Bool(AnnAccessLogEnabled, "false", "Write access logs to S3 (with access-log-s3-bucket-name); on an NLB, the access_logs.s3.* attributes."),
	annotations.Enum(AnnAccessLogEmitInterval, []string{"5", "60"}, "60", "Classic: minutes between access log files."),
	annotations.String(AnnAccessLogS3BucketName, "an S3 bucket name", "", "The bucket access logs go to.", func(s string) error {
		if !bucketRE.MatchString(s) {
			return fmt.Errorf("not a bucket name")
		}
		return nil
	}),
	annotations.String(AnnAccessLogS3BucketPrefix, "a key prefix", "", "The prefix of the access log objects.", nil),
	annotations.Bool(AnnConnectionDrainingEnabled, "false", "Classic: let requests to a leaving instance finish."),
	annotations.Int(AnnConnectionDrainingTimeout, 1, 3600, "300", "Classic: seconds connection draining waits."),
	annotations.Int(AnnConnectionIdleTimeout, 1, 4000, "60", "Classic: seconds a connection may be idle."),
	annotations.List(AnnExtraSecurityGroups, "comma-separated security group IDs", "Classic: groups added to the load balancer besides its own.", checkSGIDs),
	annotations.List(AnnSecurityGroups, "comma-separated security group IDs", "The load balancer's own groups instead of one polyccm makes (polyccm changes none of their rules). Classic: the first is let into the nodes. NLB: only on an NLB made with security groups.", checkSGIDs),
}

// classicOnly and nlbOnly are the keys one kind uses and the other does
// not: given on the other kind, each is said once and ignored.
var (
	classicOnly = []string{AnnAccessLogEmitInterval, AnnConnectionDrainingEnabled, AnnConnectionDrainingTimeout, AnnConnectionIdleTimeout, AnnExtraSecurityGroups}
	nlbOnly     = []string{AnnEIPAllocations, AnnPrivateIPv4Addresses, AnnTargetGroupAttributes, AnnIPAddressType}
)

// ignoreOtherType drops the annotations of the other kind of load
// balancer, with a warning each.
func ignoreOtherType(a *annotations.Values, classic bool) {
	keys, why := classicOnly, "applies to Classic Load Balancers only; this Service has a Network Load Balancer"
	if classic {
		keys, why = nlbOnly, "applies to Network Load Balancers only; this Service has a Classic Load Balancer"
	}
	for _, k := range keys {
		a.Ignore(k, why)
	}
}

// classicSpec is the Classic Load Balancer a Service asks for.
type classicSpec struct {
	name       string
	service    string // namespace/name
	internal   bool
	subnetsAnn []string
	listeners  []classicListener // in Service port order
	health     classicHealth
	attrs      classicAttrs
	proxy      bool
	sslPolicy  string   // the ELB security policy named by the annotation; "" none
	ownSGs     []string // security-groups: no managed group then
	extraSGs   []string
	sources    []string
	tags       map[string]string
	nodeLabels map[string]string
}

// classicListener is one listener; protocols in upper case, as AWS
// reports them.
type classicListener struct {
	port, nodePort  int32
	proto, instance string
	cert            string
}

func (l classicListener) String() string {
	s := fmt.Sprintf("%s:%d->%s:%d", l.proto, l.port, l.instance, l.nodePort)
	if l.cert != "" {
		s += " cert " + l.cert
	}
	return s
}

// classicHealth is the health check, named as in the API.
type classicHealth struct {
	Target             string
	Interval           int32
	Timeout            int32
	HealthyThreshold   int32
	UnhealthyThreshold int32
}

// classicAttrs are the attributes polyccm sets. The draining timeout and
// the access log's interval, bucket and prefix are compared only when the
// Service gives them (zero: left as AWS has them).
type classicAttrs struct {
	CrossZone       bool   `json:"CrossZoneLoadBalancing"`
	Draining        bool   `json:"ConnectionDraining"`
	DrainingTimeout int32  `json:"ConnectionDrainingTimeout"`
	IdleTimeout     int32  `json:"IdleTimeout"`
	AccessLog       bool   `json:"AccessLog"`
	EmitInterval    int32  `json:"EmitInterval"`
	Bucket          string `json:"S3BucketName"`
	Prefix          string `json:"S3BucketPrefix"`
}

// classicSGName is the group the AWS CCM makes for a Classic Load
// Balancer, with its description.
func classicSGName(lb string) string { return "k8s-elb-" + lb }

func classicSGDescription(lb, service string) string {
	return fmt.Sprintf("Security group for Kubernetes ELB %s (%s)", lb, service)
}

// desiredClassic computes the Classic Load Balancer for svc as the AWS
// CCM does; problems go into a.
func desiredClassic(svc *v1.Service, a *annotations.Values, cluster string) *classicSpec {
	s := &classicSpec{
		name:       lbName(svc),
		service:    svc.Namespace + "/" + svc.Name,
		subnetsAnn: a.List(AnnSubnets),
		proxy:      a.String(AnnProxyProtocol, "") == "*",
		sslPolicy:  a.String(AnnSSLNegotiationPolicy, ""),
		ownSGs:     a.List(AnnSecurityGroups),
		extraSGs:   a.List(AnnExtraSecurityGroups),
		nodeLabels: a.Map(AnnTargetNodeLabels),
	}
	if v := a.String(AnnInternal, ""); v != "" {
		b, err := strconv.ParseBool(v)
		s.internal = err != nil || b // anything but false means internal, as upstream
	}
	if a.Has(AnnScheme) {
		internal := a.String(AnnScheme, "") == "internal"
		if a.Has(AnnInternal) && internal != s.internal {
			a.Fail(AnnScheme, "contradicts %s; give one of them", AnnInternal)
		}
		s.internal = internal
	}
	if svc.Spec.SessionAffinity != "" && svc.Spec.SessionAffinity != v1.ServiceAffinityNone {
		a.Fail("spec.sessionAffinity", "%s is not supported by Classic Load Balancers; use None", svc.Spec.SessionAffinity)
	}
	if svc.Spec.LoadBalancerIP != "" {
		a.Fail("spec.loadBalancerIP", "cannot be set for a Classic Load Balancer")
	}
	s.tags = map[string]string{}
	for k, v := range a.Map(AnnAdditionalResourceTags) {
		s.tags[k] = v
	}
	s.tags[TagClusterPrefix+cluster] = TagOwned
	s.tags[TagServiceName] = s.service
	s.listeners = classicListeners(svc, a)
	s.health = classicHealthCheck(svc, a, s.listeners)
	s.attrs = classicAttrs{
		CrossZone:       a.Bool(AnnCrossZone, false),
		Draining:        a.Bool(AnnConnectionDrainingEnabled, false),
		DrainingTimeout: int32(a.Int(AnnConnectionDrainingTimeout, 0)),
		IdleTimeout:     int32(a.Int(AnnConnectionIdleTimeout, classicIdleTimeout)),
		AccessLog:       a.Bool(AnnAccessLogEnabled, false),
		Bucket:          a.String(AnnAccessLogS3BucketName, ""),
		Prefix:          a.String(AnnAccessLogS3BucketPrefix, ""),
	}
	if n, err := strconv.Atoi(a.String(AnnAccessLogEmitInterval, "")); err == nil {
		s.attrs.EmitInterval = int32(n)
	}
	if s.attrs.AccessLog && s.attrs.Bucket == "" {
		a.Fail(AnnAccessLogEnabled, "needs %s", AnnAccessLogS3BucketName)
	}
	s.sources = sourceRanges(svc, a, false)
	return s
}

// classicListeners builds one listener per Service port, as the AWS CCM's
// buildListener: TCP, or SSL/HTTPS on the ssl-ports with a certificate
// (backend-protocol choosing), or HTTP with backend-protocol http.
func classicListeners(svc *v1.Service, a *annotations.Values) []classicListener {
	certs := a.List(AnnSSLCert)
	if len(certs) > 1 {
		a.Fail(AnnSSLCert, "a Classic Load Balancer takes one certificate; give one ARN")
	}
	cert := ""
	if len(certs) > 0 {
		cert = certs[0]
	}
	sslPorts := a.List(AnnSSLPorts)
	all := len(sslPorts) == 0 || slices.Contains(sslPorts, "*")
	backend := a.String(AnnBackendProtocol, "")
	if cert != "" && backend == "tls" {
		a.Fail(AnnBackendProtocol, "tls is for Network Load Balancers; a Classic Load Balancer takes ssl, https, http or tcp")
	}
	var out []classicListener
	for _, p := range svc.Spec.Ports {
		if p.Protocol != v1.ProtocolTCP && p.Protocol != "" {
			a.Fail("spec.ports", "protocol %s (port %d) is not supported by Classic Load Balancers: use TCP, or aws-load-balancer-type nlb", p.Protocol, p.Port)
			continue
		}
		if p.NodePort == 0 {
			a.Fail("spec.ports", "port %d has no node port (spec.allocateLoadBalancerNodePorts is false); a Classic Load Balancer needs node ports", p.Port)
			continue
		}
		l := classicListener{port: p.Port, nodePort: p.NodePort, proto: "TCP", instance: "TCP"}
		if cert != "" && (all || slices.Contains(sslPorts, strconv.Itoa(int(p.Port))) || slices.Contains(sslPorts, strings.ToLower(p.Name))) {
			l.cert = cert
			switch backend {
			case "", "tcp":
				l.proto, l.instance = "SSL", "TCP"
			case "ssl":
				l.proto, l.instance = "SSL", "SSL"
			case "http":
				l.proto, l.instance = "HTTPS", "HTTP"
			case "https":
				l.proto, l.instance = "HTTPS", "HTTPS"
			}
		} else if backend == "http" {
			l.proto, l.instance = "HTTP", "HTTP"
		}
		out = append(out, l)
	}
	if len(out) == 0 && len(svc.Spec.Ports) == 0 {
		a.Fail("spec.ports", "a load balancer needs at least one port")
	}
	return out
}

// classicHealthCheck is the AWS CCM's: with externalTrafficPolicy Local,
// HTTP to the health check node port's /healthz; otherwise TCP (SSL
// behind an ssl or https backend) to the first port's node port; then
// the annotations override protocol, port, path and timings.
func classicHealthCheck(svc *v1.Service, a *annotations.Values, ls []classicListener) classicHealth {
	var first int32
	if len(ls) > 0 {
		first = ls[0].nodePort
	}
	proto, port, path := "TCP", first, ""
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		proto, port, path = "HTTP", svc.Spec.HealthCheckNodePort, localHealthPath
		if a.String(AnnHealthCheckPort, "") == "traffic-port" {
			port = first
		}
	} else if b := a.String(AnnBackendProtocol, ""); b == "https" || b == "ssl" {
		proto = "SSL"
	}
	if a.Has(AnnHealthCheckProtocol) {
		proto = a.String(AnnHealthCheckProtocol, "")
	}
	if p := a.String(AnnHealthCheckPort, "traffic-port"); p != "traffic-port" {
		n, _ := strconv.Atoi(p)
		port = int32(n)
	}
	switch proto {
	case "HTTP", "HTTPS":
		if path == "" {
			path = "/"
		}
		if a.Has(AnnHealthCheckPath) {
			path = a.String(AnnHealthCheckPath, "")
		}
	default:
		path = ""
	}
	hc := classicHealth{
		Target:             fmt.Sprintf("%s:%d%s", proto, port, path),
		Interval:           int32(a.Int(AnnHealthCheckInterval, classicHCInterval)),
		Timeout:            int32(a.Int(AnnHealthCheckTimeout, classicHCTimeout)),
		HealthyThreshold:   int32(a.Int(AnnHealthyThreshold, classicHCHealthy)),
		UnhealthyThreshold: int32(a.Int(AnnUnhealthyThreshold, classicHCUnhealthy)),
	}
	if hc.Timeout > 60 {
		a.Fail(AnnHealthCheckTimeout, "must be at most 60 seconds on a Classic Load Balancer")
	}
	if hc.Timeout >= hc.Interval {
		if a.Has(AnnHealthCheckTimeout) {
			a.Fail(AnnHealthCheckTimeout, "must be less than the interval (%ds)", hc.Interval)
		} else {
			// A short interval alone lowers the default timeout, as AWS
			// requires, rather than failing on a value not given.
			hc.Timeout = max(hc.Interval-1, 2)
		}
	}
	return hc
}
