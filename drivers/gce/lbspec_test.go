package gce_test

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/drivers/gce"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

// healthCheckRanges are Google's health checkers, which the -hcfw rule
// must admit.
var healthCheckRanges = []string{"130.211.0.0/22", "209.85.152.0/22", "209.85.204.0/22", "35.191.0.0/16"}

// problem is an expected problem: on key, its message containing each of
// msgs.
type problem struct {
	key  string
	msgs []string
}

func TestInvalidServiceSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := []*v1.Node{node("n-0", gce.ProviderID(testProject, testZone, "n-0"))}
	withPorts := func(svc *v1.Service, ports ...v1.ServicePort) *v1.Service {
		svc.Spec.Ports = ports
		return svc
	}
	withIP := func(svc *v1.Service, ip string) *v1.Service {
		svc.Spec.LoadBalancerIP = ip
		return svc
	}
	withSources := func(svc *v1.Service, r ...string) *v1.Service {
		svc.Spec.LoadBalancerSourceRanges = r
		return svc
	}
	cases := []struct {
		name string
		svc  *v1.Service
		want []problem
	}{
		{"unknown load balancer type",
			service(map[string]string{gce.AnnLoadBalancerType: "Bogus"}),
			[]problem{{gce.AnnLoadBalancerType, []string{`"Bogus" is not valid`, "Internal or External"}}}},
		{"empty load balancer type",
			service(map[string]string{gce.AnnLoadBalancerType: ""}),
			[]problem{{gce.AnnLoadBalancerType, []string{"Internal or External"}}}},
		{"unknown legacy load balancer type",
			service(map[string]string{gce.AnnLegacyLoadBalancerType: "sideways"}),
			[]problem{{gce.AnnLegacyLoadBalancerType, []string{`"sideways" is not valid`, "Internal or External"}}}},
		{"contradicting load balancer types",
			service(map[string]string{gce.AnnLoadBalancerType: "Internal", gce.AnnLegacyLoadBalancerType: "External"}),
			[]problem{{gce.AnnLegacyLoadBalancerType, []string{"contradicts " + gce.AnnLoadBalancerType}}}},
		{"subnetwork not a name",
			service(map[string]string{gce.AnnLoadBalancerType: "Internal", gce.AnnInternalSubnet: "Bad_Subnet"}),
			[]problem{{gce.AnnInternalSubnet, []string{`"Bad_Subnet" is not valid`, "a subnetwork name in the cluster's region"}}}},
		{"subnetwork empty",
			service(map[string]string{gce.AnnLoadBalancerType: "Internal", gce.AnnInternalSubnet: " "}),
			[]problem{{gce.AnnInternalSubnet, []string{"is not valid", "a subnetwork name"}}}},
		{"subnetwork on an external load balancer",
			service(map[string]string{gce.AnnInternalSubnet: "default"}),
			[]problem{{gce.AnnInternalSubnet, []string{"applies to internal load balancers only", gce.AnnLoadBalancerType + ": Internal"}}}},
		{"global access not a bool",
			service(map[string]string{gce.AnnLoadBalancerType: "Internal", gce.AnnAllowGlobalAccess: "yes please"}),
			[]problem{{gce.AnnAllowGlobalAccess, []string{`"yes please" is not valid`, "true or false"}}}},
		{"global access on an external load balancer",
			service(map[string]string{gce.AnnLoadBalancerType: "External", gce.AnnAllowGlobalAccess: "true"}),
			[]problem{{gce.AnnAllowGlobalAccess, []string{"applies to internal load balancers only"}}}},
		{"unknown network tier",
			service(map[string]string{gce.AnnNetworkTier: "Gold"}),
			[]problem{{gce.AnnNetworkTier, []string{`"Gold" is not valid`, "Premium or Standard"}}}},
		{"network tier on an internal load balancer",
			service(map[string]string{gce.AnnLoadBalancerType: "Internal", gce.AnnNetworkTier: "Standard"}),
			[]problem{{gce.AnnNetworkTier, []string{"applies to external load balancers only"}}}},
		{"load balancer IP not an address",
			withIP(service(nil), "not-an-ip"),
			[]problem{{"spec.loadBalancerIP", []string{`"not-an-ip" is not an IP address`}}}},
		{"source range not a CIDR",
			withSources(service(nil), "10.0.0.0/8", "10.0.0.0/33"),
			[]problem{{"spec.loadBalancerSourceRanges", []string{`"10.0.0.0/33" is not a CIDR`}}}},
		{"source range without a prefix length",
			withSources(service(nil), "192.0.2.7"),
			[]problem{{"spec.loadBalancerSourceRanges", []string{`"192.0.2.7" is not a CIDR`}}}},
		{"SCTP port",
			withPorts(service(nil), tcp(80, 30080), v1.ServicePort{Name: "sctp", Protocol: v1.ProtocolSCTP, Port: 9000, NodePort: 30900}),
			[]problem{{"spec.ports", []string{"protocol SCTP (port 9000) is not supported", "TCP or UDP"}}}},
		{"TCP and UDP ports",
			withPorts(service(nil), tcp(53, 30053), udp(53, 30054)),
			[]problem{{"spec.ports", []string{"one protocol", "TCP and UDP"}}}},
		{"every problem at once",
			withIP(service(map[string]string{gce.AnnLoadBalancerType: "Bogus", gce.AnnNetworkTier: "Gold", gce.AnnAllowGlobalAccess: "maybe"}), "300.1.1.1"),
			[]problem{
				{gce.AnnLoadBalancerType, []string{"Internal or External"}},
				{gce.AnnNetworkTier, []string{"Premium or Standard"}},
				{gce.AnnAllowGlobalAccess, []string{"true or false"}},
				{"spec.loadBalancerIP", []string{"not an IP address"}},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.events()
			_, err := e.ensure(c.svc, nodes)
			got := invalid(t, err)
			if len(got) != len(c.want) {
				t.Errorf("problems %v, want %d", got, len(c.want))
			}
			for _, w := range c.want {
				msg, ok := got[w.key]
				if !ok {
					t.Errorf("no problem on %s; got %v", w.key, got)
					continue
				}
				for _, m := range w.msgs {
					if !strings.Contains(msg, m) {
						t.Errorf("%s: %q does not say %q", w.key, msg, m)
					}
				}
				if !strings.Contains(err.Error(), w.key) {
					t.Errorf("error %q does not name %s", err, w.key)
				}
			}
			if !strings.Contains(err.Error(), "nothing was changed in the cloud") {
				t.Errorf("error %q does not say nothing was changed", err)
			}
			// Each problem is a Warning event on the Service.
			ev := e.events()
			if len(ev) != len(c.want) {
				t.Errorf("events %q, want %d", ev, len(c.want))
			}
			for _, x := range ev {
				if !strings.HasPrefix(x, "Warning "+annotations.Reason+" ") {
					t.Errorf("event %q is not a %s warning", x, annotations.Reason)
				}
			}
			// UpdateLoadBalancer refuses the same way.
			err = e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", c.svc, nodes)
			invalid(t, err)
		})
	}
	if n := e.fake.Faults().Total(); n != 0 {
		t.Errorf("%d API calls for invalid Services (%v), want none", n, e.fake.Faults().Calls())
	}
	if live := e.live(); len(live) != 0 {
		t.Errorf("resources made for invalid Services: %v", live)
	}
}

func TestInternalWithoutSubnetwork(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *gce.Config) { c.Subnetwork = "" }))
	nodes := e.nodes("n", 1, testZone)
	_, err := e.ensure(service(map[string]string{gce.AnnLoadBalancerType: "Internal"}), nodes)
	got := invalid(t, err)
	if msg := got[gce.AnnInternalSubnet]; !strings.Contains(msg, "needs a subnetwork") || !strings.Contains(msg, "drivers.gce.subnetwork") {
		t.Errorf("problems %v, want one on %s naming drivers.gce.subnetwork", got, gce.AnnInternalSubnet)
	}
	if e.mutations() != 0 {
		t.Errorf("changing calls for an invalid Service: %v", e.fake.Faults().Calls())
	}
	// With the annotation the same Service is fine.
	e.mustEnsure(service(map[string]string{gce.AnnLoadBalancerType: "Internal", gce.AnnInternalSubnet: "default"}), nodes)
}

// TestValidServiceSettings creates a load balancer for each supported
// setting and checks what the fake holds.
func TestValidServiceSettings(t *testing.T) {
	t.Parallel()
	internal := map[string]string{gce.AnnLoadBalancerType: "Internal"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	type check func(t *testing.T, e *env, base string, fr fakegce.ForwardingRule)
	external := func(tier string) check {
		return func(t *testing.T, e *env, base string, fr fakegce.ForwardingRule) {
			if fr.LoadBalancingScheme != "EXTERNAL" || fr.NetworkTier != tier || shortURL(fr.Target) != "projects/"+testProject+"/regions/"+testRegion+"/targetPools/"+base || fr.BackendService != "" {
				t.Errorf("forwarding rule %+v, want an EXTERNAL %s one to the target pool", fr, tier)
			}
			if len(e.fake.BackendServices()) != 0 {
				t.Errorf("an external load balancer made backend services")
			}
		}
	}
	internalIn := func(subnet, cidr string, global bool) check {
		return func(t *testing.T, e *env, base string, fr fakegce.ForwardingRule) {
			if fr.LoadBalancingScheme != "INTERNAL" || fr.Target != "" || shortURL(fr.BackendService) != "projects/"+testProject+"/regions/"+testRegion+"/backendServices/"+base {
				t.Errorf("forwarding rule %+v, want an INTERNAL one to the backend service", fr)
			}
			if shortURL(fr.Subnetwork) != "projects/"+testProject+"/regions/"+testRegion+"/subnetworks/"+subnet {
				t.Errorf("subnetwork %s, want %s", fr.Subnetwork, subnet)
			}
			if !netip.MustParsePrefix(cidr).Contains(netip.MustParseAddr(fr.IPAddress)) {
				t.Errorf("address %s is not in %s", fr.IPAddress, cidr)
			}
			if fr.AllowGlobalAccess != global {
				t.Errorf("allowGlobalAccess = %v, want %v", fr.AllowGlobalAccess, global)
			}
			if len(e.fake.TargetPools()) != 0 {
				t.Errorf("an internal load balancer made target pools")
			}
		}
	}
	ports := func(portRange string, list []string, all bool) check {
		return func(t *testing.T, e *env, base string, fr fakegce.ForwardingRule) {
			got := slices.Clone(fr.Ports)
			slices.Sort(got)
			if fr.PortRange != portRange || !slices.Equal(got, list) || fr.AllPorts != all {
				t.Errorf("ports: range %q list %q all %v, want %q %q %v", fr.PortRange, fr.Ports, fr.AllPorts, portRange, list, all)
			}
		}
	}
	firewall := func(proto string, ports, sources []string) check {
		return func(t *testing.T, e *env, base string, fr fakegce.ForwardingRule) {
			fw := e.firewall("k8s-fw-" + base)
			if len(fw.Allowed) != 1 || fw.Allowed[0].IPProtocol != proto || !slices.Equal(sorted(fw.Allowed[0].Ports), sorted(ports)) {
				t.Errorf("firewall allows %+v, want %s %v", fw.Allowed, proto, ports)
			}
			if !slices.Equal(sorted(fw.SourceRanges), sorted(sources)) {
				t.Errorf("firewall sources %v, want %v", fw.SourceRanges, sources)
			}
			if !slices.Equal(fw.TargetTags, []string{testNodeTag}) || fw.Direction != "INGRESS" || lastSeg(fw.Network) != "default" {
				t.Errorf("firewall %+v, want INGRESS to tag %s in the default network", fw, testNodeTag)
			}
		}
	}
	protocol := func(p string) check {
		return func(t *testing.T, e *env, base string, fr fakegce.ForwardingRule) {
			if fr.IPProtocol != p {
				t.Errorf("IPProtocol %s, want %s", fr.IPProtocol, p)
			}
		}
	}
	healthPort := func(port int) check {
		return func(t *testing.T, e *env, base string, fr fakegce.ForwardingRule) {
			// Upstream's names: the nodes' shared check, or with a
			// health check node port the Service's own.
			hcName, hcfwName := e.nodesHC(), e.nodesHC()+"-http-hc"
			if port != 10256 {
				hcName, hcfwName = base, "k8s-"+base+"-http-hc"
			}
			if fr.LoadBalancingScheme == "EXTERNAL" {
				if hc := e.httpHealthCheck(hcName); hc.Port != port || hc.RequestPath != "/healthz" {
					t.Errorf("legacy health check %+v, want port %d /healthz", hc, port)
				}
			} else {
				hcfwName = hcName + "-hc"
				if hc := e.healthCheck(hcName); hc.HTTPHealthCheck == nil || hc.HTTPHealthCheck.Port != port || hc.HTTPHealthCheck.RequestPath != "/healthz" {
					t.Errorf("health check %+v, want HTTP port %d /healthz", hc, port)
				}
			}
			hcfw := e.firewall(hcfwName)
			if len(hcfw.Allowed) != 1 || hcfw.Allowed[0].IPProtocol != "tcp" || !slices.Equal(hcfw.Allowed[0].Ports, []string{itoa(port)}) {
				t.Errorf("health-check firewall allows %+v, want tcp %d", hcfw.Allowed, port)
			}
			if !slices.Equal(sorted(hcfw.SourceRanges), healthCheckRanges) {
				t.Errorf("health-check firewall sources %v, want %v", hcfw.SourceRanges, healthCheckRanges)
			}
		}
	}

	cases := []struct {
		name   string
		ann    map[string]string
		mutate func(*v1.Service)
		checks []check
	}{
		{"defaults", nil, nil, []check{external("PREMIUM"), ports("80-80", nil, false), protocol("TCP"),
			firewall("tcp", []string{"80"}, []string{"0.0.0.0/0"}), healthPort(10256)}},
		{"explicit external", map[string]string{gce.AnnLoadBalancerType: "External"}, nil, []check{external("PREMIUM")}},
		{"standard tier", map[string]string{gce.AnnNetworkTier: "Standard"}, nil, []check{external("STANDARD")}},
		{"tier in lower case", map[string]string{gce.AnnNetworkTier: "standard"}, nil, []check{external("STANDARD")}},
		{"premium tier", map[string]string{gce.AnnNetworkTier: "Premium"}, nil, []check{external("PREMIUM")}},
		{"internal", internal, nil, []check{internalIn("default", "10.128.0.0/20", false), ports("", []string{"80"}, false), protocol("TCP"), healthPort(10256)}},
		{"internal in lower case", map[string]string{gce.AnnLoadBalancerType: " internal "}, nil, []check{internalIn("default", "10.128.0.0/20", false)}},
		{"legacy internal", map[string]string{gce.AnnLegacyLoadBalancerType: "Internal"}, nil, []check{internalIn("default", "10.128.0.0/20", false)}},
		{"both names agree", with(internal, gce.AnnLegacyLoadBalancerType, "Internal"), nil, []check{internalIn("default", "10.128.0.0/20", false)}},
		{"internal subnetwork", with(internal, gce.AnnInternalSubnet, "lb-subnet"), nil, []check{internalIn("lb-subnet", "10.200.0.0/24", false)}},
		{"internal subnetwork URL", with(internal, gce.AnnInternalSubnet, "projects/"+testProject+"/regions/"+testRegion+"/subnetworks/lb-subnet"), nil,
			[]check{internalIn("lb-subnet", "10.200.0.0/24", false)}},
		{"global access", with(internal, gce.AnnAllowGlobalAccess, "true"), nil, []check{internalIn("default", "10.128.0.0/20", true)}},
		{"no global access", with(internal, gce.AnnAllowGlobalAccess, "false"), nil, []check{internalIn("default", "10.128.0.0/20", false)}},
		{"external port range", nil, func(s *v1.Service) {
			s.Spec.Ports = []v1.ServicePort{tcp(8080, 30002), tcp(443, 30001), tcp(80, 30000)}
		},
			[]check{ports("80-8080", nil, false), firewall("tcp", []string{"80", "443", "8080"}, []string{"0.0.0.0/0"})}},
		{"internal port list", internal, func(s *v1.Service) {
			s.Spec.Ports = []v1.ServicePort{tcp(8080, 30002), tcp(443, 30001), tcp(80, 30000)}
		},
			[]check{ports("", []string{"443", "80", "8080"}, false), firewall("tcp", []string{"80", "443", "8080"}, []string{"0.0.0.0/0"})}},
		{"internal with more than five ports", internal, func(s *v1.Service) {
			s.Spec.Ports = []v1.ServicePort{tcp(1, 30001), tcp(2, 30002), tcp(3, 30003), tcp(4, 30004), tcp(5, 30005), tcp(6, 30006)}
		}, []check{ports("", nil, true), firewall("tcp", []string{"1-6"}, []string{"0.0.0.0/0"})}},
		{"UDP", nil, func(s *v1.Service) { s.Spec.Ports = []v1.ServicePort{udp(53, 30053)} },
			[]check{protocol("UDP"), ports("53-53", nil, false), firewall("udp", []string{"53"}, []string{"0.0.0.0/0"}), healthPort(10256)}},
		{"internal UDP", internal, func(s *v1.Service) { s.Spec.Ports = []v1.ServicePort{udp(53, 30053)} },
			[]check{protocol("UDP"), firewall("udp", []string{"53"}, []string{"0.0.0.0/0"}), func(t *testing.T, e *env, base string, _ fakegce.ForwardingRule) {
				if bs := e.backendService(base); bs.Protocol != "UDP" {
					t.Errorf("backend service protocol %s, want UDP", bs.Protocol)
				}
			}}},
		{"source ranges", nil, func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{" 192.168.1.5/24", "10.0.0.0/8"} },
			[]check{firewall("tcp", []string{"80"}, []string{"10.0.0.0/8", "192.168.1.0/24"}), healthPort(10256)}},
		{"local traffic policy", nil, func(s *v1.Service) {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 32123
		}, []check{healthPort(32123)}},
		{"internal local traffic policy", internal, func(s *v1.Service) {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 32123
		}, []check{healthPort(32123)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.fake.AddSubnetwork(fakegce.Subnetwork{Name: "lb-subnet", Region: testRegion, Network: "default", IPCidrRange: "10.200.0.0/24"})
			nodes := e.nodes("n", 2, testZone)
			svc := service(c.ann)
			if c.mutate != nil {
				c.mutate(svc)
			}
			st := e.mustEnsure(svc, nodes)
			base := e.lbName(svc)
			fr := e.forwardingRule(base)
			if st.Ingress[0].IP != fr.IPAddress {
				t.Errorf("status IP %s, forwarding rule has %s", st.Ingress[0].IP, fr.IPAddress)
			}
			for _, ch := range c.checks {
				ch(t, e, base, fr)
			}
			// The settings are stable: a second pass changes nothing.
			before := e.mutations()
			e.mustEnsure(svc, nodes)
			if d := e.mutations() - before; d != 0 {
				t.Errorf("a second EnsureLoadBalancer made %d changing calls: %v", d, e.fake.Faults().Calls())
			}
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

// An annotation the driver does not know is a warning, with a "did you
// mean", and is otherwise ignored, as GCE's own CCM ignores it: the load
// balancer is made from the rest.
func TestUnknownAnnotationIsIgnored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 1, testZone)
	key := "networking.gke.io/internal-load-balancer-subnetwork"
	e.mustEnsure(service(map[string]string{key: "default"}), nodes)
	var warned int
	for _, ev := range e.events() {
		if strings.HasPrefix(ev, "Warning "+annotations.ReasonIgnored+" "+key+": unknown annotation, ignored; did you mean "+gce.AnnInternalSubnet+"?") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings about %s, want 1", warned, key)
	}
}
