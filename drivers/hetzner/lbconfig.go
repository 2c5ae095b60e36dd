package hetzner

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/polyccm/polyccm/config"
)

// LoadBalancerConfig is drivers.hetzner.loadBalancer: the defaults of the
// load-balancer.hetzner.cloud/* annotations (hcloud CCM's
// HCLOUD_LOAD_BALANCERS_* variables). An annotation on a Service wins.
//
// Empty strings and false keep hcloud CCM's meaning of an unset variable:
// what the load balancer already has is left as it is. hcloud CCM has
// three states for some variables (unset, true, false); polyccm's false
// is "unset", which differs only where that CCM had the variable
// explicitly set to false.
type LoadBalancerConfig struct {
	// Location of new load balancers, e.g. fsn1
	// (HCLOUD_LOAD_BALANCERS_LOCATION). Not with networkZone. A new load
	// balancer needs one of the two, here or in its Service's annotations.
	Location string `koanf:"location"`
	// NetworkZone of new load balancers, e.g. eu-central
	// (HCLOUD_LOAD_BALANCERS_NETWORK_ZONE).
	NetworkZone string `koanf:"networkZone"`
	// Type of load balancers, e.g. lb11 (HCLOUD_LOAD_BALANCERS_TYPE).
	// Empty: new ones are lb11 and existing ones keep their type, as with
	// hcloud CCM when the variable is unset; set, every load balancer whose
	// Service names no type is changed to it.
	Type string `koanf:"type"`
	// Algorithm: round_robin or least_connections
	// (HCLOUD_LOAD_BALANCERS_ALGORITHM_TYPE). Empty: new ones get the
	// API's round_robin and existing ones keep theirs.
	Algorithm string `koanf:"algorithm"`
	// UsePrivateIP makes targets use the servers' private IPs in
	// drivers.hetzner.network (HCLOUD_LOAD_BALANCERS_USE_PRIVATE_IP).
	UsePrivateIP bool `koanf:"usePrivateIP"`
	// DisablePrivateIngress leaves the load balancer's private IP out of
	// the Service status (HCLOUD_LOAD_BALANCERS_DISABLE_PRIVATE_INGRESS).
	DisablePrivateIngress bool `koanf:"disablePrivateIngress"`
	// DisablePublicNetwork turns the load balancers' public interface off
	// (HCLOUD_LOAD_BALANCERS_DISABLE_PUBLIC_NETWORK). False leaves it as
	// it is.
	DisablePublicNetwork bool `koanf:"disablePublicNetwork"`
	// DisableIPv6 leaves the IPv6 address out of the Service status
	// (HCLOUD_LOAD_BALANCERS_DISABLE_IPV6).
	DisableIPv6 bool `koanf:"disableIPv6"`
	// UsesProxyProtocol turns on the PROXY protocol towards the targets
	// (HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL). False leaves existing
	// services as they are.
	UsesProxyProtocol bool `koanf:"usesProxyProtocol"`
	// PrivateSubnetIPRange is the subnet of drivers.hetzner.network the
	// load balancers take their private IP from, in CIDR notation
	// (HCLOUD_LOAD_BALANCERS_PRIVATE_SUBNET_IP_RANGE).
	PrivateSubnetIPRange string `koanf:"privateSubnetIPRange"`
	// HealthCheck holds the health check defaults.
	HealthCheck HealthCheckConfig `koanf:"healthCheck"`
	// CertificateNamespaceLabel is polyccm's own, with no hcloud CCM
	// variable: hcloud CCM lets any Service use any certificate of the
	// project. Set to a label key (e.g. polyccm.io/namespaces), a Service
	// may use an uploaded certificate (http-certificates) only if that
	// label on the certificate lists the Service's namespace, namespaces
	// separated by dots (tenant-a.tenant-b): a namespace name has no dots,
	// and a label value takes no commas or spaces. Empty: any certificate,
	// as hcloud CCM. A Service's own managed certificate is always allowed.
	CertificateNamespaceLabel string `koanf:"certificateNamespaceLabel"`
}

// HealthCheckConfig is drivers.hetzner.loadBalancer.healthCheck. Zero
// values send nothing, so the API's defaults apply (15s, 10s, 3), as
// with hcloud CCM, whose documentation lists other defaults but sends
// none. Any of them set makes every Service's health check a customized
// one (see the health-check-* annotations).
type HealthCheckConfig struct {
	// Interval between checks (HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_INTERVAL).
	Interval time.Duration `koanf:"interval"`
	// Timeout of one check (HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_TIMEOUT).
	Timeout time.Duration `koanf:"timeout"`
	// Retries before a target counts as unhealthy
	// (HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_RETRIES).
	Retries int `koanf:"retries"`
}

// Hetzner load balancer algorithms.
const (
	algorithmRoundRobin       = "round_robin"
	algorithmLeastConnections = "least_connections"
)

// defaultLBType is what hcloud CCM creates when nothing names a type.
const defaultLBType = "lb11"

var (
	networkZoneRE = regexp.MustCompile(`^[a-z]+(-[a-z]+)+$`)
	lbTypeRE      = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

func defaultLoadBalancerConfig() LoadBalancerConfig { return LoadBalancerConfig{} }

// validate checks the subtree; keys are relative to drivers.hetzner.
func (c *LoadBalancerConfig) validate() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, config.Problem{Key: "loadBalancer." + key, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Location != "" && !locationRE.MatchString(c.Location) {
		bad("location", "%q is not a Hetzner Cloud location: use its name, e.g. fsn1, nbg1, hel1, ash, hil or sin", c.Location)
	}
	if c.NetworkZone != "" && !networkZoneRE.MatchString(c.NetworkZone) {
		bad("networkZone", "%q is not a network zone: use e.g. eu-central, us-east, us-west or ap-southeast", c.NetworkZone)
	}
	if c.Location != "" && c.NetworkZone != "" {
		bad("networkZone", "set location or networkZone, not both (hcloud CCM refuses both too): a location lies in a network zone")
	}
	if c.Type != "" && !lbTypeRE.MatchString(c.Type) {
		bad("type", "%q is not a load balancer type: use its name, e.g. lb11, lb21 or lb31, or leave it empty for lb11 (existing load balancers keep theirs)", c.Type)
	}
	switch c.Algorithm {
	case "", algorithmRoundRobin, algorithmLeastConnections:
	default:
		bad("algorithm", "%q is not an algorithm: use round_robin or least_connections, or leave it empty (new load balancers get round_robin, existing ones keep theirs)", c.Algorithm)
	}
	if r := c.PrivateSubnetIPRange; r != "" {
		if ip, _, err := net.ParseCIDR(r); err != nil || ip.To4() == nil {
			bad("privateSubnetIPRange", "%q is not an IPv4 subnet in CIDR notation: give a subnet of drivers.hetzner.network, e.g. 10.0.1.0/24", r)
		}
	}
	hc := c.HealthCheck
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"healthCheck.interval", hc.Interval}, {"healthCheck.timeout", hc.Timeout}} {
		switch {
		case d.v < 0:
			bad(d.key, "%s is negative: give whole seconds, e.g. 15s, or 0 for the API's default", d.v)
		case d.v%time.Second != 0:
			bad(d.key, "%s is not whole seconds, which is all the API takes: e.g. 15s, or 0 for the API's default", d.v)
		}
	}
	if hc.Retries < 0 {
		bad("healthCheck.retries", "%d is negative: give a count, e.g. 3, or 0 for the API's default", hc.Retries)
	}
	switch k := c.CertificateNamespaceLabel; {
	case k == "":
	case !validLabelKey(k):
		bad("certificateNamespaceLabel", "%q is not a Hetzner Cloud label key: give a name of up to 63 letters, digits, '-', '_' and '.' (starting and ending with a letter or digit), optionally after a DNS-name prefix and '/', e.g. polyccm.io/namespaces; or leave it empty to let any Service use any certificate, as hcloud CCM does", k)
	case k == LabelServiceUID:
		bad("certificateNamespaceLabel", "%s is the label hcloud CCM and polyccm mark load balancers and managed certificates with, which holds a Service UID, not namespaces: choose another key, e.g. polyccm.io/namespaces", k)
	}
	return errs
}

// Hetzner Cloud label keys: an optional DNS-subdomain prefix and "/",
// then a name of up to 63 characters.
var (
	labelNameRE   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`)
	labelPrefixRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
)

func validLabelKey(k string) bool {
	prefix, name, ok := strings.Cut(k, "/")
	if !ok {
		return labelNameRE.MatchString(k)
	}
	return len(prefix) <= 253 && labelPrefixRE.MatchString(prefix) && labelNameRE.MatchString(name)
}
