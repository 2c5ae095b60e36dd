package digitalocean

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
)

// lbRequest is the body of POST and PUT /v2/load_balancers[/{id}]
// (load_balancer_create.yml). Pointers tell a field left out, which gets
// the default, from one sent as zero, which is checked. Fields the fake
// does not model (domains, glb_settings, target_load_balancer_ids,
// validate_only) are ignored, and so is ip on updates: the reference has it
// in the create schema only (load_balancer_create.yml).
type lbRequest struct {
	Name                         string               `json:"name"`
	Region                       string               `json:"region"`
	Size                         string               `json:"size"`
	SizeUnit                     *int                 `json:"size_unit"`
	Type                         string               `json:"type"`
	Network                      string               `json:"network"`
	NetworkStack                 string               `json:"network_stack"`
	Algorithm                    string               `json:"algorithm"`
	ForwardingRules              []wireForwardingRule `json:"forwarding_rules"`
	HealthCheck                  *wireHealthCheck     `json:"health_check"`
	StickySessions               *wireStickySessions  `json:"sticky_sessions"`
	DropletIDs                   []int                `json:"droplet_ids"`
	Tag                          string               `json:"tag"`
	Tags                         []string             `json:"tags"`
	RedirectHTTPToHTTPS          bool                 `json:"redirect_http_to_https"`
	EnableProxyProtocol          bool                 `json:"enable_proxy_protocol"`
	EnableBackendKeepalive       bool                 `json:"enable_backend_keepalive"`
	HTTPIdleTimeoutSeconds       *int                 `json:"http_idle_timeout_seconds"`
	VPCUUID                      string               `json:"vpc_uuid"`
	ProjectID                    string               `json:"project_id"`
	DisableLetsEncryptDNSRecords bool                 `json:"disable_lets_encrypt_dns_records"`
	Firewall                     *wireLBFirewall      `json:"firewall"`
	TLSCipherPolicy              string               `json:"tls_cipher_policy"`
	// IP is a BYOIP address for the new load balancer; SubnetUUID the VPC
	// subnet to place it in (godo's VPCSubnetUUID, sent as subnet_uuid).
	IP         string `json:"ip"`
	SubnetUUID string `json:"subnet_uuid"`
}

// Limits from the reference and DigitalOcean's documentation: size_unit up
// to 200 nodes ("How to Scale Regional Load Balancers"), the idle timeout
// 30..600 s, health check intervals and timeouts 3..300 s and thresholds
// 2..10 (digitalocean-cloud-controller-manager's annotations.md).
const (
	maxSizeUnit                        = 200
	minIdleTimeout, maxIdleTimeout     = 30, 600
	minHealthSeconds, maxHealthSeconds = 3, 300
	minThreshold, maxThreshold         = 2, 10
	maxLBNameLen                       = 255
)

// lbSizeUnits maps the deprecated size slugs to node counts, as the
// reference documents them.
var lbSizeUnits = map[string]int{"lb-small": 1, "lb-medium": 3, "lb-large": 6}

// lbName is the documented rule for names: up to 255 characters, starting
// with a letter or digit, then letters, digits, dots and dashes, not ending
// with a dash.
var lbName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9.])?$`)

var (
	lbTypes         = []string{LBTypeRegional, LBTypeRegionalNetwork, LBTypeGlobal}
	lbNetworks      = []string{LBNetworkExternal, LBNetworkInternal}
	lbNetworkStacks = []string{LBNetworkStackIPv4, LBNetworkStackDualstack}
	lbAlgorithms    = []string{"round_robin", "least_connections"}
	cipherPolicies  = []string{"DEFAULT", "STRONG"}
	entryProtocols  = []string{"http", "https", "http2", "http3", "tcp", "udp"}
	targetProtocols = []string{"http", "https", "http2", "tcp", "udp"}
	healthProtocols = []string{"http", "https", "tcp"}
	http3Targets    = []string{"http", "https", "http2"}
	stickyTypes     = []string{stickyNone, stickyCookies}
)

const msgNoRules = "at least one forwarding rule is required"

// oneOf is the message for a value outside its enumeration.
func oneOf(field, got string, allowed []string) string {
	return fmt.Sprintf("%s %q is invalid, must be one of: %s", field, got, strings.Join(allowed, ", "))
}

func inRange(field string, v, lo, hi int) string {
	if v < lo || v > hi {
		return fmt.Sprintf("%s must be between %d and %d", field, lo, hi)
	}
	return ""
}

// lbFromRequestLocked validates a create or update body and returns the
// load balancer it describes, with defaults filled in, or the message of
// a 422. The real API's wording is known only for a few mistakes; the
// others follow its terse lowercase style.
func (s *Server) lbFromRequestLocked(req *lbRequest) (LoadBalancer, string) {
	lb := LoadBalancer{
		Name:                         req.Name,
		Type:                         cmp.Or(req.Type, LBTypeRegional),
		Region:                       req.Region,
		Network:                      cmp.Or(req.Network, LBNetworkExternal),
		NetworkStack:                 cmp.Or(req.NetworkStack, LBNetworkStackIPv4),
		Algorithm:                    cmp.Or(req.Algorithm, defaultLBAlgorithm),
		Tag:                          req.Tag,
		RedirectHTTPToHTTPS:          req.RedirectHTTPToHTTPS,
		EnableProxyProtocol:          req.EnableProxyProtocol,
		EnableBackendKeepalive:       req.EnableBackendKeepalive,
		HTTPIdleTimeoutSeconds:       defaultIdleTimeout,
		DisableLetsEncryptDNSRecords: req.DisableLetsEncryptDNSRecords,
		TLSCipherPolicy:              cmp.Or(req.TLSCipherPolicy, defaultCipherPolicy),
	}
	switch {
	case lb.Name == "":
		return lb, "name is required"
	case len(lb.Name) > maxLBNameLen || !lbName.MatchString(lb.Name):
		return lb, "name must be at most 255 characters, start with a letter or digit, " +
			"contain only letters, digits, '.' and '-', and not end with '-'"
	case !slices.Contains(lbTypes, lb.Type):
		return lb, oneOf("type", lb.Type, lbTypes)
	// The reference requires a region; only global load balancers, which
	// span regions, do without.
	case lb.Region == "" && lb.Type != LBTypeGlobal:
		return lb, "region is required"
	case !slices.Contains(lbNetworks, lb.Network):
		return lb, oneOf("network", lb.Network, lbNetworks)
	case !slices.Contains(lbNetworkStacks, lb.NetworkStack):
		return lb, oneOf("network_stack", lb.NetworkStack, lbNetworkStacks)
	case !slices.Contains(lbAlgorithms, lb.Algorithm):
		return lb, oneOf("algorithm", lb.Algorithm, lbAlgorithms)
	case !slices.Contains(cipherPolicies, lb.TLSCipherPolicy):
		return lb, oneOf("tls_cipher_policy", lb.TLSCipherPolicy, cipherPolicies)
	case req.Size != "" && req.SizeUnit != nil:
		return lb, "size and size_unit are mutually exclusive, specify only one"
	case req.Tag != "" && len(req.DropletIDs) > 0:
		return lb, "droplet_ids and tag are mutually exclusive, specify only one"
	case req.SubnetUUID != "" && !validUUID(req.SubnetUUID):
		return lb, fmt.Sprintf("subnet_uuid %q is not a valid UUID", req.SubnetUUID)
	}
	lb.SubnetUUID = req.SubnetUUID
	if lb.Region != "" {
		if _, ok := findRegion(lb.Region); !ok {
			return lb, fmt.Sprintf("region %q is invalid", lb.Region)
		}
	}

	switch {
	case req.SizeUnit != nil:
		lb.SizeUnit = *req.SizeUnit
		if msg := inRange("size_unit", lb.SizeUnit, 1, maxSizeUnit); msg != "" {
			return lb, msg
		}
	case req.Size != "":
		n, ok := lbSizeUnits[req.Size]
		if !ok {
			return lb, oneOf("size", req.Size, []string{"lb-small", "lb-medium", "lb-large"})
		}
		lb.SizeSlug, lb.SizeUnit = req.Size, n
	default:
		lb.SizeUnit = 1 // the reference's default
	}

	if req.HTTPIdleTimeoutSeconds != nil {
		lb.HTTPIdleTimeoutSeconds = *req.HTTPIdleTimeoutSeconds
		if msg := inRange("http_idle_timeout_seconds", lb.HTTPIdleTimeoutSeconds, minIdleTimeout, maxIdleTimeout); msg != "" {
			return lb, msg
		}
	}

	if len(req.ForwardingRules) == 0 {
		return lb, msgNoRules
	}
	rules, msg := s.rulesFromRequestLocked(req.ForwardingRules)
	if msg != "" {
		return lb, msg
	}
	if msg := checkRuleSet(rules); msg != "" {
		return lb, msg
	}
	lb.ForwardingRules = rules

	hc, msg := healthCheckFromRequest(req.HealthCheck)
	if msg != "" {
		return lb, msg
	}
	ss, msg := stickyFromRequest(req.StickySessions)
	if msg != "" {
		return lb, msg
	}
	lb.HealthCheck, lb.StickySessions = &hc, &ss
	if lb.Firewall, msg = firewallFromRequest(req.Firewall); msg != "" {
		return lb, msg
	}

	if msg := s.checkDropletsLocked(req.DropletIDs); msg != "" {
		return lb, msg
	}
	lb.DropletIDs = []int{}
	for _, id := range req.DropletIDs {
		if !slices.Contains(lb.DropletIDs, id) {
			lb.DropletIDs = append(lb.DropletIDs, id)
		}
	}
	return lb, ""
}

// rulesFromRequestLocked validates forwarding rules. Entry protocols that
// terminate TLS (https, http2, http3) need a certificate or, for https and
// http2, TLS passthrough, as DigitalOcean's CCM documents; the certificate
// must exist.
func (s *Server) rulesFromRequestLocked(in []wireForwardingRule) ([]ForwardingRule, string) {
	out := make([]ForwardingRule, 0, len(in))
	for _, w := range in {
		fr := ForwardingRule{
			EntryProtocol: w.EntryProtocol, EntryPort: w.EntryPort,
			TargetProtocol: w.TargetProtocol, TargetPort: w.TargetPort,
			CertificateID: w.CertificateID, TLSPassthrough: w.TLSPassthrough,
		}
		if msg := s.checkRuleLocked(fr); msg != "" {
			return nil, msg
		}
		out = append(out, fr)
	}
	return out, ""
}

func (s *Server) checkRuleLocked(fr ForwardingRule) string {
	tls := fr.EntryProtocol == "https" || fr.EntryProtocol == "http2" || fr.EntryProtocol == "http3"
	switch {
	case !slices.Contains(entryProtocols, fr.EntryProtocol):
		return oneOf("forwarding rule entry_protocol", fr.EntryProtocol, entryProtocols)
	case !slices.Contains(targetProtocols, fr.TargetProtocol):
		return oneOf("forwarding rule target_protocol", fr.TargetProtocol, targetProtocols)
	case fr.EntryPort < 1 || fr.EntryPort > 65535:
		return inRange("forwarding rule entry_port", fr.EntryPort, 1, 65535)
	case fr.TargetPort < 1 || fr.TargetPort > 65535:
		return inRange("forwarding rule target_port", fr.TargetPort, 1, 65535)
	// The reference: udp on one side needs udp on the other.
	case (fr.EntryProtocol == "udp") != (fr.TargetProtocol == "udp"):
		return "forwarding rules with udp must use udp as both entry_protocol and target_protocol"
	case fr.CertificateID != "" && fr.TLSPassthrough:
		return "forwarding rule certificate_id and tls_passthrough are mutually exclusive"
	case fr.TLSPassthrough && (fr.EntryProtocol == "http3" || !tls):
		return fmt.Sprintf("tls_passthrough is not supported with entry_protocol %s", fr.EntryProtocol)
	case fr.CertificateID != "" && !tls:
		return fmt.Sprintf("certificate_id is not supported with entry_protocol %s", fr.EntryProtocol)
	// HTTP/3 is terminated at the load balancer and forwarded as HTTP, as
	// DigitalOcean's CCM builds it (target http); not as raw tcp.
	case fr.EntryProtocol == "http3" && !slices.Contains(http3Targets, fr.TargetProtocol):
		return oneOf("forwarding rule target_protocol for entry_protocol http3", fr.TargetProtocol, http3Targets)
	case tls && fr.CertificateID == "" && !fr.TLSPassthrough:
		if fr.EntryProtocol == "http3" {
			return "forwarding rules with entry_protocol http3 require a certificate_id"
		}
		return fmt.Sprintf("forwarding rules with entry_protocol %s require a certificate_id or tls_passthrough", fr.EntryProtocol)
	}
	if fr.CertificateID != "" {
		if _, ok := s.certs[fr.CertificateID]; !ok {
			return fmt.Sprintf("certificate %s not found", fr.CertificateID)
		}
	}
	return ""
}

// checkRuleSet checks a load balancer's rules together. HTTP/3 follows the
// backend validation DigitalOcean's CCM mirrors (its http3-port annotation
// and PR #543): one http3 rule at most, beside an https or http2 rule for
// clients without QUIC.
func checkRuleSet(rules []ForwardingRule) string {
	if msg := duplicateEntryPort(rules); msg != "" {
		return msg
	}
	h3, fallback := 0, false
	for _, fr := range rules {
		switch fr.EntryProtocol {
		case "http3":
			h3++
		case "https", "http2":
			fallback = true
		}
	}
	switch {
	case h3 > 1:
		return "only one forwarding rule may use entry_protocol http3"
	case h3 == 1 && !fallback:
		return "a forwarding rule with entry_protocol http3 requires a forwarding rule with entry_protocol https or http2"
	}
	return ""
}

// duplicateEntryPort refuses two rules listening on the same port, except
// a udp and a non-udp one, which use different transports. http3 runs
// over QUIC, that is udp, so it shares its port with the https or http2
// rule it upgrades, as in the CCM's http3-with-http2 example (both 443).
func duplicateEntryPort(rules []ForwardingRule) string {
	type listener struct {
		port int
		udp  bool
	}
	seen := map[listener]bool{}
	for _, fr := range rules {
		l := listener{fr.EntryPort, fr.EntryProtocol == "udp" || fr.EntryProtocol == "http3"}
		if seen[l] {
			return fmt.Sprintf("entry_port %d is used by more than one forwarding rule", fr.EntryPort)
		}
		seen[l] = true
	}
	return ""
}

// healthCheckFromRequest fills the API's defaults into what the client
// sent (http on port 80, path "/", every 10 s, 5 s timeout, thresholds 5
// and 3, as in the reference's examples) and checks the result.
func healthCheckFromRequest(w *wireHealthCheck) (HealthCheck, string) {
	hc := defaultHealthCheck()
	if w == nil {
		return hc, ""
	}
	hc.Protocol = w.Protocol
	if !slices.Contains(healthProtocols, hc.Protocol) {
		return hc, oneOf("health_check protocol", hc.Protocol, healthProtocols)
	}
	hc.Port = cmp.Or(w.Port, hc.Port)
	hc.Path = w.Path
	if hc.Protocol != "tcp" {
		hc.Path = cmp.Or(hc.Path, "/")
	}
	hc.CheckIntervalSeconds = cmp.Or(w.CheckIntervalSeconds, hc.CheckIntervalSeconds)
	hc.ResponseTimeoutSeconds = cmp.Or(w.ResponseTimeoutSeconds, hc.ResponseTimeoutSeconds)
	hc.HealthyThreshold = cmp.Or(w.HealthyThreshold, hc.HealthyThreshold)
	hc.UnhealthyThreshold = cmp.Or(w.UnhealthyThreshold, hc.UnhealthyThreshold)
	if w.ProxyProtocol != nil {
		v := *w.ProxyProtocol
		hc.ProxyProtocol = &v
	}
	for _, msg := range []string{
		inRange("health_check port", hc.Port, 1, 65535),
		inRange("health_check check_interval_seconds", hc.CheckIntervalSeconds, minHealthSeconds, maxHealthSeconds),
		inRange("health_check response_timeout_seconds", hc.ResponseTimeoutSeconds, minHealthSeconds, maxHealthSeconds),
		inRange("health_check healthy_threshold", hc.HealthyThreshold, minThreshold, maxThreshold),
		inRange("health_check unhealthy_threshold", hc.UnhealthyThreshold, minThreshold, maxThreshold),
	} {
		if msg != "" {
			return hc, msg
		}
	}
	return hc, ""
}

// stickyFromRequest defaults to no stickiness; cookies need a name and a
// TTL.
func stickyFromRequest(w *wireStickySessions) (StickySessions, string) {
	if w == nil {
		return StickySessions{Type: stickyNone}, ""
	}
	ss := StickySessions{Type: cmp.Or(w.Type, stickyNone)}
	switch {
	case !slices.Contains(stickyTypes, ss.Type):
		return ss, oneOf("sticky_sessions type", ss.Type, stickyTypes)
	case ss.Type == stickyNone:
		return ss, ""
	case w.CookieName == "":
		return ss, "sticky_sessions cookie_name is required for type cookies"
	case w.CookieTTLSeconds <= 0:
		return ss, "sticky_sessions cookie_ttl_seconds must be positive for type cookies"
	}
	ss.CookieName, ss.CookieTTLSeconds = w.CookieName, w.CookieTTLSeconds
	return ss, ""
}

// firewallFromRequest checks rules of the documented forms "ip:1.2.3.4"
// and "cidr:1.2.0.0/16".
func firewallFromRequest(w *wireLBFirewall) (Firewall, string) {
	fw := Firewall{Allow: []string{}, Deny: []string{}}
	if w == nil {
		return fw, ""
	}
	for _, list := range []struct {
		in  []string
		out *[]string
	}{{w.Allow, &fw.Allow}, {w.Deny, &fw.Deny}} {
		for _, rule := range list.in {
			if !validFirewallRule(rule) {
				return fw, fmt.Sprintf("firewall rule %q is invalid, use ip:<address> or cidr:<prefix>", rule)
			}
			*list.out = append(*list.out, rule)
		}
	}
	return fw, ""
}

func validFirewallRule(rule string) bool {
	kind, v, ok := strings.Cut(rule, ":")
	if !ok {
		return false
	}
	switch kind {
	case "ip":
		_, err := netip.ParseAddr(v)
		return err == nil
	case "cidr":
		_, err := netip.ParsePrefix(v)
		return err == nil
	}
	return false
}

// checkDropletsLocked requires every droplet to exist.
func (s *Server) checkDropletsLocked(ids []int) string {
	for _, id := range ids {
		if _, ok := s.droplets[id]; !ok {
			return fmt.Sprintf("droplet %d not found", id)
		}
	}
	return ""
}

// allocLBIPv6 gives load balancers addresses in a /48 of the documentation
// prefix that droplets (2001:db8:<id>::/64 with small ids) do not reach.
func allocLBIPv6(n int) string {
	return fmt.Sprintf("2001:db8:ffff:%x::10", n&0xffff)
}

// newUUID returns a random version 4 UUID, the form of load balancer and
// certificate ids.
func newUUID() string { return fakehttp.RequestID() }

var uuidForm = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// validUUID checks the form only: the fake models no subnets to look up.
func validUUID(s string) bool { return uuidForm.MatchString(s) }
