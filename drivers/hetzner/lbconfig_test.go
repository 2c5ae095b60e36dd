package hetzner

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polyccm/polyccm/config"
)

func TestLoadBalancerConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *LoadBalancerConfig)
		bad  map[string]string // key -> message fragment
	}{
		{"defaults", func(*LoadBalancerConfig) {}, nil},
		{"everything set", func(c *LoadBalancerConfig) {
			*c = LoadBalancerConfig{Location: "fsn1", Type: "lb21", Algorithm: "least_connections", UsePrivateIP: true, DisablePrivateIngress: true,
				DisablePublicNetwork: true, DisableIPv6: true, UsesProxyProtocol: true, PrivateSubnetIPRange: "10.0.1.0/24",
				HealthCheck: HealthCheckConfig{Interval: 15 * time.Second, Timeout: 10 * time.Second, Retries: 3}}
		}, nil},
		{"network zone", func(c *LoadBalancerConfig) { c.NetworkZone = "eu-central" }, nil},
		{"both places", func(c *LoadBalancerConfig) { c.Location, c.NetworkZone = "fsn1", "eu-central" }, map[string]string{"loadBalancer.networkZone": "not both"}},
		{"bad location", func(c *LoadBalancerConfig) { c.Location = "Falkenstein" }, map[string]string{"loadBalancer.location": "fsn1"}},
		{"bad zone", func(c *LoadBalancerConfig) { c.NetworkZone = "eu" }, map[string]string{"loadBalancer.networkZone": "eu-central"}},
		{"bad type", func(c *LoadBalancerConfig) { c.Type = "LB 11" }, map[string]string{"loadBalancer.type": "lb11"}},
		{"bad algorithm", func(c *LoadBalancerConfig) { c.Algorithm = "roundrobin" }, map[string]string{"loadBalancer.algorithm": "round_robin or least_connections"}},
		{"bad subnet", func(c *LoadBalancerConfig) { c.PrivateSubnetIPRange = "10.0.1.0" }, map[string]string{"loadBalancer.privateSubnetIPRange": "CIDR"}},
		{"IPv6 subnet", func(c *LoadBalancerConfig) { c.PrivateSubnetIPRange = "fd00::/64" }, map[string]string{"loadBalancer.privateSubnetIPRange": "IPv4"}},
		{"sub-second interval", func(c *LoadBalancerConfig) { c.HealthCheck.Interval = 1500 * time.Millisecond }, map[string]string{"loadBalancer.healthCheck.interval": "whole seconds"}},
		{"negative timeout", func(c *LoadBalancerConfig) { c.HealthCheck.Timeout = -time.Second }, map[string]string{"loadBalancer.healthCheck.timeout": "negative"}},
		{"negative retries", func(c *LoadBalancerConfig) { c.HealthCheck.Retries = -1 }, map[string]string{"loadBalancer.healthCheck.retries": "negative"}},
		{"certificate label", func(c *LoadBalancerConfig) { c.CertificateNamespaceLabel = "polyccm.io/namespaces" }, nil},
		{"certificate label without prefix", func(c *LoadBalancerConfig) { c.CertificateNamespaceLabel = "tls_namespaces" }, nil},
		{"certificate label with spaces", func(c *LoadBalancerConfig) { c.CertificateNamespaceLabel = "polyccm.io/name spaces" }, map[string]string{"loadBalancer.certificateNamespaceLabel": "polyccm.io/namespaces"}},
		{"certificate label with a bad prefix", func(c *LoadBalancerConfig) { c.CertificateNamespaceLabel = "Polyccm_io/namespaces" }, map[string]string{"loadBalancer.certificateNamespaceLabel": "not a Hetzner Cloud label key"}},
		{"certificate label too long", func(c *LoadBalancerConfig) { c.CertificateNamespaceLabel = "polyccm.io/" + strings.Repeat("n", 64) }, map[string]string{"loadBalancer.certificateNamespaceLabel": "63"}},
		{"certificate label is the UID label", func(c *LoadBalancerConfig) { c.CertificateNamespaceLabel = LabelServiceUID }, map[string]string{"loadBalancer.certificateNamespaceLabel": "Service UID"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := defaultLoadBalancerConfig()
			tc.edit(&c)
			got := map[string]string{}
			for _, e := range c.validate() {
				var p config.Problem
				if !errors.As(e, &p) {
					t.Fatalf("validate returned %T (%v), want config.Problem", e, e)
				}
				got[p.Key] = p.Msg
			}
			var gotKeys, wantKeys []string
			for k := range got {
				gotKeys = append(gotKeys, k)
			}
			for k := range tc.bad {
				wantKeys = append(wantKeys, k)
			}
			slices.Sort(gotKeys)
			slices.Sort(wantKeys)
			if !slices.Equal(gotKeys, wantKeys) {
				t.Fatalf("problems at %v, want %v: %v", gotKeys, wantKeys, got)
			}
			for k, frag := range tc.bad {
				if !strings.Contains(got[k], frag) {
					t.Errorf("%s: %q does not say %q", k, got[k], frag)
				}
			}
		})
	}
}

// The config's problems reach Config.Validate under drivers.hetzner.
func TestLoadBalancerConfigInDriverConfig(t *testing.T) {
	c := Config{APIURL: DefaultAPIURL, Instances: InstancesConfig{AddressFamily: FamilyIPv4}, LoadBalancer: LoadBalancerConfig{Algorithm: "random"}}
	err := c.Validate()
	var p config.Problem
	found := false
	for _, e := range unjoinLB(err) {
		if errors.As(e, &p) && p.Key == "loadBalancer.algorithm" {
			found = true
		}
	}
	if !found {
		t.Errorf("Validate() = %v, want a problem at loadBalancer.algorithm", err)
	}
}

func unjoinLB(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
