package gce

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/annotations"
)

// Service annotations, with GKE's names and meanings.
const (
	AnnLoadBalancerType       = "networking.gke.io/load-balancer-type"
	AnnLegacyLoadBalancerType = "cloud.google.com/load-balancer-type"
	AnnInternalSubnet         = "networking.gke.io/internal-load-balancer-subnet"
	AnnAllowGlobalAccess      = "networking.gke.io/internal-load-balancer-allow-global-access"
	AnnNetworkTier            = "cloud.google.com/network-tier"
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
	[]string{"networking.gke.io/load-balancer-", "networking.gke.io/internal-load-balancer-", "cloud.google.com/load-balancer-", "cloud.google.com/network-tier"},
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
)

// lbSpec is the load balancer a Service asks for.
type lbSpec struct {
	service      string // namespace/name
	base         string // name of the forwarding rule, pool, backend service
	internal     bool
	protocol     string // TCP or UDP
	ports        []int32
	hcPort       int32
	hcPath       string
	ip           string
	tier         string
	subnetwork   string
	globalAccess bool
	sources      []string
}

// lbName is the resource base name: the cluster prefix + "a" + the
// Service UID without dashes, as the in-tree GCE provider names it.
func (c *Cloud) lbName(svc *v1.Service) string {
	name := "a" + strings.ReplaceAll(string(svc.UID), "-", "")
	if len(name) > 32 {
		name = name[:32]
	}
	return c.prefix + name
}

// desiredLB computes the load balancer for svc; problems go into a.
func (c *Cloud) desiredLB(svc *v1.Service, a *annotations.Values, defaultSubnet string) *lbSpec {
	s := &lbSpec{
		service:      svc.Namespace + "/" + svc.Name,
		base:         c.lbName(svc),
		hcPort:       kubeProxyHealthPort,
		hcPath:       kubeProxyHealthPath,
		ip:           strings.TrimSpace(svc.Spec.LoadBalancerIP),
		globalAccess: a.Bool(AnnAllowGlobalAccess, false),
	}
	lbType := a.String(AnnLoadBalancerType, a.String(AnnLegacyLoadBalancerType, "External"))
	if a.Has(AnnLoadBalancerType) && a.Has(AnnLegacyLoadBalancerType) && a.String(AnnLoadBalancerType, "") != a.String(AnnLegacyLoadBalancerType, "") {
		a.Fail(AnnLegacyLoadBalancerType, "contradicts %s; keep one", AnnLoadBalancerType)
	}
	s.internal = lbType == "Internal"
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		s.hcPort = svc.Spec.HealthCheckNodePort
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
	} else {
		s.tier = strings.ToUpper(a.String(AnnNetworkTier, "Premium"))
		for _, k := range []string{AnnInternalSubnet, AnnAllowGlobalAccess} {
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

	for _, r := range svc.Spec.LoadBalancerSourceRanges {
		r = strings.TrimSpace(r)
		_, n, err := net.ParseCIDR(r)
		if err != nil {
			a.Fail("spec.loadBalancerSourceRanges", "%q is not a CIDR", r)
			continue
		}
		s.sources = append(s.sources, n.String())
	}
	if len(s.sources) == 0 {
		s.sources = []string{"0.0.0.0/0"}
	}
	sort.Strings(s.sources)
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

// firewallPorts are the ports clients reach the nodes on: a passthrough
// load balancer keeps the destination (the Service port), and kube-proxy
// takes it from there.
func (s *lbSpec) firewallPorts() []string {
	var out []string
	for _, p := range s.ports {
		out = append(out, strconv.Itoa(int(p)))
	}
	return out
}
