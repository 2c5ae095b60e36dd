package aws_test

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
)

const (
	certARN  = "arn:aws:acm:eu-west-1:123456789012:certificate/0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e"
	cert2ARN = "arn:aws:iam::123456789012:server-certificate/web-2025"
	eipA     = "eipalloc-0a1b2c3d4e5f60718"
	eipB     = "eipalloc-0f1e2d3c4b5a69788"
)

// Every invalid setting is refused before anything is asked of AWS, with
// an InvalidError (and a Warning event) naming the annotation and what is
// valid.
func TestInvalidAnnotations(t *testing.T) {
	cases := []struct {
		name  string
		ann   map[string]string
		ports []v1.ServicePort
		tweak func(*v1.Service)
		key   string
		frags []string
	}{
		{name: "type", ann: map[string]string{awsccm.AnnType: "alb"}, key: awsccm.AnnType, frags: []string{`"alb"`, "nlb, external or nlb-ip"}},
		{name: "internal", ann: map[string]string{awsccm.AnnInternal: "maybe"}, key: awsccm.AnnInternal, frags: []string{"true or false"}},
		{name: "scheme", ann: map[string]string{awsccm.AnnScheme: "public"}, key: awsccm.AnnScheme, frags: []string{"internal or internet-facing"}},
		{name: "scheme contradicts internal", ann: map[string]string{awsccm.AnnScheme: "internal", awsccm.AnnInternal: "false"}, key: awsccm.AnnScheme, frags: []string{"contradicts", awsccm.AnnInternal}},
		{name: "eip allocation malformed", ann: map[string]string{awsccm.AnnEIPAllocations: "eip-1234"}, key: awsccm.AnnEIPAllocations, frags: []string{"eipalloc-"}},
		{name: "eip on internal", ann: map[string]string{awsccm.AnnEIPAllocations: eipA, awsccm.AnnInternal: "true"}, key: awsccm.AnnEIPAllocations, frags: []string{"internet-facing load balancers only"}},
		{name: "eips not one per subnet", ann: map[string]string{awsccm.AnnEIPAllocations: eipA + "," + eipB, awsccm.AnnSubnets: "public-a"}, key: awsccm.AnnEIPAllocations, frags: []string{"2 allocations for 1 subnets"}},
		{name: "private IPv4 malformed", ann: map[string]string{awsccm.AnnPrivateIPv4Addresses: "10.0.11.300", awsccm.AnnInternal: "true"}, key: awsccm.AnnPrivateIPv4Addresses, frags: []string{"IPv4 addresses"}},
		{name: "private IPv6", ann: map[string]string{awsccm.AnnPrivateIPv4Addresses: "fd00::1", awsccm.AnnInternal: "true"}, key: awsccm.AnnPrivateIPv4Addresses, frags: []string{"IPv4 addresses"}},
		{name: "private IPv4 internet-facing", ann: map[string]string{awsccm.AnnPrivateIPv4Addresses: "10.0.11.50"}, key: awsccm.AnnPrivateIPv4Addresses, frags: []string{"internal load balancers only"}},
		{name: "private IPv4 not one per subnet", ann: map[string]string{awsccm.AnnPrivateIPv4Addresses: "10.0.11.50", awsccm.AnnInternal: "true", awsccm.AnnSubnets: "private-a,private-b"}, key: awsccm.AnnPrivateIPv4Addresses, frags: []string{"1 addresses for 2 subnets"}},
		{name: "healthcheck protocol", ann: map[string]string{awsccm.AnnHealthCheckProtocol: "UDP"}, key: awsccm.AnnHealthCheckProtocol, frags: []string{"TCP, HTTP, HTTPS or SSL"}},
		{name: "healthcheck port zero", ann: map[string]string{awsccm.AnnHealthCheckPort: "0"}, key: awsccm.AnnHealthCheckPort, frags: []string{"traffic-port or a port number"}},
		{name: "healthcheck port name", ann: map[string]string{awsccm.AnnHealthCheckPort: "http"}, key: awsccm.AnnHealthCheckPort, frags: []string{"traffic-port or a port number"}},
		{name: "healthcheck path relative", ann: map[string]string{awsccm.AnnHealthCheckPath: "healthz"}, key: awsccm.AnnHealthCheckPath, frags: []string{"an absolute path"}},
		{name: "healthcheck path with TCP", ann: map[string]string{awsccm.AnnHealthCheckPath: "/ready", awsccm.AnnHealthCheckProtocol: "TCP"}, key: awsccm.AnnHealthCheckPath, frags: []string{"HTTP and HTTPS health checks only"}},
		{name: "healthcheck interval", ann: map[string]string{awsccm.AnnHealthCheckInterval: "3"}, key: awsccm.AnnHealthCheckInterval, frags: []string{"an integer from 5 to 300"}},
		{name: "healthcheck timeout", ann: map[string]string{awsccm.AnnHealthCheckTimeout: "1"}, key: awsccm.AnnHealthCheckTimeout, frags: []string{"an integer from 2 to 120"}},
		{name: "healthcheck timeout not below interval", ann: map[string]string{awsccm.AnnHealthCheckTimeout: "30"}, key: awsccm.AnnHealthCheckTimeout, frags: []string{"less than the interval (30s)"}},
		{name: "healthy threshold", ann: map[string]string{awsccm.AnnHealthyThreshold: "11"}, key: awsccm.AnnHealthyThreshold, frags: []string{"an integer from 2 to 10"}},
		{name: "unhealthy threshold", ann: map[string]string{awsccm.AnnUnhealthyThreshold: "1"}, key: awsccm.AnnUnhealthyThreshold, frags: []string{"an integer from 2 to 10"}},
		{name: "proxy protocol", ann: map[string]string{awsccm.AnnProxyProtocol: "true"}, key: awsccm.AnnProxyProtocol, frags: []string{`want *`}},
		{name: "ssl cert", ann: map[string]string{awsccm.AnnSSLCert: "my-cert"}, key: awsccm.AnnSSLCert, frags: []string{"certificate ARNs"}},
		{name: "ssl ports without cert", ann: map[string]string{awsccm.AnnSSLPorts: "443"}, key: awsccm.AnnSSLPorts, frags: []string{"needs " + awsccm.AnnSSLCert}},
		{name: "ssl ports unknown port", ann: map[string]string{awsccm.AnnSSLCert: certARN, awsccm.AnnSSLPorts: "8443"}, key: awsccm.AnnSSLPorts, frags: []string{`"8443" is not a port number or name`}},
		{name: "ssl negotiation policy", ann: map[string]string{awsccm.AnnSSLCert: certARN, awsccm.AnnSSLNegotiationPolicy: "TLS 1.3 please"}, key: awsccm.AnnSSLNegotiationPolicy, frags: []string{"an ELB security policy name"}},
		{name: "backend protocol", ann: map[string]string{awsccm.AnnBackendProtocol: "udp"}, key: awsccm.AnnBackendProtocol, frags: []string{"tcp, ssl, tls, http or https"}},
		{name: "backend tls without cert", ann: map[string]string{awsccm.AnnBackendProtocol: "tls"}, key: awsccm.AnnBackendProtocol, frags: []string{"needs TLS listeners"}},
		{name: "cross zone", ann: map[string]string{awsccm.AnnCrossZone: "yes"}, key: awsccm.AnnCrossZone, frags: []string{"true or false"}},
		{name: "target node labels", ann: map[string]string{awsccm.AnnTargetNodeLabels: "role"}, key: awsccm.AnnTargetNodeLabels, frags: []string{"key=value node labels"}},
		{name: "additional tags reserved", ann: map[string]string{awsccm.AnnAdditionalResourceTags: "aws:team=shop"}, key: awsccm.AnnAdditionalResourceTags, frags: []string{"key=value tags"}},
		{name: "additional tags ownership", ann: map[string]string{awsccm.AnnAdditionalResourceTags: awsccm.TagClusterPrefix + "other=owned"}, key: awsccm.AnnAdditionalResourceTags, frags: []string{"key=value tags"}},
		{name: "target group attributes", ann: map[string]string{awsccm.AnnTargetGroupAttributes: "Deregistration=1"}, key: awsccm.AnnTargetGroupAttributes, frags: []string{"target group attributes"}},
		{name: "ip address type", ann: map[string]string{awsccm.AnnIPAddressType: "ipv6"}, key: awsccm.AnnIPAddressType, frags: []string{"ipv4 or dualstack"}},
		{name: "source range", tweak: func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0"} }, key: "spec.loadBalancerSourceRanges", frags: []string{`"10.0.0.0" is not a CIDR`}},
		{name: "SCTP", ports: []v1.ServicePort{{Name: "s", Protocol: v1.ProtocolSCTP, Port: 9000, NodePort: 30900}}, key: "spec.ports", frags: []string{"SCTP", "use TCP or UDP"}},
		{name: "TCP and UDP on different node ports", ports: []v1.ServicePort{tcp("dns-tcp", 53, 30053), udp("dns-udp", 53, 30054)}, key: "spec.ports", frags: []string{"different node ports"}},
		{name: "no node port", ports: []v1.ServicePort{tcp("http", 80, 0)}, key: "spec.ports", frags: []string{"no node port"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			nodes, _ := e.nodes(1)
			svc := service(c.ann, c.ports...)
			if c.tweak != nil {
				c.tweak(svc)
			}
			_, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, svc, nodes)
			inv := invalid(t, err, c.key, c.frags...)
			if !strings.Contains(inv.Error(), "nothing was changed") {
				t.Errorf("error %q does not say nothing was changed", inv)
			}
			if n := e.fake.Faults().Total(); n != 0 {
				t.Errorf("%d calls to AWS for an invalid Service: %v", n, e.fake.Faults().Calls())
			}
			evs := e.events()
			found := false
			for _, ev := range evs {
				if strings.HasPrefix(ev, "Warning InvalidLoadBalancerConfig "+c.key+":") {
					found = true
				}
			}
			if !found {
				t.Errorf("no Warning event for %s: %v", c.key, evs)
			}
			// A node update of an invalid Service fails the same way.
			if err := e.lbs.UpdateLoadBalancer(ctx(t), cluster, svc, nodes); err == nil {
				t.Error("UpdateLoadBalancer accepted the invalid Service")
			}
		})
	}
}

// Settings only the subnets can check are refused after looking at them,
// with nothing made.
func TestInvalidAgainstSubnets(t *testing.T) {
	cases := []struct {
		name  string
		ann   map[string]string
		key   string
		frags []string
	}{
		{"unknown subnet name", map[string]string{awsccm.AnnSubnets: "public-a,dmz-b"}, awsccm.AnnSubnets, []string{`no subnet "dmz-b"`}},
		{"subnet of another VPC", map[string]string{awsccm.AnnSubnets: "default-subnet"}, awsccm.AnnSubnets, []string{"no subnet"}},
		{"eips not one per discovered subnet", map[string]string{awsccm.AnnEIPAllocations: eipA}, awsccm.AnnEIPAllocations, []string{"1 allocations for the 2 discovered subnets"}},
		{"private IPs not one per discovered subnet", map[string]string{awsccm.AnnInternal: "true", awsccm.AnnPrivateIPv4Addresses: "10.0.11.50"}, awsccm.AnnPrivateIPv4Addresses, []string{"1 addresses for the 2 discovered subnets"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			if c.ann[awsccm.AnnSubnets] == "default-subnet" {
				c.ann[awsccm.AnnSubnets] = e.fake.Subnets()[0].ID // the default VPC's
			}
			nodes, _ := e.nodes(1)
			_, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, service(c.ann), nodes)
			invalid(t, err, c.key, c.frags...)
			if n := e.mutating(); n != 0 {
				t.Errorf("%d changing calls: %v", n, e.fake.Faults().Calls())
			}
		})
	}
}

// A cluster with no subnet tagged for its NLBs gets an error saying which
// tags to set.
func TestNoTaggedSubnets(t *testing.T) {
	w := newWorld(t)
	// A VPC of the cluster's own with an untagged subnet.
	vpc := w.fake.AddVPC(fakeaws.VPC{CIDRBlock: "10.1.0.0/16"})
	w.fake.AddSubnet(fakeaws.Subnet{VPCID: vpc.ID, AvailabilityZone: zoneA, Tags: map[string]string{awsccm.TagRoleELB: "1"}})
	cfg := w.config()
	cfg.VPCID = vpc.ID
	e := w.env(cfg)
	nodes, _ := e.nodes(1)
	_, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, service(nil), nodes)
	invalid(t, err, awsccm.AnnSubnets, "no subnet in "+vpc.ID, awsccm.TagRoleELB, clusterTag)
	if n := e.mutating(); n != 0 {
		t.Errorf("%d changing calls: %v", n, e.fake.Faults().Calls())
	}
}

// type external and nlb-ip belong to the AWS Load Balancer Controller:
// polyccm says so without calling AWS, whatever else the Service says.
func TestImplementedElsewhere(t *testing.T) {
	for _, typ := range []string{"external", "nlb-ip", " External "} {
		t.Run(typ, func(t *testing.T) {
			e := newEnv(t)
			nodes, _ := e.nodes(1)
			svc := service(map[string]string{awsccm.AnnType: typ, awsccm.AnnHealthCheckInterval: "not checked"})
			if _, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, svc, nodes); !errors.Is(err, cloudprovider.ImplementedElsewhere) {
				t.Errorf("EnsureLoadBalancer: %v, want ImplementedElsewhere", err)
			}
			if err := e.lbs.UpdateLoadBalancer(ctx(t), cluster, svc, nodes); !errors.Is(err, cloudprovider.ImplementedElsewhere) {
				t.Errorf("UpdateLoadBalancer: %v, want ImplementedElsewhere", err)
			}
			if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); !errors.Is(err, cloudprovider.ImplementedElsewhere) {
				t.Errorf("EnsureLoadBalancerDeleted: %v, want ImplementedElsewhere", err)
			}
			if _, exists, err := e.lbs.GetLoadBalancer(ctx(t), cluster, svc); exists || err != nil {
				t.Errorf("GetLoadBalancer = %v, %v; want not exists", exists, err)
			}
			if n := e.fake.Faults().Total(); n != 0 {
				t.Errorf("%d calls to AWS: %v", n, e.fake.Faults().Calls())
			}
		})
	}
}

// lbCase is a valid Service and what its NLB must look like.
type lbCase struct {
	name  string
	ann   map[string]string
	ports []v1.ServicePort
	tweak func(*v1.Service)
	check func(t *testing.T, e *env, lb fakeaws.LoadBalancer)
}

func runLBCases(t *testing.T, cases []lbCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			nodes, _ := e.nodes(2)
			svc := service(c.ann, c.ports...)
			if c.tweak != nil {
				c.tweak(svc)
			}
			st := e.ensure(svc, nodes)
			lb := e.nlb()
			if len(st.Ingress) != 1 || st.Ingress[0].Hostname != lb.DNSName {
				t.Errorf("status %+v, want the DNS name %s", st, lb.DNSName)
			}
			c.check(t, e, lb)
			// A second pass finds nothing to change.
			before := e.mutating()
			e.ensure(svc, nodes)
			if n := e.mutating() - before; n != 0 {
				t.Errorf("the second pass made %d changing calls: %v", n, e.fake.Faults().Calls())
			}
			if len(e.events()) != 0 {
				t.Errorf("events for a valid Service")
			}
		})
	}
}

// wantHealthCheck checks every listener's target group's health check.
func wantHealthCheck(want fakeaws.HealthCheck) func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
	return func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
		t.Helper()
		for _, l := range e.listeners(lb.ARN) {
			got := e.targetGroup(l).HealthCheck
			got.Matcher = ""
			if got != want {
				t.Errorf("listener %d health check\n got %+v\nwant %+v", l.Port, got, want)
			}
		}
	}
}

func listenerSummary(e *env, lb fakeaws.LoadBalancer) map[int32]string {
	out := map[int32]string{}
	for port, l := range e.listeners(lb.ARN) {
		tg := e.targetGroup(l)
		s := l.Protocol + "->" + tg.Protocol + ":" + strconv.Itoa(int(tg.Port))
		for _, c := range l.Certificates {
			s += " cert=" + c.ARN
		}
		if l.SSLPolicy != "" {
			s += " policy=" + l.SSLPolicy
		}
		out[port] = s
	}
	return out
}

func TestValidAnnotations(t *testing.T) {
	// The AWS CCM's defaults (buildNLBHealthCheckConfiguration; see
	// names_test.go), with AWS's default timeout, which it does not set.
	defaultHC := fakeaws.HealthCheck{Enabled: true, Protocol: "TCP", Port: "traffic-port", IntervalSeconds: 30, TimeoutSeconds: 10, HealthyThreshold: 3, UnhealthyThreshold: 3}
	publicSubnets := func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
		t.Helper()
		if got, want := sortedSubnets(lb), sorted(e.public[zoneA].ID, e.public[zoneB].ID); !slices.Equal(got, want) {
			t.Errorf("subnets %v, want the tagged public ones %v", got, want)
		}
	}
	internal := func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
		t.Helper()
		if lb.Scheme != "internal" {
			t.Errorf("scheme %s, want internal", lb.Scheme)
		}
		if got, want := sortedSubnets(lb), sorted(e.private[zoneA].ID, e.private[zoneB].ID); !slices.Equal(got, want) {
			t.Errorf("subnets %v, want the internal-elb ones %v", got, want)
		}
	}
	internetFacing := func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
		t.Helper()
		if lb.Scheme != "internet-facing" {
			t.Errorf("scheme %s, want internet-facing", lb.Scheme)
		}
		publicSubnets(t, e, lb)
	}
	tgAttr := func(key, want string) func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
		return func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
			t.Helper()
			for _, l := range e.listeners(lb.ARN) {
				if got := e.targetGroup(l).Attributes[key]; got != want {
					t.Errorf("listener %d: target group %s = %q, want %q", l.Port, key, got, want)
				}
			}
		}
	}
	cases := []lbCase{
		{name: "defaults", check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
			if lb.Type != "network" || lb.IPAddressType != "ipv4" || lb.Attributes["load_balancing.cross_zone.enabled"] != "false" {
				t.Errorf("NLB %+v", lb)
			}
			internetFacing(t, e, lb)
			wantHealthCheck(defaultHC)(t, e, lb)
			if got := listenerSummary(e, lb); !reflect.DeepEqual(got, map[int32]string{80: "TCP->TCP:30080"}) {
				t.Errorf("listeners %v", got)
			}
			if got := ingress(e.securityGroup(lb)); !slices.Equal(got, []string{"icmp/3-4/0.0.0.0/0", "tcp/80/0.0.0.0/0"}) {
				t.Errorf("ingress %v", got)
			}
			tgAttr("proxy_protocol_v2.enabled", "false")(t, e, lb)
		}},
		{name: "type nlb", ann: map[string]string{awsccm.AnnType: "nlb"}, check: internetFacing},
		{name: "internal true", ann: map[string]string{awsccm.AnnInternal: "true"}, check: internal},
		{name: "internal legacy CIDR", ann: map[string]string{awsccm.AnnInternal: "0.0.0.0/0"}, check: internal},
		{name: "internal false", ann: map[string]string{awsccm.AnnInternal: "false"}, check: internetFacing},
		{name: "scheme internal", ann: map[string]string{awsccm.AnnScheme: "internal"}, check: internal},
		{name: "scheme internal agrees with internal", ann: map[string]string{awsccm.AnnScheme: "internal", awsccm.AnnInternal: "true"}, check: internal},
		{name: "scheme internet-facing", ann: map[string]string{awsccm.AnnScheme: "internet-facing"}, check: internetFacing},
		{name: "eip allocations", ann: map[string]string{awsccm.AnnEIPAllocations: eipA + ", " + eipB}, check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
			got := map[string]string{}
			for _, s := range lb.Subnets {
				got[s.SubnetID] = s.AllocationID
			}
			// In zone order, as the subnets were discovered.
			if want := map[string]string{e.public[zoneA].ID: eipA, e.public[zoneB].ID: eipB}; !reflect.DeepEqual(got, want) {
				t.Errorf("allocations %v, want %v", got, want)
			}
		}},
		{name: "private IPv4 addresses", ann: map[string]string{awsccm.AnnInternal: "true", awsccm.AnnPrivateIPv4Addresses: "10.0.11.50,10.0.12.50"}, check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
			internal(t, e, lb)
			got := map[string]string{}
			for _, s := range lb.Subnets {
				got[s.SubnetID] = s.PrivateIPv4Address
			}
			if want := map[string]string{e.private[zoneA].ID: "10.0.11.50", e.private[zoneB].ID: "10.0.12.50"}; !reflect.DeepEqual(got, want) {
				t.Errorf("private addresses %v, want %v", got, want)
			}
		}},
		{name: "healthcheck HTTP settings", ann: map[string]string{
			awsccm.AnnHealthCheckProtocol: "http", awsccm.AnnHealthCheckPort: "8080", awsccm.AnnHealthCheckPath: "/ready",
			awsccm.AnnHealthCheckInterval: "30", awsccm.AnnHealthCheckTimeout: "5", awsccm.AnnHealthyThreshold: "3", awsccm.AnnUnhealthyThreshold: "4",
		}, check: wantHealthCheck(fakeaws.HealthCheck{Enabled: true, Protocol: "HTTP", Port: "8080", Path: "/ready", IntervalSeconds: 30, TimeoutSeconds: 5, HealthyThreshold: 3, UnhealthyThreshold: 4})},
		{name: "healthcheck HTTPS", ann: map[string]string{awsccm.AnnHealthCheckProtocol: "HTTPS"},
			check: wantHealthCheck(fakeaws.HealthCheck{Enabled: true, Protocol: "HTTPS", Port: "traffic-port", Path: "/", IntervalSeconds: 30, TimeoutSeconds: 10, HealthyThreshold: 3, UnhealthyThreshold: 3})},
		{name: "healthcheck TCP on the traffic port", ann: map[string]string{awsccm.AnnHealthCheckProtocol: "TCP", awsccm.AnnHealthCheckPort: "traffic-port"},
			check: wantHealthCheck(fakeaws.HealthCheck{Enabled: true, Protocol: "TCP", Port: "traffic-port", IntervalSeconds: 30, TimeoutSeconds: 10, HealthyThreshold: 3, UnhealthyThreshold: 3})},
		{name: "externalTrafficPolicy Local", tweak: func(s *v1.Service) {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 32123
		}, check: wantHealthCheck(fakeaws.HealthCheck{Enabled: true, Protocol: "HTTP", Port: "32123", Path: "/healthz", IntervalSeconds: 10, TimeoutSeconds: 6, HealthyThreshold: 2, UnhealthyThreshold: 2})},
		{name: "externalTrafficPolicy Local with a port annotation", ann: map[string]string{awsccm.AnnHealthCheckPort: "traffic-port"}, tweak: func(s *v1.Service) {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 32123
		}, check: wantHealthCheck(fakeaws.HealthCheck{Enabled: true, Protocol: "HTTP", Port: "traffic-port", Path: "/healthz", IntervalSeconds: 10, TimeoutSeconds: 6, HealthyThreshold: 2, UnhealthyThreshold: 2})},
		{name: "proxy protocol", ann: map[string]string{awsccm.AnnProxyProtocol: "*"}, check: tgAttr("proxy_protocol_v2.enabled", "true")},
		{name: "target group attributes", ann: map[string]string{awsccm.AnnTargetGroupAttributes: "deregistration_delay.timeout_seconds=120, preserve_client_ip.enabled=false"},
			check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
				tgAttr("deregistration_delay.timeout_seconds", "120")(t, e, lb)
				tgAttr("preserve_client_ip.enabled", "false")(t, e, lb)
			}},
		{name: "cross zone", ann: map[string]string{awsccm.AnnCrossZone: "true"}, check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
			if got := lb.Attributes["load_balancing.cross_zone.enabled"]; got != "true" {
				t.Errorf("cross zone %q", got)
			}
		}},
		{name: "TLS on every port by default", ann: map[string]string{awsccm.AnnSSLCert: certARN}, ports: []v1.ServicePort{tcp("http", 80, 30080), tcp("https", 443, 30443)},
			check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
				want := map[int32]string{
					80:  "TLS->TCP:30080 cert=" + certARN + " policy=ELBSecurityPolicy-2016-08",
					443: "TLS->TCP:30443 cert=" + certARN + " policy=ELBSecurityPolicy-2016-08",
				}
				if got := listenerSummary(e, lb); !reflect.DeepEqual(got, want) {
					t.Errorf("listeners\n got %v\nwant %v", got, want)
				}
			}},
		{name: "TLS on named and numbered ports", ann: map[string]string{
			awsccm.AnnSSLCert: cert2ARN + "," + certARN, awsccm.AnnSSLPorts: "https, 8443", awsccm.AnnSSLNegotiationPolicy: "ELBSecurityPolicy-TLS13-1-2-Res-2021-06",
		}, ports: []v1.ServicePort{tcp("http", 80, 30080), tcp("https", 443, 30443), tcp("alt", 8443, 30843)},
			check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
				want := map[int32]string{
					80:   "TCP->TCP:30080",
					443:  "TLS->TCP:30443 cert=" + cert2ARN + " policy=ELBSecurityPolicy-TLS13-1-2-Res-2021-06",
					8443: "TLS->TCP:30843 cert=" + cert2ARN + " policy=ELBSecurityPolicy-TLS13-1-2-Res-2021-06",
				}
				if got := listenerSummary(e, lb); !reflect.DeepEqual(got, want) {
					t.Errorf("listeners\n got %v\nwant %v", got, want)
				}
			}},
		{name: "TLS to the backends", ann: map[string]string{awsccm.AnnSSLCert: certARN, awsccm.AnnSSLPorts: "443", awsccm.AnnBackendProtocol: "ssl"},
			ports: []v1.ServicePort{tcp("http", 80, 30080), tcp("https", 443, 30443)},
			check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
				want := map[int32]string{
					80:  "TCP->TCP:30080",
					443: "TLS->TLS:30443 cert=" + certARN + " policy=ELBSecurityPolicy-2016-08",
				}
				if got := listenerSummary(e, lb); !reflect.DeepEqual(got, want) {
					t.Errorf("listeners\n got %v\nwant %v", got, want)
				}
			}},
		{name: "UDP and TCP_UDP", ports: []v1.ServicePort{tcp("dns-tcp", 53, 30053), udp("dns-udp", 53, 30053), udp("syslog", 514, 30514), tcp("http", 80, 30080)},
			check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
				want := map[int32]string{53: "TCP_UDP->TCP_UDP:30053", 514: "UDP->UDP:30514", 80: "TCP->TCP:30080"}
				if got := listenerSummary(e, lb); !reflect.DeepEqual(got, want) {
					t.Errorf("listeners\n got %v\nwant %v", got, want)
				}
				wantIn := []string{"icmp/3-4/0.0.0.0/0", "tcp/53/0.0.0.0/0", "tcp/80/0.0.0.0/0", "udp/514/0.0.0.0/0", "udp/53/0.0.0.0/0"}
				if got := ingress(e.securityGroup(lb)); !slices.Equal(got, wantIn) {
					t.Errorf("ingress %v, want %v", got, wantIn)
				}
			}},
		{name: "TLS leaves UDP alone", ann: map[string]string{awsccm.AnnSSLCert: certARN},
			ports: []v1.ServicePort{tcp("dns-tcp", 53, 30053), udp("dns-udp", 53, 30053), tcp("https", 443, 30443)},
			check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
				want := map[int32]string{53: "TCP_UDP->TCP_UDP:30053", 443: "TLS->TCP:30443 cert=" + certARN + " policy=ELBSecurityPolicy-2016-08"}
				if got := listenerSummary(e, lb); !reflect.DeepEqual(got, want) {
					t.Errorf("listeners\n got %v\nwant %v", got, want)
				}
			}},
		{name: "dualstack", ann: map[string]string{awsccm.AnnIPAddressType: "dualstack"}, check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
			if lb.IPAddressType != "dualstack" {
				t.Errorf("IP address type %s", lb.IPAddressType)
			}
			if got, want := ingress(e.securityGroup(lb)), []string{"icmp/3-4/0.0.0.0/0", "tcp/80/0.0.0.0/0", "tcp/80/::/0"}; !slices.Equal(got, want) {
				t.Errorf("ingress %v, want %v", got, want)
			}
		}},
		{name: "source ranges", tweak: func(s *v1.Service) {
			s.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24", " 198.51.100.7/32", "2001:db8::/32"}
		}, check: func(t *testing.T, e *env, lb fakeaws.LoadBalancer) {
			want := []string{"icmp/3-4/198.51.100.7/32", "icmp/3-4/203.0.113.0/24", "tcp/80/198.51.100.7/32", "tcp/80/2001:db8::/32", "tcp/80/203.0.113.0/24"}
			if got := ingress(e.securityGroup(lb)); !slices.Equal(got, want) {
				t.Errorf("ingress %v, want %v", got, want)
			}
		}},
	}
	runLBCases(t, cases)
}

// An annotation the driver does not know is said once per sync, with a
// "did you mean", and ignored: the NLB is made from the rest, as the AWS
// CCM would make it.
func TestUnknownAnnotationIsIgnored(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	key := "service.beta.kubernetes.io/aws-load-balancer-healthcheck-intervall"
	svc := service(map[string]string{key: "10", awsccm.AnnHealthCheckInterval: "20"})
	if _, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, svc, nodes); err != nil {
		t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	lb := e.nlb()
	tg := e.targetGroup(e.listeners(lb.ARN)[80])
	if tg.HealthCheck.IntervalSeconds != 20 {
		t.Errorf("health check interval %d, want the known annotation's 20", tg.HealthCheck.IntervalSeconds)
	}
	var warned int
	for _, ev := range e.events() {
		if strings.HasPrefix(ev, "Warning UnknownLoadBalancerAnnotation "+key+": unknown annotation, ignored; did you mean "+awsccm.AnnHealthCheckInterval+"?") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings about %s, want 1", warned, key)
	}
}
