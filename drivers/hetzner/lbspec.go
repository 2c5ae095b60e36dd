package hetzner

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/annotations"
)

// LabelServiceUID is the label hcloud CCM puts on the load balancers (and
// managed certificates) it makes: the Service's UID. It finds them by it.
const LabelServiceUID = "hcloud-ccm/service-uid"

// cfgKey names a drivers.hetzner.loadBalancer key in messages.
func cfgKey(k string) string { return "drivers.hetzner.loadBalancer." + k }

// lbSpec is the load balancer a Service asks for, read as hcloud CCM reads
// the annotations and its environment. An empty string or nil pointer
// leaves what the load balancer has.
type lbSpec struct {
	name   string // the load balancer's name
	rename bool   // the name annotation is set: an existing one takes the name
	uid    string // the Service UID, for the label

	location, networkZone string // of a new load balancer

	typ         string // "": keep (lb11 for a new one)
	typeKey     string // where typ comes from, for messages
	algorithm   string // "": keep
	publicIface *bool
	rdns4       *string
	rdns6       *string

	netID     int64 // drivers.hetzner.network; 0: none, so attached to none
	privateIP net.IP
	ipRange   *net.IPNet

	svc   svcOpts // what every port's service shares
	ports []portSpec

	servers      []int64 // target server IDs
	usePrivateIP bool

	// For the status.
	hostname       string
	ipv6           bool
	privateIngress bool
	proxyProtocol  bool

	// Certificates of http and https services, resolved before planning.
	certRefs []string // http-certificates: IDs or names
	managed  *managedCert
	// certNames are the names of the certificates resolved, by ID, for
	// the CertificatesInUse event.
	certNames map[int64]string

	// Nodes that cannot be targets, for events and logs.
	unknownNodes, robotNodes []string
	// unsupported ports (not TCP), for an event.
	unsupported []string
}

// portSpec is one Service port: the service listens on port and
// forwards to the node port.
type portSpec struct{ listen, dest int }

// managedCert is the Let's Encrypt certificate certificate-type managed
// asks for, and the one found for the Service.
type managedCert struct {
	name    string
	domains []string
	staging bool
	have    *hcloud.Certificate
}

// svcOpts are the settings of every port's service. Nil pointers are not
// sent, so the API keeps (or, in a new service, defaults) them.
type svcOpts struct {
	protocol      string
	proxyProtocol *bool
	http          *httpOpts // nil: no http settings sent
	hc            hcOpts
	hcCustom      bool // a health check setting was given; else tcp on the node port
}

type httpOpts struct {
	cookieName     *string
	cookieLifetime *time.Duration
	timeoutIdle    *time.Duration
	redirect       *bool
	sticky         *bool
	certs          []int64 // resolved; sent when certsSet
	certsSet       bool
}

type hcOpts struct {
	protocol          string
	port              *int // nil: the node port
	interval, timeout *time.Duration
	retries           *int
	http              *hcHTTPOpts // http and https checks
}

type hcHTTPOpts struct {
	domain, path *string
	statusCodes  []string
	tls          *bool
}

// lbName is the load balancer's name: the name annotation, else hcloud
// CCM's cloudprovider default ("a" + the Service UID without dashes).
func lbName(svc *v1.Service) string {
	if n := strings.TrimSpace(svc.Annotations[AnnName]); n != "" {
		return n
	}
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// parseSpec computes the load balancer svc asks for from its annotations
// (a), the config and the Nodes. It makes no cloud call; problems go to a.
func parseSpec(svc *v1.Service, a *annotations.Values, cfg LoadBalancerConfig, netID int64, nodes []*v1.Node) *lbSpec {
	s := &lbSpec{
		name:           lbName(svc),
		rename:         a.Has(AnnName),
		uid:            string(svc.UID),
		typ:            a.String(AnnType, cfg.Type),
		typeKey:        cfgKey("type"),
		algorithm:      a.String(AnnAlgorithm, cfg.Algorithm),
		netID:          netID,
		hostname:       a.String(AnnHostname, ""),
		ipv6:           !a.Bool(AnnIPv6Disabled, cfg.DisableIPv6),
		privateIngress: !a.Bool(AnnDisablePrivateIngress, cfg.DisablePrivateIngress),
		proxyProtocol:  a.Bool(AnnProxyProtocol, cfg.UsesProxyProtocol),
		usePrivateIP:   a.Bool(AnnUsePrivateIP, cfg.UsePrivateIP),
	}
	if a.Has(AnnType) {
		s.typeKey = AnnType
	}
	parseWhere(s, svc, a, cfg)
	parseNetwork(s, a, cfg)
	if a.Has(AnnDisablePublicNetwork) {
		on := !a.Bool(AnnDisablePublicNetwork, false)
		s.publicIface = &on
	} else if cfg.DisablePublicNetwork {
		s.publicIface = new(bool)
	}
	if a.Has(AnnIPv4RDNS) {
		v := a.String(AnnIPv4RDNS, "")
		s.rdns4 = &v
	}
	if a.Has(AnnIPv6RDNS) {
		v := a.String(AnnIPv6RDNS, "")
		s.rdns6 = &v
	}
	// hcloud CCM ignores these silently; a Normal event says so, since a
	// source filter that does nothing is worth knowing about.
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		a.Note("spec.loadBalancerSourceRanges", "not applied: Hetzner Cloud load balancers have no source filter (hcloud CCM ignores it too); filter on the servers (a Hetzner Cloud Firewall) or with a NetworkPolicy")
	}
	if svc.Spec.LoadBalancerIP != "" {
		a.Note("spec.loadBalancerIP", "not applied: a Hetzner Cloud load balancer gets its addresses when it is made (hcloud CCM ignores it too)")
	}
	parseServiceOpts(s, svc, a, cfg)
	parsePorts(s, svc, a)
	parseTargets(s, a, nodes)
	return s
}

// parseWhere reads location and network zone. An empty location
// annotation drops the configured one (so a network-zone annotation can
// apply), as in hcloud CCM; a location wins over a network zone.
func parseWhere(s *lbSpec, svc *v1.Service, a *annotations.Values, cfg LoadBalancerConfig) {
	s.location = cfg.Location
	if a.Has(AnnLocation) {
		l := a.List(AnnLocation)
		switch len(l) {
		case 0:
			s.location = ""
		case 1:
			s.location = l[0]
		default:
			a.Fail(AnnLocation, "%s names %d locations: give one", annotations.Quote(svc.Annotations[AnnLocation]), len(l))
		}
	}
	s.networkZone = a.String(AnnNetworkZone, cfg.NetworkZone)
	if s.location != "" {
		s.networkZone = ""
	}
}

// parseNetwork reads the private network settings. Without a Network in
// the config, hcloud CCM attaches to none and ignores them.
func parseNetwork(s *lbSpec, a *annotations.Values, cfg LoadBalancerConfig) {
	subnet := a.String(AnnPrivateSubnet, cfg.PrivateSubnetIPRange)
	if s.netID == 0 {
		for _, k := range []string{AnnPrivateIPv4, AnnPrivateSubnet} {
			a.NotApplied(k, "needs drivers.hetzner.network, the Network load balancers attach to")
		}
		if s.usePrivateIP {
			key := AnnUsePrivateIP
			if !a.Has(key) {
				key = cfgKey("usePrivateIP")
			}
			a.Fail(key, "targets can use private IPs only in a Network: set drivers.hetzner.network (hcloud CCM's HCLOUD_NETWORK), or make use-private-ip false")
		}
		return
	}
	if v := a.String(AnnPrivateIPv4, ""); v != "" {
		s.privateIP = net.ParseIP(v).To4()
	}
	if subnet != "" {
		_, s.ipRange, _ = net.ParseCIDR(subnet)
	}
}

// parseServiceOpts reads what every port's service shares, as hcloud
// CCM's service options builder does.
func parseServiceOpts(s *lbSpec, svc *v1.Service, a *annotations.Values, cfg LoadBalancerConfig) {
	o := &s.svc
	o.protocol = a.String(AnnProtocol, protoTCP)
	if a.Has(AnnProxyProtocol) {
		v := a.Bool(AnnProxyProtocol, false)
		o.proxyProtocol = &v
	} else if cfg.UsesProxyProtocol {
		on := true
		o.proxyProtocol = &on
	}
	managed := a.String(AnnCertificateType, certUploaded) == certManaged
	managedKeys := []string{AnnManagedCertName, AnnManagedCertDomains, AnnManagedCertStaging}
	tlsKeys := append([]string{AnnHTTPCertificates, AnnCertificateType, AnnRedirectHTTP}, managedKeys...)
	httpKeys := []string{AnnCookieName, AnnCookieLifetime, AnnTimeoutIdle, AnnStickySessions}
	// hcloud CCM sends every http setting whatever the protocol; the API
	// takes certificates and the redirect for https services only, and
	// has no use for the rest on tcp ones.
	switch {
	case invalid(svc, a, AnnProtocol):
		// Reported; the settings that depend on it are judged once fixed.
	case o.protocol == protoTCP:
		for _, k := range append(httpKeys, tlsKeys...) {
			a.NotApplied(k, "applies to http and https services (protocol), not tcp ones")
		}
	case o.protocol == protoHTTP:
		for _, k := range tlsKeys {
			a.NotApplied(k, "applies to https services (protocol), not http ones")
		}
		parseHTTP(s, svc, a, false, false)
	default:
		if !managed && !invalid(svc, a, AnnCertificateType) {
			for _, k := range managedKeys {
				a.NotApplied(k, "applies with certificate-type managed")
			}
		}
		parseHTTP(s, svc, a, true, managed)
	}
	parseHealthCheck(s, svc, a, cfg)
}

// parseHTTP reads the http settings; tls adds the https ones.
func parseHTTP(s *lbSpec, svc *v1.Service, a *annotations.Values, tls, managed bool) {
	h := &httpOpts{}
	given := false
	if a.Has(AnnCookieName) {
		v := a.String(AnnCookieName, "")
		h.cookieName, given = &v, true
	}
	for _, d := range []struct {
		key string
		to  **time.Duration
	}{{AnnCookieLifetime, &h.cookieLifetime}, {AnnTimeoutIdle, &h.timeoutIdle}} {
		if a.Has(d.key) {
			v, _ := seconds(a.String(d.key, ""))
			*d.to, given = &v, true
		}
	}
	for _, b := range []struct {
		key string
		to  **bool
	}{{AnnRedirectHTTP, &h.redirect}, {AnnStickySessions, &h.sticky}} {
		if a.Has(b.key) && (tls || b.key != AnnRedirectHTTP) {
			v := a.Bool(b.key, false)
			*b.to, given = &v, true
		}
	}
	switch {
	case !tls:
	case managed:
		a.NotApplied(AnnHTTPCertificates, "certificate-type is managed, so the managed certificate is used")
		if v, ok := svc.Annotations[AnnManagedCertName]; ok && strings.TrimSpace(v) == "" {
			// hcloud CCM reads a blank name as "the default".
			a.NotApplied(AnnManagedCertName, "is empty, so the certificate gets the default name ccm-managed-certificate-<Service UID>, as in hcloud CCM")
		}
		s.managed = &managedCert{
			name:    a.String(AnnManagedCertName, "ccm-managed-certificate-"+s.uid),
			domains: a.List(AnnManagedCertDomains),
			staging: a.Bool(AnnManagedCertStaging, false),
		}
		if len(s.managed.domains) == 0 {
			a.Fail(AnnManagedCertDomains, "required with certificate-type managed: the domain names the certificate is for, e.g. example.com,www.example.com")
		}
		h.certsSet, given = true, true
	case a.Has(AnnHTTPCertificates):
		s.certRefs = a.List(AnnHTTPCertificates)
		h.certsSet, given = true, true
	}
	if given {
		s.svc.http = h
	}
}

// parseHealthCheck: any health check setting makes the check customized
// (its protocol defaulting to the service's); otherwise it is tcp on the
// node port, and the http check settings do not apply, as in hcloud CCM.
func parseHealthCheck(s *lbSpec, svc *v1.Service, a *annotations.Values, cfg LoadBalancerConfig) {
	o := &s.svc
	hc := &o.hc
	hc.protocol = a.String(AnnHCProtocol, o.protocol)
	o.hcCustom = a.Has(AnnHCProtocol) || a.Has(AnnHCPort)
	if a.Has(AnnHCPort) {
		p := a.Int(AnnHCPort, 0)
		hc.port = &p
	}
	for _, d := range []struct {
		key string
		def time.Duration
		to  **time.Duration
	}{{AnnHCInterval, cfg.HealthCheck.Interval, &hc.interval}, {AnnHCTimeout, cfg.HealthCheck.Timeout, &hc.timeout}} {
		v := d.def
		if a.Has(d.key) {
			v, _ = seconds(a.String(d.key, ""))
		}
		if v > 0 {
			*d.to, o.hcCustom = &v, true
		}
	}
	if r := a.Int(AnnHCRetries, cfg.HealthCheck.Retries); a.Has(AnnHCRetries) || r > 0 {
		hc.retries, o.hcCustom = &r, true
	}
	httpKeys := []string{AnnHCDomain, AnnHCPath, AnnHCValidateCert, AnnHCStatusCodes}
	switch {
	case invalid(svc, a, AnnHCProtocol) || invalid(svc, a, AnnProtocol):
		return // reported; the rest is judged once fixed
	case !o.hcCustom:
		for _, k := range httpKeys {
			a.NotApplied(k, "applies to a customized http or https health check (set health-check-protocol or another health-check-* annotation), as in hcloud CCM")
		}
		*hc = hcOpts{protocol: protoTCP}
		return
	case hc.protocol == protoTCP:
		for _, k := range httpKeys {
			a.NotApplied(k, "applies to http and https health checks, not tcp ones")
		}
		return
	}
	if v, ok := svc.Annotations[AnnHCDomain]; ok && strings.TrimSpace(v) == "" {
		a.NotApplied(AnnHCDomain, "is empty, which is the API's default (no Host header)")
	}
	h := &hcHTTPOpts{statusCodes: a.List(AnnHCStatusCodes)}
	if a.Has(AnnHCDomain) {
		v := a.String(AnnHCDomain, "")
		h.domain = &v
	}
	if a.Has(AnnHCPath) {
		v := a.String(AnnHCPath, "")
		h.path = &v
	}
	if a.Has(AnnHCValidateCert) {
		v := a.Bool(AnnHCValidateCert, false)
		h.tls = &v
	}
	hc.http = h
}

// parsePorts maps the Service's TCP ports: listen on port, forward to
// the node port. Other protocols are left out with an event, as hcloud
// CCM leaves them.
func parsePorts(s *lbSpec, svc *v1.Service, a *annotations.Values) {
	for i, p := range svc.Spec.Ports {
		if p.Protocol != "" && p.Protocol != v1.ProtocolTCP {
			s.unsupported = append(s.unsupported, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
			continue
		}
		if p.NodePort == 0 {
			a.Fail(fmt.Sprintf("spec.ports[%d].nodePort", i), "port %d has no node port (spec.allocateLoadBalancerNodePorts is false?); Hetzner load balancers forward to node ports: allocate them", p.Port)
			continue
		}
		s.ports = append(s.ports, portSpec{listen: int(p.Port), dest: int(p.NodePort)})
	}
}

// parseTargets picks the servers of the Nodes the node selector matches.
// Nodes without a providerID yet are left for the next sync; Robot
// servers are out of scope, and other clouds' Nodes cannot be targets.
func parseTargets(s *lbSpec, a *annotations.Values, nodes []*v1.Node) {
	sel := labels.Everything()
	if v := a.String(AnnNodeSelector, ""); v != "" {
		if parsed, err := labels.Parse(v); err == nil {
			sel = parsed
		}
	}
	seen := map[int64]bool{}
	for _, n := range nodes {
		if !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		pid := n.Spec.ProviderID
		switch {
		case pid == "":
			continue
		case strings.HasPrefix(pid, robotPrefix) || strings.HasPrefix(pid, robotLegacyPrefix):
			s.robotNodes = append(s.robotNodes, n.Name)
			continue
		}
		id, err := serverID(pid)
		if err != nil {
			s.unknownNodes = append(s.unknownNodes, n.Name)
			continue
		}
		if !seen[id] {
			seen[id] = true
			s.servers = append(s.servers, id)
		}
	}
}

// invalid says key is given but its value was refused.
func invalid(svc *v1.Service, a *annotations.Values, key string) bool {
	_, given := svc.Annotations[key]
	return given && !a.Has(key)
}

// services expands the shared options into one service per port.
func (s *lbSpec) services() []svcSpec {
	out := make([]svcSpec, len(s.ports))
	for i, p := range s.ports {
		out[i] = svcSpec{portSpec: p, svcOpts: s.svc}
	}
	return out
}

// svcSpec is one port's service.
type svcSpec struct {
	portSpec
	svcOpts
}

// hcPort is the port the health check connects to.
func (s svcSpec) hcPort() int {
	if s.hc.port != nil {
		return *s.hc.port
	}
	return s.dest
}
