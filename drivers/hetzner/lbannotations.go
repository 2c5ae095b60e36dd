package hetzner

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/polyccm/polyccm/core/annotations"
)

// The Service annotations, with hcloud CCM's keys and meanings so that
// manifests written for it work unchanged.
const (
	annPrefix = "load-balancer.hetzner.cloud/"

	AnnName                  = annPrefix + "name"
	AnnLocation              = annPrefix + "location"
	AnnNetworkZone           = annPrefix + "network-zone"
	AnnType                  = annPrefix + "type"
	AnnAlgorithm             = annPrefix + "algorithm-type"
	AnnProtocol              = annPrefix + "protocol"
	AnnProxyProtocol         = annPrefix + "uses-proxyprotocol"
	AnnCertificateType       = annPrefix + "certificate-type"
	AnnHTTPCertificates      = annPrefix + "http-certificates"
	AnnManagedCertName       = annPrefix + "http-managed-certificate-name"
	AnnManagedCertDomains    = annPrefix + "http-managed-certificate-domains"
	AnnManagedCertStaging    = annPrefix + "http-managed-certificate-acme-staging"
	AnnRedirectHTTP          = annPrefix + "http-redirect-http"
	AnnStickySessions        = annPrefix + "http-sticky-sessions"
	AnnCookieName            = annPrefix + "http-cookie-name"
	AnnCookieLifetime        = annPrefix + "http-cookie-lifetime"
	AnnTimeoutIdle           = annPrefix + "http-timeout-idle"
	AnnHCProtocol            = annPrefix + "health-check-protocol"
	AnnHCPort                = annPrefix + "health-check-port"
	AnnHCInterval            = annPrefix + "health-check-interval"
	AnnHCTimeout             = annPrefix + "health-check-timeout"
	AnnHCRetries             = annPrefix + "health-check-retries"
	AnnHCDomain              = annPrefix + "health-check-http-domain"
	AnnHCPath                = annPrefix + "health-check-http-path"
	AnnHCValidateCert        = annPrefix + "health-check-http-validate-certificate"
	AnnHCStatusCodes         = annPrefix + "http-status-codes"
	AnnUsePrivateIP          = annPrefix + "use-private-ip"
	AnnDisablePublicNetwork  = annPrefix + "disable-public-network"
	AnnDisablePrivateIngress = annPrefix + "disable-private-ingress"
	AnnIPv6Disabled          = annPrefix + "ipv6-disabled"
	AnnPrivateIPv4           = annPrefix + "private-ipv4"
	AnnPrivateSubnet         = annPrefix + "private-subnet-ip-range"
	AnnHostname              = annPrefix + "hostname"
	AnnIPv4RDNS              = annPrefix + "ipv4-rdns"
	AnnIPv6RDNS              = annPrefix + "ipv6-rdns"
	AnnNodeSelector          = annPrefix + "node-selector"
	// Keys hcloud CCM reserves as read-only and neither reads nor writes.
	AnnID   = annPrefix + "id"
	AnnIPv4 = annPrefix + "ipv4"
	AnnIPv6 = annPrefix + "ipv6"
)

// Protocols of services and health checks.
const (
	protoTCP   = "tcp"
	protoHTTP  = "http"
	protoHTTPS = "https"
)

// Certificate types.
const (
	certUploaded = "uploaded"
	certManaged  = "managed"
)

// seconds reads a duration as hcloud CCM documents it (whole seconds) or
// as it parses it (a Go duration such as 15s): a bare number, which hcloud
// CCM refuses although its table says int, means seconds.
func seconds(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, checkSeconds(time.Duration(n) * time.Second)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration")
	}
	return d, checkSeconds(d)
}

func checkSeconds(d time.Duration) error {
	if d < time.Second || d%time.Second != 0 {
		return errors.New("not a whole number of seconds")
	}
	return nil
}

func durationSpec(key, def, doc string) annotations.Spec {
	return annotations.String(key, "whole seconds: a number (15) or a duration (15s, 5m)", def, doc, func(s string) error {
		_, err := seconds(s)
		return err
	})
}

var (
	hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$`)
	statusRE   = regexp.MustCompile(`^[1-5][0-9?]{2}$`)
	wordRE     = regexp.MustCompile(`^\S+$`)
)

func checkWord(s string) error {
	if !wordRE.MatchString(s) {
		return errors.New("has spaces")
	}
	return nil
}

func checkHostname(s string) error {
	if len(s) > 253 || !hostnameRE.MatchString(s) {
		return errors.New("not a DNS name")
	}
	return nil
}

// LBAnnotations are the annotations the Hetzner driver supports: every
// load-balancer.hetzner.cloud/* key of hcloud CCM (as of v1.35.0).
var LBAnnotations = annotations.NewSet(
	[]string{annPrefix},
	annotations.String(AnnName, "a load balancer name", "a + the Service UID",
		"Name of the load balancer; set on an existing one, it renames it. Also how a load balancer made another way is found and taken over.", nil),
	annotations.List(AnnLocation, "a location, e.g. fsn1, nbg1, hel1, ash, hil, sin; empty drops drivers.hetzner.loadBalancer.location", "Location of a new load balancer; wins over network-zone. Create only: an existing load balancer stays where it is.", checkLocation),
	annotations.String(AnnNetworkZone, "a network zone, e.g. eu-central, us-east, us-west, ap-southeast", "drivers.hetzner.loadBalancer.networkZone",
		"Network zone of a new load balancer (when no location is given). Create only.", func(s string) error {
			if !networkZoneRE.MatchString(s) {
				return errors.New("not a network zone")
			}
			return nil
		}),
	annotations.String(AnnType, "a load balancer type, e.g. lb11, lb21, lb31", "drivers.hetzner.loadBalancer.type, else lb11 for a new one",
		"Type of the load balancer; an existing one is changed to it. Removing the annotation does not change the type back.", func(s string) error {
			if !lbTypeRE.MatchString(s) {
				return errors.New("not a type name")
			}
			return nil
		}),
	annotations.Enum(AnnAlgorithm, []string{algorithmRoundRobin, algorithmLeastConnections}, "drivers.hetzner.loadBalancer.algorithm, else round_robin for a new one", "Balancing algorithm."),
	annotations.Enum(AnnProtocol, []string{protoTCP, protoHTTP, protoHTTPS}, protoTCP, "Protocol of every port's service. https terminates TLS with http-certificates or a managed certificate."),
	annotations.Bool(AnnProxyProtocol, "drivers.hetzner.loadBalancer.usesProxyProtocol", "Send the PROXY protocol header to the targets; the status then shows ipMode Proxy."),
	annotations.Enum(AnnCertificateType, []string{certUploaded, certManaged}, certUploaded, "https services only. uploaded: http-certificates names the certificates; managed: polyccm makes a Let's Encrypt certificate for http-managed-certificate-domains (labelled hcloud-ccm/service-uid, as hcloud CCM makes it) and uses it."),
	annotations.List(AnnHTTPCertificates, "comma-separated certificate IDs or names", "Certificates of https services (certificate-type uploaded); a number is an ID, used as given. With drivers.hetzner.loadBalancer.certificateNamespaceLabel set, only certificates whose label lists the Service's namespace.", checkWord),
	annotations.String(AnnManagedCertName, "a certificate name", "ccm-managed-certificate-<Service UID>", "Name of the managed certificate polyccm makes (certificate-type managed).", nil),
	annotations.List(AnnManagedCertDomains, "comma-separated domain names", "Domains of the managed certificate; required with certificate-type managed. A certificate already made keeps its domains.", checkWildcardHost),
	annotations.Bool(AnnManagedCertStaging, "false", "Make the managed certificate with Let's Encrypt's staging CA (hcloud CCM's internal testing switch)."),
	annotations.Bool(AnnRedirectHTTP, "the API's (false)", "Redirect HTTP on port 80 to HTTPS (protocol https)."),
	annotations.Bool(AnnStickySessions, "the API's (false)", "Sticky sessions by cookie (protocol http or https)."),
	annotations.String(AnnCookieName, "a cookie name", "the API's (HCLBSTICKY)", "Cookie of sticky sessions.", checkWord),
	durationSpec(AnnCookieLifetime, "the API's (300s)", "Lifetime of the sticky-session cookie."),
	durationSpec(AnnTimeoutIdle, "the API's (60s)", "Idle timeout of http and https services, 30s to 300s."),
	annotations.Enum(AnnHCProtocol, []string{protoTCP, protoHTTP, protoHTTPS}, "the service's protocol", "Health check protocol. Any health-check-protocol, -port, -interval, -timeout or -retries (or a drivers.hetzner.loadBalancer.healthCheck value) customizes the check; without, it is tcp on the node port."),
	annotations.Int(AnnHCPort, 1, 65535, "the node port", "Port the health check connects to on the targets."),
	durationSpec(AnnHCInterval, "drivers.hetzner.loadBalancer.healthCheck.interval; the API's (15s)", "Interval of the health check."),
	durationSpec(AnnHCTimeout, "drivers.hetzner.loadBalancer.healthCheck.timeout; the API's (10s)", "Timeout of one check."),
	annotations.Int(AnnHCRetries, 0, 100, "drivers.hetzner.loadBalancer.healthCheck.retries; the API's (3)", "Failed checks before a target counts as unhealthy."),
	annotations.String(AnnHCDomain, "a domain", "", "Host header of http and https health checks (customized checks only).", nil),
	annotations.String(AnnHCPath, "a path, e.g. /healthz", "the API's (/)", "Path of http and https health checks (customized checks only).", nil),
	annotations.Bool(AnnHCValidateCert, "the API's (false)", "Validate the targets' certificate in https health checks (customized checks only)."),
	annotations.List(AnnHCStatusCodes, "comma-separated status codes, ? as a wildcard, e.g. 2??,3??", "Status codes an http or https health check accepts (customized checks only).", func(s string) error {
		if !statusRE.MatchString(s) {
			return errors.New("not a status code")
		}
		return nil
	}),
	annotations.Bool(AnnUsePrivateIP, "drivers.hetzner.loadBalancer.usePrivateIP", "Targets use the servers' private IPs in drivers.hetzner.network."),
	annotations.Bool(AnnDisablePublicNetwork, "drivers.hetzner.loadBalancer.disablePublicNetwork; else left as it is", "Turn the public interface off (true) or on (false); traffic then comes over drivers.hetzner.network."),
	annotations.Bool(AnnDisablePrivateIngress, "drivers.hetzner.loadBalancer.disablePrivateIngress", "Leave the private IP out of the Service status."),
	annotations.Bool(AnnIPv6Disabled, "drivers.hetzner.loadBalancer.disableIPv6", "Leave the IPv6 address out of the Service status (e.g. for external-dns)."),
	annotations.String(AnnPrivateIPv4, "an IPv4 address in drivers.hetzner.network", "", "Private IP of the load balancer; a load balancer with another is detached and attached again.", func(s string) error {
		if ip := net.ParseIP(s); ip == nil || ip.To4() == nil {
			return errors.New("not an IPv4 address")
		}
		return nil
	}),
	annotations.String(AnnPrivateSubnet, "an IPv4 subnet in CIDR notation, e.g. 10.0.1.0/24", "drivers.hetzner.loadBalancer.privateSubnetIPRange", "Subnet of drivers.hetzner.network the private IP comes from when the load balancer is attached.", func(s string) error {
		if ip, _, err := net.ParseCIDR(s); err != nil || ip.To4() == nil {
			return errors.New("not an IPv4 CIDR")
		}
		return nil
	}),
	annotations.String(AnnHostname, "a DNS name", "", "Publish this hostname in the Service status instead of the IPs.", checkHostname),
	annotations.String(AnnIPv4RDNS, "a DNS name", "", "Reverse DNS of the public IPv4 address.", checkHostname),
	annotations.String(AnnIPv6RDNS, "a DNS name", "", "Reverse DNS of the public IPv6 address.", checkHostname),
	annotations.String(AnnNodeSelector, "a label selector, e.g. pool=lb or pool in (a,b)", "every Node", "Only Nodes matching it are targets.", func(s string) error {
		_, err := labels.Parse(s)
		return err
	}),
	annotations.Present(AnnID, "Read-only in hcloud CCM, which neither reads nor writes it; ignored."),
	annotations.Present(AnnIPv4, "Read-only in hcloud CCM, which never writes it; ignored."),
	annotations.Present(AnnIPv6, "Read-only in hcloud CCM, which never writes it; ignored."),
)

func checkLocation(s string) error {
	if !locationRE.MatchString(s) {
		return fmt.Errorf("not a location")
	}
	return nil
}

func checkWildcardHost(s string) error {
	return checkHostname(strings.TrimPrefix(s, "*."))
}
