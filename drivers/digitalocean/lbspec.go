package digitalocean

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// The Service annotations, with the DigitalOcean CCM's names and meanings
// so manifests carry over unchanged.
const (
	annPrefix = "service.beta.kubernetes.io/do-loadbalancer-"

	// AnnLoadBalancerID records the LB on the Service (the DigitalOcean
	// CCM's key, so adopted clusters keep their load balancers).
	AnnLoadBalancerID = "kubernetes.digitalocean.com/load-balancer-id"
	// AnnDisown stops polyccm from changing or deleting the LB.
	AnnDisown = "service.kubernetes.io/do-loadbalancer-disown"

	AnnName                  = annPrefix + "name"
	AnnProtocol              = annPrefix + "protocol"
	AnnTLSPorts              = annPrefix + "tls-ports"
	AnnHTTPPorts             = annPrefix + "http-ports"
	AnnHTTP2Ports            = annPrefix + "http2-ports"
	AnnCertificateID         = annPrefix + "certificate-id"
	AnnCertificateName       = annPrefix + "certificate-name"
	AnnTLSPassthrough        = annPrefix + "tls-passthrough"
	AnnRedirectHTTPToHTTPS   = annPrefix + "redirect-http-to-https"
	AnnDisableLetsEncryptDNS = annPrefix + "disable-lets-encrypt-dns-records"
	AnnHostname              = annPrefix + "hostname"
	AnnAlgorithm             = annPrefix + "algorithm"
	AnnOverrideHealthCheck   = annPrefix + "override-health-check"
	AnnHealthCheckPort       = annPrefix + "healthcheck-port"
	AnnHealthCheckPath       = annPrefix + "healthcheck-path"
	AnnHealthCheckProtocol   = annPrefix + "healthcheck-protocol"
	AnnHealthCheckInterval   = annPrefix + "healthcheck-check-interval-seconds"
	AnnHealthCheckTimeout    = annPrefix + "healthcheck-response-timeout-seconds"
	AnnHealthCheckUnhealthy  = annPrefix + "healthcheck-unhealthy-threshold"
	AnnHealthCheckHealthy    = annPrefix + "healthcheck-healthy-threshold"
	AnnProxyProtocol         = annPrefix + "enable-proxy-protocol"
	AnnStickyType            = annPrefix + "sticky-sessions-type"
	AnnStickyCookieName      = annPrefix + "sticky-sessions-cookie-name"
	AnnStickyCookieTTL       = annPrefix + "sticky-sessions-cookie-ttl"
	AnnSizeSlug              = annPrefix + "size-slug"
	AnnSizeUnit              = annPrefix + "size-unit"
	AnnType                  = annPrefix + "type"
	AnnNetwork               = annPrefix + "network"
	AnnNetworkStack          = annPrefix + "network-stack"
	AnnHTTP3Port             = annPrefix + "http3-port"
	AnnIP                    = annPrefix + "ip"
	AnnSubnetUUID            = annPrefix + "subnet-uuid"
	AnnBackendKeepalive      = annPrefix + "enable-backend-keepalive"
	AnnHTTPIdleTimeout       = annPrefix + "http-idle-timeout-seconds"
	AnnDenyRules             = annPrefix + "deny-rules"
	AnnAllowRules            = annPrefix + "allow-rules"
)

// Defaults the API applies, sent explicitly so a comparison with the LB
// that comes back is exact.
const (
	defaultHealthInterval  = 3
	defaultHealthTimeout   = 5
	defaultUnhealthy       = 3
	defaultHealthy         = 5
	defaultHTTPIdleTimeout = 60
	kubeProxyHealthPort    = 10256
	kubeProxyHealthPath    = "/healthz"
)

var (
	lbNameRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,254}$`)
	cookieNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)
)

// LBAnnotations are the annotations the DigitalOcean driver supports.
var LBAnnotations = annotations.NewSet(
	[]string{annPrefix, "service.kubernetes.io/do-loadbalancer-"},
	annotations.String(AnnName, "1-255 letters, digits, '.' or '-', starting with a letter or digit and not ending with '-'", "a + the Service UID",
		"Name of the load balancer; changing it renames the load balancer.", func(s string) error {
			if !lbNameRE.MatchString(s) || strings.HasSuffix(s, "-") {
				return fmt.Errorf("invalid name")
			}
			return nil
		}),
	annotations.Enum(AnnProtocol, []string{"tcp", "http", "https", "http2"}, "tcp",
		"Entry protocol of the forwarding rules for TCP ports not named in the *-ports annotations. https and http2 need certificate-id, certificate-name or tls-passthrough."),
	annotations.Ports(AnnTLSPorts, "Service ports that use HTTPS. Needs certificate-id, certificate-name or tls-passthrough; with one of those and no tls-ports, port 443 is HTTPS."),
	annotations.Ports(AnnHTTPPorts, "Service ports that use HTTP."),
	annotations.Ports(AnnHTTP2Ports, "Service ports that use HTTP/2. Needs certificate-id, certificate-name or tls-passthrough."),
	annotations.String(AnnCertificateID, "a certificate ID (doctl compute certificate list)", "", "Certificate for HTTPS and HTTP/2 rules. Takes precedence over certificate-name.", nil),
	annotations.String(AnnCertificateName, "a certificate name (doctl compute certificate list)", "", "Certificate for HTTPS and HTTP/2 rules, by name (stable across Let's Encrypt renewals).", nil),
	annotations.Bool(AnnTLSPassthrough, "false", "Pass TLS through to the nodes instead of terminating it at the load balancer."),
	annotations.Bool(AnnRedirectHTTPToHTTPS, "false", "Redirect HTTP to HTTPS (needs an HTTPS or HTTP/2 rule)."),
	annotations.Bool(AnnDisableLetsEncryptDNS, "false", "Do not create a DNS A record for a Let's Encrypt certificate."),
	annotations.String(AnnHostname, "a DNS name", "", "Publish this hostname in status.loadBalancer.ingress instead of the IP.", nil),
	annotations.Enum(AnnAlgorithm, []string{"round_robin", "least_connections"}, "round_robin", "Balancing algorithm (deprecated by DigitalOcean; kept for compatibility)."),
	annotations.Present(AnnOverrideHealthCheck, "Use healthcheck-port, -path and -protocol instead of kube-proxy's health check. As in the DigitalOcean CCM, the key's presence counts, not its value (\"false\" turns it on too)."),
	annotations.Int(AnnHealthCheckPort, 1, 65535, "the first TCP port", "Service port to health-check (only with override-health-check); its node port is checked."),
	annotations.String(AnnHealthCheckPath, "an absolute path, e.g. /healthz", "/", "Health check path for http and https checks (only with override-health-check; given alone, it makes the check http).", func(s string) error {
		if !strings.HasPrefix(s, "/") {
			return fmt.Errorf("not absolute")
		}
		return nil
	}),
	annotations.Enum(AnnHealthCheckProtocol, []string{"tcp", "http", "https"}, "tcp, or http with a healthcheck-path", "Health check protocol (only with override-health-check)."),
	annotations.Int(AnnHealthCheckInterval, 3, 300, "3", "Seconds between health checks."),
	annotations.Int(AnnHealthCheckTimeout, 3, 300, "5", "Seconds to wait for a health check response."),
	annotations.Int(AnnHealthCheckUnhealthy, 2, 10, "3", "Failed checks before a node is taken out."),
	annotations.Int(AnnHealthCheckHealthy, 2, 10, "5", "Passed checks before a node is put back."),
	annotations.Bool(AnnProxyProtocol, "false", "Send the PROXY protocol header to the nodes."),
	annotations.Enum(AnnStickyType, []string{"none", "cookies"}, "none", "Sticky sessions; cookies needs sticky-sessions-cookie-name and -cookie-ttl and an HTTP rule."),
	annotations.String(AnnStickyCookieName, "a cookie name (letters, digits, '-' and '_')", "", "Cookie for sticky sessions.", func(s string) error {
		if !cookieNameRE.MatchString(s) {
			return fmt.Errorf("invalid")
		}
		return nil
	}),
	annotations.Int(AnnStickyCookieTTL, 1, 86400*7, "", "Cookie lifetime in seconds for sticky sessions."),
	annotations.Enum(AnnSizeSlug, []string{"lb-small", "lb-medium", "lb-large"}, "", "Load balancer size (deprecated by DigitalOcean in favour of size-unit); not with size-unit."),
	annotations.Int(AnnSizeUnit, 1, 200, "1", "Number of load balancer nodes; not with size-slug."),
	annotations.Enum(AnnType, []string{"REGIONAL", "REGIONAL_NETWORK"}, "drivers.digitalocean.loadBalancer.defaultType (REGIONAL_NETWORK)", "REGIONAL (HTTP-aware, proxies to node ports) or REGIONAL_NETWORK (layer 4, TCP and UDP, packets straight to the nodes). Written on the Service once the load balancer exists, as the DigitalOcean CCM does; cannot change after creation."),
	annotations.Enum(AnnNetwork, []string{"EXTERNAL", "INTERNAL"}, "EXTERNAL", "EXTERNAL (public IP) or INTERNAL (VPC only). Cannot change after creation."),
	annotations.Enum(AnnNetworkStack, []string{"IPV4", "DUALSTACK"}, "DUALSTACK for REGIONAL; for REGIONAL_NETWORK DUALSTACK when every node has IPv6, else IPV4; IPV4 for INTERNAL", "IPV4 or DUALSTACK (IPv4 and IPv6) for a new load balancer; DUALSTACK is refused for INTERNAL ones, and for REGIONAL_NETWORK ones while a node has no IPv6. An existing load balancer keeps its stack."),
	annotations.Int(AnnHTTP3Port, 1, 65535, "", "Service port that also serves HTTP/3 (one port; needs certificate-id or certificate-name, not tls-passthrough); the port keeps its HTTPS or HTTP/2 rule."),
	annotations.String(AnnIP, "an IPv4 address", "", "Reserved (BYOIP) address for a new load balancer, unassigned, in its region. Create only: an existing load balancer keeps its address.", func(s string) error {
		if ip, err := netip.ParseAddr(s); err != nil || !ip.Is4() {
			return fmt.Errorf("not an IPv4 address")
		}
		return nil
	}),
	annotations.String(AnnSubnetUUID, "a VPC subnet UUID", "", "VPC subnet of a new load balancer (a DigitalOcean private preview). Cannot change after creation.", func(s string) error {
		if !uuidRE.MatchString(s) {
			return fmt.Errorf("not a UUID")
		}
		return nil
	}),
	annotations.Bool(AnnBackendKeepalive, "false", "Keep HTTP connections to the nodes open."),
	annotations.Int(AnnHTTPIdleTimeout, 30, 600, "60", "HTTP idle timeout in seconds."),
	annotations.List(AnnDenyRules, "comma-separated ip:ADDRESS or cidr:PREFIX", "Firewall rules blocking sources.", annotations.CIDROrIP),
	annotations.List(AnnAllowRules, "comma-separated ip:ADDRESS or cidr:PREFIX", "Firewall rules allowing sources (deprecated: use spec.loadBalancerSourceRanges, which takes precedence).", annotations.CIDROrIP),
	annotations.Bool(AnnDisown, "false", "Leave the load balancer alone: no changes, no deletion (to hand it to another Service or cluster)."),
)

// lbName is the LB's name: the name annotation, else "a" + the Service
// UID without dashes (as cloudprovider.DefaultLoadBalancerName and the
// DigitalOcean CCM do), so it is found again by name if the ID annotation
// is lost.
func lbName(svc *v1.Service) string {
	// Trimmed and checked as the annotation's validation does, so the name
	// used is the one validated (an invalid one is reported there).
	if n := strings.TrimSpace(svc.Annotations[AnnName]); lbNameRE.MatchString(n) && !strings.HasSuffix(n, "-") {
		return n
	}
	name := "a" + strings.ReplaceAll(string(svc.UID), "-", "")
	if len(name) > 32 {
		name = name[:32]
	}
	return name
}

// lbInputs is what the desired LB is computed from, besides the Service.
type lbInputs struct {
	region     string
	vpcID      string
	dropletIDs []int
	// typ is the type when the Service names none: the existing load
	// balancer's, else drivers.digitalocean.loadBalancer.defaultType.
	typ string
	// nodes are the targets' address families, for the network stack.
	nodes nodeStacks
	// certID resolves certificate-name; nil when not needed.
	certID func(name string) (string, error)
	tags   []string
}

// desiredLB computes the LB a Service asks for. Problems with the Service
// (annotations, ports) are collected in a and reported together.
func desiredLB(svc *v1.Service, a *annotations.Values, in lbInputs) *godo.LoadBalancerRequest {
	req := &godo.LoadBalancerRequest{
		Name:                   lbName(svc),
		Region:                 in.region,
		VPCUUID:                in.vpcID,
		Type:                   a.String(AnnType, in.typ),
		Network:                a.String(AnnNetwork, "EXTERNAL"),
		DropletIDs:             append([]int(nil), in.dropletIDs...),
		Tags:                   in.tags,
		RedirectHttpToHttps:    a.Bool(AnnRedirectHTTPToHTTPS, false),
		EnableProxyProtocol:    a.Bool(AnnProxyProtocol, false),
		EnableBackendKeepalive: a.Bool(AnnBackendKeepalive, false),
		IP:                     a.String(AnnIP, ""),
		VPCSubnetUUID:          a.String(AnnSubnetUUID, ""),
	}
	sort.Ints(req.DropletIDs)
	in.nodes.check(a, req.Type, req.Network)
	req.NetworkStack = networkStack(a, req.Type, req.Network, in.nodes)
	if a.Has(AnnAlgorithm) {
		req.Algorithm = a.String(AnnAlgorithm, "")
	}
	switch {
	case a.Has(AnnSizeSlug) && a.Has(AnnSizeUnit):
		a.Fail(AnnSizeSlug, "give size-slug or size-unit, not both")
	case a.Has(AnnSizeSlug):
		req.SizeSlug = a.String(AnnSizeSlug, "")
	default:
		req.SizeUnit = uint32(a.Int(AnnSizeUnit, 1))
	}
	if req.Type != "REGIONAL_NETWORK" {
		idle := uint64(a.Int(AnnHTTPIdleTimeout, defaultHTTPIdleTimeout))
		req.HTTPIdleTimeoutSeconds = &idle
	} else if a.Has(AnnHTTPIdleTimeout) {
		a.Fail(AnnHTTPIdleTimeout, "does not apply to REGIONAL_NETWORK load balancers")
	}
	if a.Has(AnnDisableLetsEncryptDNS) {
		v := a.Bool(AnnDisableLetsEncryptDNS, false)
		req.DisableLetsEncryptDNSRecords = &v
	}

	if req.Type == typeRegionalNetwork {
		req.ForwardingRules = networkRules(svc, a)
	} else {
		req.ForwardingRules = forwardingRules(svc, a, in)
	}
	req.HealthCheck = healthCheck(svc, a)
	req.StickySessions = stickySessions(a, req.ForwardingRules)
	req.Firewall = firewall(svc, a)

	if req.RedirectHttpToHttps && !hasRule(req.ForwardingRules, "https", "http2") {
		a.Fail(AnnRedirectHTTPToHTTPS, "needs an HTTPS or HTTP/2 rule to redirect to (tls-ports, http2-ports or protocol)")
	}
	return req
}

func hasRule(rules []godo.ForwardingRule, protocols ...string) bool {
	for _, r := range rules {
		if slices.Contains(protocols, r.EntryProtocol) {
			return true
		}
	}
	return false
}

// networkRules are a REGIONAL_NETWORK load balancer's rules, as the
// DigitalOcean CCM makes them: TCP or UDP, each Service port to the same
// port on the droplets, whose kube-proxy takes packets addressed to the
// load balancer's IP. HTTP settings do not apply; they are said so, not
// refused, as that CCM ignores them.
func networkRules(svc *v1.Service, a *annotations.Values) []godo.ForwardingRule {
	for _, k := range []string{AnnProtocol, AnnTLSPorts, AnnHTTPPorts, AnnHTTP2Ports, AnnHTTP3Port, AnnCertificateID, AnnCertificateName, AnnTLSPassthrough} {
		a.NotApplied(k, "REGIONAL_NETWORK load balancers forward TCP and UDP only (set "+AnnType+": REGIONAL for HTTP rules)")
	}
	var rules []godo.ForwardingRule
	for _, p := range svc.Spec.Ports {
		proto := "tcp"
		switch p.Protocol {
		case v1.ProtocolUDP:
			proto = "udp"
		case v1.ProtocolTCP, "":
		default:
			a.Fail("spec.ports", "protocol %s (port %d) is not supported by DigitalOcean load balancers: use TCP or UDP", p.Protocol, p.Port)
			continue
		}
		rules = append(rules, godo.ForwardingRule{EntryProtocol: proto, EntryPort: int(p.Port), TargetProtocol: proto, TargetPort: int(p.Port)})
	}
	sortRules(a, rules)
	return rules
}

func forwardingRules(svc *v1.Service, a *annotations.Values, in lbInputs) []godo.ForwardingRule {
	svcPorts := map[int]bool{}
	for _, p := range svc.Spec.Ports {
		svcPorts[int(p.Port)] = true
	}
	portSet := func(key string) map[int]bool {
		m := map[int]bool{}
		for _, p := range a.Ports(key) {
			if !svcPorts[p] {
				a.Fail(key, "port %d is not a port of the Service", p)
			}
			m[p] = true
		}
		return m
	}
	tlsPorts, httpPorts, http2Ports := portSet(AnnTLSPorts), portSet(AnnHTTPPorts), portSet(AnnHTTP2Ports)
	for p := range tlsPorts {
		if http2Ports[p] || httpPorts[p] {
			a.Fail(AnnTLSPorts, "port %d is also in http-ports or http2-ports; a port has one protocol", p)
		}
	}
	for p := range http2Ports {
		if httpPorts[p] {
			a.Fail(AnnHTTP2Ports, "port %d is also in http-ports; a port has one protocol", p)
		}
	}

	passthrough := a.Bool(AnnTLSPassthrough, false)
	certID := a.String(AnnCertificateID, "")
	if certID == "" && a.Has(AnnCertificateName) && in.certID != nil {
		id, err := in.certID(a.String(AnnCertificateName, ""))
		if err != nil {
			a.Fail(AnnCertificateName, "%v", err)
		}
		certID = id
	}
	if certID != "" && passthrough {
		a.Fail(AnnTLSPassthrough, "give a certificate or tls-passthrough, not both")
	}
	haveTLS := certID != "" || passthrough
	// With a certificate or passthrough and no tls-ports, 443 is HTTPS.
	if haveTLS && len(tlsPorts) == 0 && svcPorts[443] && !http2Ports[443] && !httpPorts[443] {
		tlsPorts[443] = true
	}
	defProto := a.String(AnnProtocol, "tcp")

	var rules []godo.ForwardingRule
	for _, p := range svc.Spec.Ports {
		if p.NodePort == 0 {
			a.Fail("spec.ports", "port %d has no node port (spec.allocateLoadBalancerNodePorts is false); DigitalOcean load balancers forward to node ports", p.Port)
			continue
		}
		r := godo.ForwardingRule{EntryPort: int(p.Port), TargetPort: int(p.NodePort)}
		switch p.Protocol {
		case v1.ProtocolUDP:
			r.EntryProtocol, r.TargetProtocol = "udp", "udp"
			rules = append(rules, r)
			continue
		case v1.ProtocolTCP, "":
		default:
			a.Fail("spec.ports", "protocol %s (port %d) is not supported by DigitalOcean load balancers: use TCP or UDP", p.Protocol, p.Port)
			continue
		}
		proto := defProto
		switch port := int(p.Port); {
		case tlsPorts[port]:
			proto = "https"
		case http2Ports[port]:
			proto = "http2"
		case httpPorts[port]:
			proto = "http"
		}
		r.EntryProtocol = proto
		switch proto {
		case "tcp", "http":
			r.TargetProtocol = proto
		case "https", "http2":
			if !haveTLS {
				a.Fail(AnnCertificateID, "port %d uses %s, which needs certificate-id, certificate-name or tls-passthrough", p.Port, proto)
			}
			if passthrough {
				r.TargetProtocol, r.TlsPassthrough = proto, true
			} else {
				r.TargetProtocol, r.CertificateID = "http", certID
			}
		}
		rules = append(rules, r)
	}
	if r, ok := http3Rule(svc, a, certID, passthrough, rules); ok {
		rules = append(rules, r)
	}
	sortRules(a, rules)
	return rules
}

// http3Rule is the one HTTP/3 rule the http3-port annotation asks for,
// beside that port's HTTPS or HTTP/2 rule, as the DigitalOcean CCM makes
// it: the certificate's, to the port's node port over HTTP.
func http3Rule(svc *v1.Service, a *annotations.Values, certID string, passthrough bool, rules []godo.ForwardingRule) (godo.ForwardingRule, bool) {
	if !a.Has(AnnHTTP3Port) {
		return godo.ForwardingRule{}, false
	}
	port := a.Int(AnnHTTP3Port, 0)
	if !slices.ContainsFunc(rules, func(r godo.ForwardingRule) bool {
		return r.EntryPort == port && (r.EntryProtocol == "https" || r.EntryProtocol == "http2")
	}) {
		a.Fail(AnnHTTP3Port, "port %d needs an HTTPS or HTTP/2 rule beside the HTTP/3 one (tls-ports or http2-ports, or port 443 with a certificate)", port)
	}
	switch {
	case passthrough:
		a.Fail(AnnHTTP3Port, "HTTP/3 cannot be used with tls-passthrough; remove one")
	case certID == "":
		a.Fail(AnnHTTP3Port, "HTTP/3 needs certificate-id or certificate-name")
	}
	for _, p := range svc.Spec.Ports {
		if int(p.Port) == port && p.NodePort != 0 && p.Protocol != v1.ProtocolUDP {
			return godo.ForwardingRule{EntryProtocol: "http3", EntryPort: port, TargetProtocol: "http", TargetPort: int(p.NodePort), CertificateID: certID}, true
		}
	}
	a.Fail(AnnHTTP3Port, "port %d is not a TCP port of the Service", port)
	return godo.ForwardingRule{}, false
}

// sortRules orders rules by port, and refuses one port for two transports
// (an HTTP/3 rule shares its port with that port's HTTPS rule by design).
func sortRules(a *annotations.Values, rules []godo.ForwardingRule) {
	sort.Slice(rules, func(i, j int) bool {
		if rules[i].EntryPort != rules[j].EntryPort {
			return rules[i].EntryPort < rules[j].EntryPort
		}
		return rules[i].EntryProtocol < rules[j].EntryProtocol
	})
	for i := 1; i < len(rules); i++ {
		if rules[i].EntryPort == rules[i-1].EntryPort && rules[i].EntryProtocol != "http3" && rules[i-1].EntryProtocol != "http3" {
			a.Fail("spec.ports", "port %d is used for both TCP and UDP, which DigitalOcean load balancers cannot do", rules[i].EntryPort)
		}
	}
}

// healthCheck defaults to kube-proxy's health endpoint: :10256/healthz for
// externalTrafficPolicy Cluster (is the node's proxy up), the Service's
// healthCheckNodePort for Local (does the node have ready endpoints).
func healthCheck(svc *v1.Service, a *annotations.Values) *godo.HealthCheck {
	hc := &godo.HealthCheck{
		Protocol:               "http",
		Port:                   kubeProxyHealthPort,
		Path:                   kubeProxyHealthPath,
		CheckIntervalSeconds:   a.Int(AnnHealthCheckInterval, defaultHealthInterval),
		ResponseTimeoutSeconds: a.Int(AnnHealthCheckTimeout, defaultHealthTimeout),
		UnhealthyThreshold:     a.Int(AnnHealthCheckUnhealthy, defaultUnhealthy),
		HealthyThreshold:       a.Int(AnnHealthCheckHealthy, defaultHealthy),
	}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		hc.Port = int(svc.Spec.HealthCheckNodePort)
	}
	// kube-proxy's endpoints do not speak the PROXY protocol, so its check
	// goes without it, as the DigitalOcean CCM sends it; an overridden
	// check leaves the load balancer's setting alone (nil), as that CCM.
	hc.ProxyProtocol = new(false)
	// The DigitalOcean CCM turns the override on when the key is there at
	// all, whatever its value, and without it ignores port, path and
	// protocol; so do we, saying so in a Normal event.
	if !a.Has(AnnOverrideHealthCheck) {
		for _, k := range []string{AnnHealthCheckPort, AnnHealthCheckPath, AnnHealthCheckProtocol} {
			a.NotApplied(k, "used only together with "+AnnOverrideHealthCheck+" (as in the DigitalOcean CCM); kube-proxy's health check is used")
		}
		return hc
	}
	if off, err := strconv.ParseBool(strings.TrimSpace(svc.Annotations[AnnOverrideHealthCheck])); err == nil && !off {
		a.Note(AnnOverrideHealthCheck, "the key is there, so the override is on whatever its value (as in the DigitalOcean CCM); remove the key to turn it off")
	}
	hc.ProxyProtocol = nil
	def := "tcp"
	if a.Has(AnnHealthCheckPath) {
		def = "http"
	}
	hc.Protocol = a.String(AnnHealthCheckProtocol, def)
	hc.Path = ""
	if hc.Protocol != "tcp" {
		hc.Path = a.String(AnnHealthCheckPath, "/")
	} else {
		a.NotApplied(AnnHealthCheckPath, "a tcp health check has no path")
	}
	if a.Has(AnnHealthCheckPort) {
		want := a.Int(AnnHealthCheckPort, 0)
		found := false
		for _, p := range svc.Spec.Ports {
			if int(p.Port) != want || p.NodePort == 0 {
				continue
			}
			if p.Protocol == v1.ProtocolUDP {
				a.Fail(AnnHealthCheckPort, "%d is a UDP port, which a health check cannot use; name a TCP port of the Service", want)
			}
			hc.Port, found = int(p.NodePort), true
		}
		if !found {
			a.Fail(AnnHealthCheckPort, "%d is not a port of the Service (give the Service port, not the node port)", want)
		}
		return hc
	}
	// As upstream: the first TCP port's node port.
	for _, p := range svc.Spec.Ports {
		if p.Protocol == v1.ProtocolTCP && p.NodePort != 0 {
			hc.Port = int(p.NodePort)
			return hc
		}
	}
	a.Fail(AnnOverrideHealthCheck, "the Service has no TCP port to health-check; set %s to one, or remove %s", AnnHealthCheckPort, AnnOverrideHealthCheck)
	return hc
}

func stickySessions(a *annotations.Values, rules []godo.ForwardingRule) *godo.StickySessions {
	if a.String(AnnStickyType, "none") != "cookies" {
		for _, k := range []string{AnnStickyCookieName, AnnStickyCookieTTL} {
			if a.Has(k) {
				a.Fail(k, "only applies with %s: cookies", AnnStickyType)
			}
		}
		return &godo.StickySessions{Type: "none"}
	}
	if !a.Has(AnnStickyCookieName) {
		a.Fail(AnnStickyCookieName, "required when sticky-sessions-type is cookies")
	}
	if !a.Has(AnnStickyCookieTTL) {
		a.Fail(AnnStickyCookieTTL, "required when sticky-sessions-type is cookies")
	}
	if !hasRule(rules, "http", "https", "http2") {
		a.Fail(AnnStickyType, "cookie sticky sessions need an HTTP, HTTPS or HTTP/2 rule")
	}
	return &godo.StickySessions{Type: "cookies", CookieName: a.String(AnnStickyCookieName, ""), CookieTtlSeconds: a.Int(AnnStickyCookieTTL, 0)}
}

// firewall: spec.loadBalancerSourceRanges become allow rules and take
// precedence over the deprecated allow-rules annotation.
func firewall(svc *v1.Service, a *annotations.Values) *godo.LBFirewall {
	fw := &godo.LBFirewall{Deny: a.List(AnnDenyRules), Allow: a.List(AnnAllowRules)}
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		fw.Allow = nil
		for _, r := range svc.Spec.LoadBalancerSourceRanges {
			r = strings.TrimSpace(r)
			if err := annotations.CIDROrIP("cidr:" + r); err != nil {
				a.Fail("spec.loadBalancerSourceRanges", "%q is not a CIDR", r)
				continue
			}
			fw.Allow = append(fw.Allow, "cidr:"+r)
		}
	}
	sort.Strings(fw.Allow)
	sort.Strings(fw.Deny)
	if len(fw.Allow) == 0 && len(fw.Deny) == 0 {
		return nil
	}
	return fw
}

// dropletIDsOf maps the nodes the service controller passes to droplets,
// skipping nodes excluded from load balancers and nodes not initialized yet.
func dropletIDsOf(nodes []*v1.Node) (ids []int, skipped []string) {
	ids, skipped = loadbalancers.Collect(nodes, dropletID)
	sort.Ints(ids)
	return ids, skipped
}

// passesToNodes reports whether svc's load balancer is REGIONAL_NETWORK
// and EXTERNAL, so its traffic and health checks reach the droplets
// straight from outside. The annotations are read as the load balancer
// reads them (its type, which the driver writes back, else def); an
// invalid value counts as unset here and is reported where the load
// balancer is built.
func passesToNodes(svc *v1.Service, def string) bool {
	a := LBAnnotations.Parse(svc)
	return a.String(AnnType, def) == typeRegionalNetwork && a.String(AnnNetwork, "EXTERNAL") == "EXTERNAL"
}
