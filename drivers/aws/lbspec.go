package aws

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// Service annotations, with the AWS cloud-controller-manager's names and
// meanings.
const (
	annPrefix = "service.beta.kubernetes.io/aws-load-balancer-"

	AnnType                   = annPrefix + "type"
	AnnInternal               = annPrefix + "internal"
	AnnScheme                 = annPrefix + "scheme"
	AnnSubnets                = annPrefix + "subnets"
	AnnEIPAllocations         = annPrefix + "eip-allocations"
	AnnPrivateIPv4Addresses   = annPrefix + "private-ipv4-addresses"
	AnnHealthCheckProtocol    = annPrefix + "healthcheck-protocol"
	AnnHealthCheckPort        = annPrefix + "healthcheck-port"
	AnnHealthCheckPath        = annPrefix + "healthcheck-path"
	AnnHealthCheckInterval    = annPrefix + "healthcheck-interval"
	AnnHealthCheckTimeout     = annPrefix + "healthcheck-timeout"
	AnnHealthyThreshold       = annPrefix + "healthcheck-healthy-threshold"
	AnnUnhealthyThreshold     = annPrefix + "healthcheck-unhealthy-threshold"
	AnnProxyProtocol          = annPrefix + "proxy-protocol"
	AnnSSLCert                = annPrefix + "ssl-cert"
	AnnSSLPorts               = annPrefix + "ssl-ports"
	AnnSSLNegotiationPolicy   = annPrefix + "ssl-negotiation-policy"
	AnnBackendProtocol        = annPrefix + "backend-protocol"
	AnnCrossZone              = annPrefix + "cross-zone-load-balancing-enabled"
	AnnTargetNodeLabels       = annPrefix + "target-node-labels"
	AnnAdditionalResourceTags = annPrefix + "additional-resource-tags"
	AnnTargetGroupAttributes  = annPrefix + "target-group-attributes"
	AnnIPAddressType          = annPrefix + "ip-address-type"
)

const (
	trafficPort     = "traffic-port"
	localHealthPath = "/healthz" // kube-proxy's, on the healthCheckNodePort
)

var (
	subnetRE     = regexp.MustCompile(`^subnet-[0-9a-f]{8,17}$`)
	eipAllocRE   = regexp.MustCompile(`^eipalloc-[0-9a-f]{8,17}$`)
	certARNRE    = regexp.MustCompile(`^arn:aws[a-z-]*:(acm|iam):[a-z0-9-]*:\d{12}:(certificate|server-certificate)/.+$`)
	policyNameRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,128}$`)
	attrKeyRE    = regexp.MustCompile(`^[a-z0-9_.]{1,256}$`)
	tagKeyRE     = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]{1,128}$`)
)

// LBAnnotations are the annotations the AWS driver supports, for both
// kinds of load balancer.
var LBAnnotations = annotations.NewSet([]string{annPrefix}, slices.Concat(nlbAnnotationSpecs, classicAnnotationSpecs)...)

var nlbAnnotationSpecs = []annotations.Spec{
	annotations.Enum(AnnType, []string{string(TypeClassic), string(TypeNLB), "external", "nlb-ip"}, "drivers.aws.loadBalancer.defaultType ("+string(DefaultLBType)+")",
		"classic: a Classic Load Balancer; nlb: a Network Load Balancer with instance targets. external and nlb-ip are left to the AWS Load Balancer Controller, as the AWS CCM does."),
	annotations.String(AnnInternal, "true or false", "false", "true makes an internal NLB (scheme internal).", func(s string) error {
		if _, err := strconv.ParseBool(s); err != nil {
			if _, _, err := net.ParseCIDR(s); err != nil { // legacy "0.0.0.0/0" means internal
				return err
			}
		}
		return nil
	}),
	annotations.Enum(AnnScheme, []string{"internal", "internet-facing"}, "internet-facing", "The NLB's scheme (same as internal, in the AWS Load Balancer Controller's words)."),
	annotations.List(AnnSubnets, "comma-separated subnet IDs or Name tags", "Subnets for the NLB, one per zone; default: subnets tagged kubernetes.io/role/elb (or internal-elb) and the cluster tag, one per zone.", func(s string) error { return nil }),
	annotations.List(AnnEIPAllocations, "comma-separated Elastic IP allocation IDs (eipalloc-...), one per subnet", "Static public IPs for an internet-facing NLB.", func(s string) error {
		if !eipAllocRE.MatchString(s) {
			return fmt.Errorf("not an allocation ID")
		}
		return nil
	}),
	annotations.List(AnnPrivateIPv4Addresses, "comma-separated IPv4 addresses, one per subnet", "Private IPs for an internal NLB, each in its subnet.", func(s string) error {
		if ip := net.ParseIP(s); ip == nil || ip.To4() == nil {
			return fmt.Errorf("not an IPv4 address")
		}
		return nil
	}),
	annotations.Enum(AnnHealthCheckProtocol, []string{"TCP", "HTTP", "HTTPS", "SSL"}, "TCP, or HTTP with externalTrafficPolicy Local", "Health check protocol (SSL: Classic only)."),
	annotations.String(AnnHealthCheckPort, "traffic-port or a port number", "traffic-port, or healthCheckNodePort with externalTrafficPolicy Local", "Health check port.", func(s string) error {
		if s == "traffic-port" {
			return nil
		}
		if n, err := strconv.Atoi(s); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("bad port")
		}
		return nil
	}),
	annotations.String(AnnHealthCheckPath, "an absolute path", "/, or /healthz with externalTrafficPolicy Local", "Health check path for HTTP and HTTPS checks.", func(s string) error {
		if !strings.HasPrefix(s, "/") {
			return fmt.Errorf("not absolute")
		}
		return nil
	}),
	annotations.Int(AnnHealthCheckInterval, 5, 300, "30, or 10 with externalTrafficPolicy Local", "Seconds between health checks."),
	annotations.Int(AnnHealthCheckTimeout, 2, 120, "10, or 6 for HTTP checks", "Seconds to wait for a health check."),
	annotations.Int(AnnHealthyThreshold, 2, 10, "3, or 2 with externalTrafficPolicy Local", "Passed checks before a node is healthy."),
	annotations.Int(AnnUnhealthyThreshold, 2, 10, "3, or 2 with externalTrafficPolicy Local", "Failed checks before a node is unhealthy."),
	annotations.Enum(AnnProxyProtocol, []string{"*"}, "", "* turns on PROXY protocol v2 on every target group."),
	annotations.List(AnnSSLCert, "comma-separated ACM or IAM certificate ARNs", "Certificates for TLS listeners: on an NLB the first is the default and the others are added beside it (picked by SNI); a Classic ELB takes one.", func(s string) error {
		if !certARNRE.MatchString(s) {
			return fmt.Errorf("not a certificate ARN")
		}
		return nil
	}),
	annotations.List(AnnSSLPorts, "* or comma-separated Service port numbers or names", "Ports whose listeners are TLS (default * when ssl-cert is set).", func(s string) error { return nil }),
	annotations.String(AnnSSLNegotiationPolicy, "an ELB security policy name, e.g. ELBSecurityPolicy-TLS13-1-2-2021-06", "none sent: a new NLB listener gets the API's default (ELBSecurityPolicy-2016-08) and an existing one keeps its policy", "TLS policy of TLS listeners.", func(s string) error {
		if !policyNameRE.MatchString(s) {
			return fmt.Errorf("bad policy name")
		}
		return nil
	}),
	annotations.Enum(AnnBackendProtocol, []string{"tcp", "ssl", "tls", "http", "https"}, "tcp", "Protocol to the nodes. NLB: ssl or tls re-encrypts behind TLS listeners (TLS target groups). Classic: http makes HTTP listeners (HTTPS with ssl-cert), https HTTPS ones, ssl SSL ones re-encrypting."),
	annotations.Bool(AnnCrossZone, "false", "Spread traffic across zones."),
	annotations.Map(AnnTargetNodeLabels, "comma-separated key=value node labels", "Only Nodes with all these labels are targets.", nil),
	annotations.Map(AnnAdditionalResourceTags, "comma-separated key=value tags", "Extra tags on the NLB, its target groups and security group.", func(k, v string) error {
		if !tagKeyRE.MatchString(k) || strings.HasPrefix(k, "aws:") || strings.HasPrefix(k, TagClusterPrefix) {
			return fmt.Errorf("tag key not allowed")
		}
		return nil
	}),
	annotations.Map(AnnTargetGroupAttributes, "comma-separated key=value target group attributes, e.g. deregistration_delay.timeout_seconds=120", "Target group attributes to set.", func(k, v string) error {
		if !attrKeyRE.MatchString(k) {
			return fmt.Errorf("not an attribute name")
		}
		return nil
	}),
	annotations.Enum(AnnIPAddressType, []string{"ipv4", "dualstack"}, "ipv4", "dualstack gives the NLB IPv6 addresses too."),
}

// nlbSpec is the NLB a Service asks for.
type nlbSpec struct {
	name       string
	service    string // namespace/name
	sgName     string
	legacySG   string // polyccm's earlier name for the security group
	internal   bool
	dualstack  bool
	subnetsAnn []string // from the annotation; empty: discover
	eips       []string
	privateIPs []string
	crossZone  bool
	// lbAttrs are the NLB attributes polyccm manages, as the AWS CCM sets
	// them: cross-zone load balancing and access logs.
	lbAttrs     map[string]string
	byoSGs      []string          // security-groups: the NLB's groups, none made
	tags        map[string]string // of the NLB and target groups
	sgTags      map[string]string // of the security group
	listeners   []listenerSpec
	sources     []string // CIDRs allowed in, for the security group
	nodeLabels  map[string]string
	proxyProto  bool
	tgAttrs     map[string]string
	healthCheck healthCheckSpec
}

type listenerSpec struct {
	port      int32
	protocol  elbtypes.ProtocolEnum
	certs     []string
	sslPolicy string
	tg        tgSpec
}

type tgSpec struct {
	name     string
	legacy   string // polyccm's earlier name for it (legacyTGName)
	protocol elbtypes.ProtocolEnum
	port     int32 // the node port
}

type healthCheckSpec struct {
	protocol  elbtypes.ProtocolEnum
	port      string // a number or "traffic-port"
	path      string
	interval  int32
	timeout   int32
	healthy   int32
	unhealthy int32
}

// lbName is "a" + the Service UID without dashes, 32 characters, as the
// AWS CCM names load balancers.
func lbName(svc *v1.Service) string {
	name := "a" + strings.ReplaceAll(string(svc.UID), "-", "")
	if len(name) > 32 {
		name = name[:32]
	}
	return name
}

// tgName is the AWS CCM's name for a target group (buildTargetGroupName
// in pkg/providers/v1/aws_loadbalancer.go): a SHA-1 over the cluster, the
// Service, the ports and everything a target group cannot change in
// place, so such a change makes a new one, and an NLB the AWS CCM made is
// found with its own groups.
func tgName(cluster string, svc *v1.Service, port int32, proto elbtypes.ProtocolEnum, nodePort int32, hc healthCheckSpec) string {
	h := sha1.New()
	for _, s := range []string{cluster, svc.Namespace, svc.Name, strconv.Itoa(int(port)), strconv.Itoa(int(nodePort)),
		string(proto), string(elbtypes.TargetTypeEnumInstance), string(hc.protocol), strconv.Itoa(int(hc.interval))} {
		h.Write([]byte(s))
	}
	return awsName(svc, hex.EncodeToString(h.Sum(nil)))
}

// awsName is the shape of the AWS CCM's target group and NLB security
// group names: k8s-<namespace>-<name>-<hash>, namespace and name without
// their non-alphanumerics and cut to 8 characters, the hash to 10.
func awsName(svc *v1.Service, hash string) string {
	return fmt.Sprintf("k8s-%.8s-%.8s-%.10s", nonAlnum.ReplaceAllString(svc.Namespace, ""), nonAlnum.ReplaceAllString(svc.Name, ""), hash)
}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]`)

// legacyTGName is what polyccm named target groups before it took the
// AWS CCM's names; such a group on the Service's NLB is kept (observe).
func legacyTGName(svc *v1.Service, port int32, proto elbtypes.ProtocolEnum, nodePort int32) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%s/%d", svc.UID, port, proto, nodePort)))
	return legacyPrefix(svc) + hex.EncodeToString(h[:])[:10]
}

// legacyPrefix starts every legacy target group name of svc.
func legacyPrefix(svc *v1.Service) string {
	short := func(s string) string {
		s = strings.Map(func(r rune) rune {
			if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
				return r
			}
			return '-'
		}, strings.ToLower(s))
		if len(s) > 8 {
			s = s[:8]
		}
		return strings.Trim(s, "-")
	}
	return fmt.Sprintf("k8s-%s-%s-", short(svc.Namespace), short(svc.Name))
}

// desiredNLB computes the NLB for svc; problems go into a.
// cluster is the cluster ID (tags, target group names) and clusterName
// the name the AWS CCM hashes into the security group's name.
func desiredNLB(svc *v1.Service, a *annotations.Values, cluster, clusterName string) *nlbSpec {
	s := &nlbSpec{
		name:       lbName(svc),
		service:    svc.Namespace + "/" + svc.Name,
		sgName:     sgName(clusterName, svc),
		legacySG:   legacySGName(svc),
		subnetsAnn: a.List(AnnSubnets),
		eips:       a.List(AnnEIPAllocations),
		privateIPs: a.List(AnnPrivateIPv4Addresses),
		crossZone:  a.Bool(AnnCrossZone, false),
		dualstack:  a.String(AnnIPAddressType, "ipv4") == "dualstack",
		nodeLabels: a.Map(AnnTargetNodeLabels),
		proxyProto: a.String(AnnProxyProtocol, "") == "*",
		tgAttrs:    a.Map(AnnTargetGroupAttributes),
		byoSGs:     a.List(AnnSecurityGroups),
	}
	s.lbAttrs = nlbAttributes(a, s.crossZone)
	if v := a.String(AnnInternal, ""); v != "" {
		b, err := strconv.ParseBool(v)
		s.internal = err != nil || b // a CIDR (legacy) means internal
	}
	if a.Has(AnnScheme) {
		internal := a.String(AnnScheme, "") == "internal"
		if a.Has(AnnInternal) && internal != s.internal {
			a.Fail(AnnScheme, "contradicts %s; give one of them", AnnInternal)
		}
		s.internal = internal
	}
	if len(s.eips) > 0 {
		if s.internal {
			a.Fail(AnnEIPAllocations, "applies to internet-facing load balancers only")
		}
		if len(s.subnetsAnn) > 0 && len(s.eips) != len(s.subnetsAnn) {
			a.Fail(AnnEIPAllocations, "gives %d allocations for %d subnets; give one per subnet", len(s.eips), len(s.subnetsAnn))
		}
	}
	if len(s.privateIPs) > 0 {
		if !s.internal {
			a.Fail(AnnPrivateIPv4Addresses, "applies to internal load balancers only (set %s: \"true\")", AnnInternal)
		}
		if len(s.subnetsAnn) > 0 && len(s.privateIPs) != len(s.subnetsAnn) {
			a.Fail(AnnPrivateIPv4Addresses, "gives %d addresses for %d subnets; give one per subnet", len(s.privateIPs), len(s.subnetsAnn))
		}
	}
	if s.proxyProto {
		if s.tgAttrs == nil {
			s.tgAttrs = map[string]string{}
		}
		s.tgAttrs["proxy_protocol_v2.enabled"] = "true"
	}

	// The AWS CCM's tags: the security group's do not name the Service.
	s.sgTags = map[string]string{}
	for k, v := range a.Map(AnnAdditionalResourceTags) {
		s.sgTags[k] = v
	}
	s.sgTags[TagClusterPrefix+cluster] = TagOwned
	s.tags = maps.Clone(s.sgTags)
	s.tags[TagServiceName] = s.service

	s.healthCheck = nlbHealthCheck(svc, a)
	s.listeners = nlbListeners(svc, a, cluster, s.healthCheck)
	s.sources = sourceRanges(svc, a, s.dualstack)
	return s
}

// nlbHealthCheck has the AWS CCM's defaults (buildNLBHealthCheckConfiguration
// in pkg/providers/v1/aws.go), which also go into target group names:
// TCP to the traffic port every 30s for externalTrafficPolicy Cluster;
// HTTP /healthz on the healthCheckNodePort every 10s for Local.
func nlbHealthCheck(svc *v1.Service, a *annotations.Values) healthCheckSpec {
	hc := healthCheckSpec{protocol: elbtypes.ProtocolEnumTcp, port: trafficPort, path: "/", interval: 30, healthy: 3, unhealthy: 3}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		hc = healthCheckSpec{protocol: elbtypes.ProtocolEnumHttp, port: trafficPort, path: localHealthPath, interval: 10, healthy: 2, unhealthy: 2}
		if svc.Spec.HealthCheckNodePort != 0 {
			hc.port = strconv.Itoa(int(svc.Spec.HealthCheckNodePort))
		}
	}
	if a.Has(AnnHealthCheckProtocol) {
		hc.protocol = elbtypes.ProtocolEnum(strings.ToUpper(a.String(AnnHealthCheckProtocol, "")))
	}
	if a.Has(AnnHealthCheckPort) {
		hc.port = a.String(AnnHealthCheckPort, "")
	}
	if hc.protocol == "SSL" {
		a.Fail(AnnHealthCheckProtocol, "SSL health checks are for Classic Load Balancers; use TCP, HTTP or HTTPS")
	}
	hc.interval = int32(a.Int(AnnHealthCheckInterval, int(hc.interval)))
	hc.healthy = int32(a.Int(AnnHealthyThreshold, int(hc.healthy)))
	hc.unhealthy = int32(a.Int(AnnUnhealthyThreshold, int(hc.unhealthy)))
	// The AWS CCM sends no timeout: its groups get AWS's default, 6s for
	// HTTP checks and 10s for the others.
	hc.timeout = 10
	if hc.protocol == elbtypes.ProtocolEnumHttp {
		hc.timeout = 6
	}
	hc.timeout = int32(a.Int(AnnHealthCheckTimeout, int(hc.timeout)))
	if hc.protocol == elbtypes.ProtocolEnumTcp {
		hc.path = ""
		if a.Has(AnnHealthCheckPath) {
			a.Fail(AnnHealthCheckPath, "applies to HTTP and HTTPS health checks only")
		}
	} else if a.Has(AnnHealthCheckPath) {
		hc.path = a.String(AnnHealthCheckPath, "/")
	}
	if hc.timeout >= hc.interval {
		if a.Has(AnnHealthCheckTimeout) {
			a.Fail(AnnHealthCheckTimeout, "must be less than the interval (%ds)", hc.interval)
		} else {
			// A short interval alone brings the default timeout below it,
			// as AWS requires, rather than failing on a value not given.
			hc.timeout = max(hc.interval-1, 2)
		}
	}
	return hc
}

func nlbListeners(svc *v1.Service, a *annotations.Values, cluster string, hc healthCheckSpec) []listenerSpec {
	certs := a.List(AnnSSLCert)
	sslPorts := map[string]bool{}
	allSSL := len(certs) > 0 && !a.Has(AnnSSLPorts)
	for _, p := range a.List(AnnSSLPorts) {
		if p == "*" {
			allSSL = true
		}
		sslPorts[p] = true
	}
	if len(sslPorts) > 0 && len(certs) == 0 {
		a.Fail(AnnSSLPorts, "needs %s", AnnSSLCert)
	}
	for p := range sslPorts {
		if p == "*" {
			continue
		}
		found := false
		for _, sp := range svc.Spec.Ports {
			if p == strconv.Itoa(int(sp.Port)) || p == sp.Name {
				found = true
			}
		}
		if !found {
			a.Fail(AnnSSLPorts, "%s is not a port number or name of the Service", annotations.Quote(p))
		}
	}
	bp := a.String(AnnBackendProtocol, "tcp")
	backendTLS := bp == "ssl" || bp == "tls" // http and https are Classic's: plain TCP here, as upstream
	if backendTLS && len(certs) == 0 {
		a.Fail(AnnBackendProtocol, "ssl/tls to the nodes needs TLS listeners (%s)", AnnSSLCert)
	}

	// TCP and UDP on one port become one TCP_UDP listener.
	byPort := map[int32][]v1.ServicePort{}
	var order []int32
	for _, p := range svc.Spec.Ports {
		if _, ok := byPort[p.Port]; !ok {
			order = append(order, p.Port)
		}
		byPort[p.Port] = append(byPort[p.Port], p)
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	var out []listenerSpec
	for _, port := range order {
		ps := byPort[port]
		var tcp, udp *v1.ServicePort
		for i := range ps {
			switch ps[i].Protocol {
			case v1.ProtocolTCP, "":
				tcp = &ps[i]
			case v1.ProtocolUDP:
				udp = &ps[i]
			default:
				a.Fail("spec.ports", "protocol %s (port %d) is not supported by Network Load Balancers: use TCP or UDP", ps[i].Protocol, port)
			}
		}
		if tcp == nil && udp == nil {
			continue
		}
		main := tcp
		if main == nil {
			main = udp
		}
		if main.NodePort == 0 {
			a.Fail("spec.ports", "port %d has no node port (spec.allocateLoadBalancerNodePorts is false); instance targets need node ports", port)
			continue
		}
		l := listenerSpec{port: port}
		switch {
		case tcp != nil && udp != nil:
			if tcp.NodePort != udp.NodePort {
				a.Fail("spec.ports", "port %d is TCP and UDP with different node ports; an NLB TCP_UDP listener needs one node port", port)
				continue
			}
			l.protocol = elbtypes.ProtocolEnumTcpUdp
		case udp != nil:
			l.protocol = elbtypes.ProtocolEnumUdp
		default:
			l.protocol = elbtypes.ProtocolEnumTcp
		}
		tgProto := l.protocol
		if tcp != nil && udp == nil && (allSSL || sslPorts[strconv.Itoa(int(port))] || sslPorts[tcp.Name]) {
			l.protocol = elbtypes.ProtocolEnumTls
			l.certs = certs
			// Without the annotation no policy is sent, as the AWS CCM does:
			// AWS gives a new listener its API default, and an existing
			// listener keeps whatever policy it has.
			l.sslPolicy = a.String(AnnSSLNegotiationPolicy, "")
			if backendTLS {
				tgProto = elbtypes.ProtocolEnumTls
			}
		}
		l.tg = tgSpec{name: tgName(cluster, svc, port, tgProto, main.NodePort, hc), legacy: legacyTGName(svc, port, tgProto, main.NodePort), protocol: tgProto, port: main.NodePort}
		out = append(out, l)
	}
	return out
}

// sourceRanges are the CIDRs the load balancer lets in:
// spec.loadBalancerSourceRanges, else the load-balancer-source-ranges
// annotation (as the AWS CCM reads them), else everyone.
func sourceRanges(svc *v1.Service, a *annotations.Values, dualstack bool) []string {
	var out []string
	key, ranges := loadbalancers.SourceRanges(svc)
	for _, r := range ranges {
		r = strings.TrimSpace(r)
		_, n, err := net.ParseCIDR(r)
		if err != nil {
			a.Fail(key, "%q is not a CIDR", r)
			continue
		}
		out = append(out, n.String())
	}
	if len(out) == 0 {
		out = []string{"0.0.0.0/0"}
		if dualstack {
			out = append(out, "::/0")
		}
	}
	sort.Strings(out)
	return out
}

// targetNodes are the Nodes whose instances the NLB forwards to.
func targetNodes(nodes []*v1.Node, labels map[string]string) (ids []string, skipped []string) {
	matching := slices.DeleteFunc(slices.Clone(nodes), func(n *v1.Node) bool {
		for k, v := range labels {
			if n.Labels[k] != v {
				return true
			}
		}
		return false
	})
	ids, skipped = loadbalancers.Collect(matching, instanceID)
	sort.Strings(ids)
	return ids, skipped
}

// NLB attributes, by the names ELBv2 gives them.
const (
	crossZoneAttr       = "load_balancing.cross_zone.enabled"
	accessLogsAttr      = "access_logs.s3.enabled"
	accessLogsBucket    = "access_logs.s3.bucket"
	accessLogsPrefixKey = "access_logs.s3.prefix"
)

// nlbAttributes are the attributes the NLB should have, as the AWS CCM
// computes them: cross-zone, and access logs on or off; the bucket and
// prefix only with logs on (ELBv2 refuses an empty bucket, so with logs
// off they are left as they are).
func nlbAttributes(a *annotations.Values, crossZone bool) map[string]string {
	logs := a.Bool(AnnAccessLogEnabled, false)
	out := map[string]string{crossZoneAttr: strconv.FormatBool(crossZone), accessLogsAttr: strconv.FormatBool(logs)}
	if logs {
		bucket := a.String(AnnAccessLogS3BucketName, "")
		if bucket == "" {
			a.Fail(AnnAccessLogEnabled, "needs %s", AnnAccessLogS3BucketName)
		}
		out[accessLogsBucket] = bucket
		out[accessLogsPrefixKey] = a.String(AnnAccessLogS3BucketPrefix, "")
	}
	return out
}
