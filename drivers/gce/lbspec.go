package gce

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// Service annotations, with GKE's names and meanings.
const (
	AnnLoadBalancerType       = "networking.gke.io/load-balancer-type"
	AnnLegacyLoadBalancerType = "cloud.google.com/load-balancer-type"
	AnnInternalSubnet         = "networking.gke.io/internal-load-balancer-subnet"
	AnnAllowGlobalAccess      = "networking.gke.io/internal-load-balancer-allow-global-access"
	AnnNetworkTier            = "cloud.google.com/network-tier"
	// AnnBackendShare lets internal Services of one protocol and session
	// affinity share a backend service (the older key is
	// cloud.google.com/load-balancer-backend-share).
	AnnBackendShare       = "alpha.cloud.google.com/load-balancer-backend-share"
	AnnLegacyBackendShare = "cloud.google.com/load-balancer-backend-share"
	// AnnIPAddresses names the region's reserved addresses the load
	// balancer takes, at most one IPv4 and one IPv6 (GKE's meaning); it
	// wins over spec.loadBalancerIP.
	AnnIPAddresses = "networking.gke.io/load-balancer-ip-addresses"
)

const (
	kubeProxyHealthPort = 10256
	kubeProxyHealthPath = "/healthz"
	// maxForwardingPorts is how many ports an internal forwarding rule can
	// list.
	maxForwardingPorts = 5
)

// healthCheckRanges are where Google's health checkers come from, for the
// firewall rule that lets them reach the nodes.
var healthCheckRanges = []string{"130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"}

// LBAnnotations are the annotations the GCE driver supports.
var LBAnnotations = annotations.NewSet(
	[]string{"networking.gke.io/load-balancer-", "networking.gke.io/internal-load-balancer-", "cloud.google.com/load-balancer-", "alpha.cloud.google.com/load-balancer-", "cloud.google.com/network-tier"},
	annotations.Enum(AnnLoadBalancerType, []string{"Internal", "External"}, "External",
		"Internal: an internal passthrough load balancer (backend service, instance groups) in the VPC; External: a target pool behind a regional forwarding rule."),
	annotations.Enum(AnnLegacyLoadBalancerType, []string{"Internal", "External"}, "External",
		"The older name of networking.gke.io/load-balancer-type."),
	annotations.String(AnnInternalSubnet, "a subnetwork name in the cluster's region", "drivers.gce.subnetwork",
		"Subnetwork of an internal load balancer's address.", func(s string) error {
			if !gceNameRE.MatchString(lastSegment(s)) {
				return fmt.Errorf("not a subnetwork name")
			}
			return nil
		}),
	annotations.Bool(AnnAllowGlobalAccess, "false", "Let clients in every region of the VPC reach an internal load balancer."),
	annotations.Enum(AnnNetworkTier, []string{"Premium", "Standard"}, "Premium", "Network tier of an external load balancer's address."),
	annotations.Bool(AnnBackendShare, "false", "Internal load balancers: share one backend service with the cluster's other internal Services of the same protocol and session affinity (ignored with externalTrafficPolicy Local)."),
	annotations.Bool(AnnLegacyBackendShare, "false", "The older name of "+AnnBackendShare+"."),
	annotations.List(AnnIPAddresses, "up to two names of reserved regional addresses, one IPv4 and one IPv6",
		"The load balancer's addresses, by the names of addresses reserved in its region: the IPv4 one for the IPv4 forwarding rule (instead of spec.loadBalancerIP), the IPv6 one (internal load balancers) for the IPv6 rule. They stay reserved; polyccm never releases them.",
		func(s string) error {
			if !gceNameRE.MatchString(s) {
				return fmt.Errorf("%s is not an address name", annotations.Quote(s))
			}
			return nil
		}),
)

// lbSpec is the load balancer a Service asks for, with the names
// cloud-provider-gcp gives its resources.
type lbSpec struct {
	obj      *v1.Service // for events
	service  string      // namespace/name
	base     string      // forwarding rule, target pool, own backend service and health check
	cid      string      // cluster ID
	internal bool
	protocol string // TCP or UDP
	ports    []int32
	// The health check: the nodes' shared one (kube-proxy's health port)
	// or, with externalTrafficPolicy Local, the Service's own on its
	// health check node port.
	hcName   string
	hcShared bool
	hcPort   int32
	hcPath   string
	affinity string // NONE or CLIENT_IP
	ip       string
	tier     string
	// The families served: an IPv4 forwarding rule, and (internal load
	// balancers) an IPv6 one, as spec.ipFamilies asks.
	v4, v6 bool
	// ip6 is the IPv6 address asked for, from AnnIPAddresses.
	ip6 string
	// staticNames are the addresses AnnIPAddresses names, looked up when
	// observing.
	staticNames []string
	// ipHolder caches, for one sync, the reservation holding ip (nil: not
	// looked up yet).
	ipHolder *reservation
	// Internal: the backend service, the Service's own or shared.
	bsName       string
	bsShared     bool
	subnetwork   string
	globalAccess bool
	sources      []string // IPv4 client ranges
	sources6     []string // IPv6 client ranges
	targetTags   []string // the nodes' network tags, found when observing
}

// lbName is the Service's load balancer name: "a" + its UID without
// dashes, cut to 32 characters (cloudprovider.DefaultLoadBalancerName).
func lbName(svc *v1.Service) string { return loadbalancers.DefaultName(svc) }

// desiredLB computes the load balancer for svc in the cluster cid;
// problems go into a.
func desiredLB(svc *v1.Service, a *annotations.Values, defaultSubnet, cid string) *lbSpec {
	s := &lbSpec{
		obj:          svc,
		service:      svc.Namespace + "/" + svc.Name,
		base:         lbName(svc),
		cid:          cid,
		hcShared:     true,
		hcName:       nodesHealthCheckName(cid),
		hcPort:       kubeProxyHealthPort,
		hcPath:       kubeProxyHealthPath,
		affinity:     "NONE",
		ip:           strings.TrimSpace(svc.Spec.LoadBalancerIP),
		globalAccess: a.Bool(AnnAllowGlobalAccess, false),
	}
	if svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
		s.affinity = "CLIENT_IP"
	}
	lbType := a.String(AnnLoadBalancerType, a.String(AnnLegacyLoadBalancerType, "External"))
	if a.Has(AnnLoadBalancerType) && a.Has(AnnLegacyLoadBalancerType) && a.String(AnnLoadBalancerType, "") != a.String(AnnLegacyLoadBalancerType, "") {
		a.Fail(AnnLegacyLoadBalancerType, "contradicts %s; keep one", AnnLoadBalancerType)
	}
	s.internal = lbType == "Internal"
	s.v4, s.v6 = families(svc, s.internal, a)
	s.staticNames = a.List(AnnIPAddresses)
	if len(s.staticNames) > 2 {
		a.Fail(AnnIPAddresses, "names %d addresses; a load balancer takes at most two, one IPv4 and one IPv6", len(s.staticNames))
	}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		s.hcShared, s.hcName, s.hcPort = false, s.base, svc.Spec.HealthCheckNodePort
	}
	if s.ip != "" && net.ParseIP(s.ip) == nil {
		a.Fail("spec.loadBalancerIP", "%q is not an IP address", s.ip)
	}
	if s.internal {
		s.subnetwork = lastSegment(a.String(AnnInternalSubnet, defaultSubnet))
		if s.subnetwork == "" {
			a.Fail(AnnInternalSubnet, "an internal load balancer needs a subnetwork: set this annotation or drivers.gce.subnetwork")
		}
		if a.Has(AnnNetworkTier) {
			a.Fail(AnnNetworkTier, "applies to external load balancers only")
		}
		// As upstream: sharing needs the shared health check.
		s.bsShared = (a.Bool(AnnBackendShare, false) || a.Bool(AnnLegacyBackendShare, false)) && s.hcShared
	} else {
		s.tier = strings.ToUpper(a.String(AnnNetworkTier, "Premium"))
		for _, k := range []string{AnnInternalSubnet, AnnAllowGlobalAccess, AnnBackendShare, AnnLegacyBackendShare} {
			if a.Has(k) {
				a.Fail(k, "applies to internal load balancers only (set %s: Internal)", AnnLoadBalancerType)
			}
		}
	}

	protos := map[v1.Protocol]bool{}
	for _, p := range svc.Spec.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = v1.ProtocolTCP
		}
		if proto != v1.ProtocolTCP && proto != v1.ProtocolUDP {
			a.Fail("spec.ports", "protocol %s (port %d) is not supported by GCE passthrough load balancers: use TCP or UDP", proto, p.Port)
			continue
		}
		protos[proto] = true
		if !slices.Contains(s.ports, p.Port) {
			s.ports = append(s.ports, p.Port)
		}
	}
	slices.Sort(s.ports)
	switch len(protos) {
	case 1:
		for p := range protos {
			s.protocol = string(p)
		}
	case 2:
		a.Fail("spec.ports", "a GCE passthrough load balancer serves one protocol, but the Service has TCP and UDP ports: split it into two Services")
	}

	s.sources, s.sources6 = sourceRanges(svc, s, a)
	s.bsName = s.base
	if s.bsShared {
		s.bsName = sharedBackendServiceName(cid, s.protocol, svc.Spec.SessionAffinity)
	}
	return s
}

// scheme is the forwarding rule's loadBalancingScheme.
func (s *lbSpec) scheme() string {
	if s.internal {
		return "INTERNAL"
	}
	return "EXTERNAL"
}

// forwardingPorts: external (target pool) rules take one port range, from
// the lowest to the highest Service port, as the in-tree provider does;
// internal rules list up to five ports, or take all ports.
func (s *lbSpec) forwardingPorts() (ports []string, portRange string, all bool) {
	if !s.internal {
		return nil, fmt.Sprintf("%d-%d", s.ports[0], s.ports[len(s.ports)-1]), false
	}
	if len(s.ports) <= maxForwardingPorts {
		for _, p := range s.ports {
			ports = append(ports, strconv.Itoa(int(p)))
		}
		return ports, "", false
	}
	return nil, "", true
}

// firewallPorts are the ports clients reach the nodes on (a passthrough
// load balancer keeps the destination port), consecutive ones as a range,
// as upstream writes them (a rule takes at most 100 ports or ranges).
func (s *lbSpec) firewallPorts() []string {
	var out []string
	for i := 0; i < len(s.ports); {
		j := i
		for j+1 < len(s.ports) && s.ports[j+1] == s.ports[j]+1 {
			j++
		}
		if i == j {
			out = append(out, strconv.Itoa(int(s.ports[i])))
		} else {
			out = append(out, fmt.Sprintf("%d-%d", s.ports[i], s.ports[j]))
		}
		i = j + 1
	}
	return out
}
