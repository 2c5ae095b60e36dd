package hetzner

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/core/annotations"
)

const testUID = "8c0cd0b4-5f43-4bd8-9b3b-1b7e3c7c2b11"

func testService(ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	if ports == nil {
		ports = []v1.ServicePort{tcpPort(80, 30080)}
	}
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: testUID, Annotations: ann},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: ports},
	}
}

func tcpPort(port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Protocol: v1.ProtocolTCP, Port: port, NodePort: nodePort}
}

func testNode(name, providerID string, labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

var testNodes = []*v1.Node{
	testNode("n1", "hcloud://11", map[string]string{"pool": "lb"}),
	testNode("n2", "hcloud://12", nil),
	testNode("n3", "", nil),                            // not initialized yet
	testNode("n4", "hrobot://321", nil),                // Robot
	testNode("n5", "aws:///eu-west-1a/i-1234", nil),    // another cloud
	testNode("n6", "hcloud://11", map[string]string{}), // same server twice
}

// parse runs parseSpec as a sync does, with a Network (ID 7) unless
// netID says otherwise.
func parse(t *testing.T, svc *v1.Service, cfg LoadBalancerConfig, netID int64) (*lbSpec, *annotations.Values) {
	t.Helper()
	a := LBAnnotations.Parse(svc)
	return parseSpec(svc, a, cfg, netID, testNodes), a
}

func problemKeys(a *annotations.Values) []string {
	err := a.Err()
	if err == nil {
		return nil
	}
	var keys []string
	for _, p := range err.(*annotations.InvalidError).Problems {
		keys = append(keys, p.Key)
	}
	slices.Sort(keys)
	return keys
}

func noteKeys(a *annotations.Values) []string {
	var keys []string
	for _, n := range a.Notes() {
		keys = append(keys, n.Key)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func TestParseSpecDefaults(t *testing.T) {
	s, a := parse(t, testService(nil), defaultLoadBalancerConfig(), 7)
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	if s.name != "a8c0cd0b45f434bd89b3b1b7e3c7c2b1" || s.rename {
		t.Errorf("name %q (rename %v), want hcloud CCM's a + UID, 32 characters", s.name, s.rename)
	}
	if s.typ != "" || s.algorithm != "" || s.publicIface != nil || s.svc.proxyProtocol != nil {
		t.Errorf("unset settings must leave the load balancer's: type %q algorithm %q public %v proxy %v", s.typ, s.algorithm, s.publicIface, s.svc.proxyProtocol)
	}
	if !s.ipv6 || !s.privateIngress || s.proxyProtocol || s.usePrivateIP {
		t.Errorf("status flags: ipv6 %v private ingress %v proxy %v; private IP %v", s.ipv6, s.privateIngress, s.proxyProtocol, s.usePrivateIP)
	}
	svcs := s.services()
	if len(svcs) != 1 || svcs[0].listen != 80 || svcs[0].dest != 30080 || svcs[0].protocol != protoTCP || svcs[0].http != nil {
		t.Fatalf("services %+v, want tcp 80 -> 30080", svcs)
	}
	if hc := svcs[0].hc; hc.protocol != protoTCP || svcs[0].hcPort() != 30080 || hc.interval != nil || hc.http != nil || s.svc.hcCustom {
		t.Errorf("health check %+v, want tcp on the node port and nothing else", hc)
	}
	if !slices.Equal(s.servers, []int64{11, 12}) {
		t.Errorf("servers %v, want [11 12]", s.servers)
	}
	if !slices.Equal(s.robotNodes, []string{"n4"}) || !slices.Equal(s.unknownNodes, []string{"n5"}) {
		t.Errorf("robot %v unknown %v", s.robotNodes, s.unknownNodes)
	}
}

func TestParseSpecProblems(t *testing.T) {
	cases := []struct {
		name string
		ann  map[string]string
		cfg  func(*LoadBalancerConfig)
		net  int64
		want []string
	}{
		{"protocol", map[string]string{AnnProtocol: "udp"}, nil, 7, []string{AnnProtocol}},
		{"algorithm", map[string]string{AnnAlgorithm: "fastest"}, nil, 7, []string{AnnAlgorithm}},
		{"health check port", map[string]string{AnnHCPort: "0"}, nil, 7, []string{AnnHCPort}},
		{"sub-second interval", map[string]string{AnnHCInterval: "1500ms"}, nil, 7, []string{AnnHCInterval}},
		{"no unit is seconds", map[string]string{AnnHCInterval: "15", AnnHCTimeout: "10s"}, nil, 7, nil},
		{"cookie lifetime", map[string]string{AnnProtocol: "http", AnnCookieLifetime: "forever"}, nil, 7, []string{AnnCookieLifetime}},
		{"private IPv4", map[string]string{AnnPrivateIPv4: "10.0.0"}, nil, 7, []string{AnnPrivateIPv4}},
		{"subnet", map[string]string{AnnPrivateSubnet: "10.0.0.0/33"}, nil, 7, []string{AnnPrivateSubnet}},
		{"node selector", map[string]string{AnnNodeSelector: "pool in (a"}, nil, 7, []string{AnnNodeSelector}},
		{"hostname", map[string]string{AnnHostname: "not a host!"}, nil, 7, []string{AnnHostname}},
		{"two locations", map[string]string{AnnLocation: "fsn1,nbg1"}, nil, 7, []string{AnnLocation}},
		{"status codes", map[string]string{AnnHCProtocol: "http", AnnHCStatusCodes: "2??,ok"}, nil, 7, []string{AnnHCStatusCodes}},
		{"bools", map[string]string{AnnIPv6Disabled: "yes please", AnnUsePrivateIP: "1"}, nil, 7, []string{AnnIPv6Disabled}},
		{"managed without domains", map[string]string{AnnProtocol: "https", AnnCertificateType: "managed"}, nil, 7, []string{AnnManagedCertDomains}},
		{"private IPs without a network", map[string]string{AnnUsePrivateIP: "true"}, nil, 0, []string{AnnUsePrivateIP}},
		{"configured private IPs without a network", nil, func(c *LoadBalancerConfig) { c.UsePrivateIP = true }, 0, []string{cfgKey("usePrivateIP")}},
		{"all at once", map[string]string{AnnProtocol: "ftp", AnnType: "LB11", AnnRedirectHTTP: "sure"}, nil, 7, []string{AnnRedirectHTTP, AnnProtocol, AnnType}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultLoadBalancerConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			_, a := parse(t, testService(tc.ann), cfg, tc.net)
			if got := problemKeys(a); !slices.Equal(got, tc.want) {
				t.Errorf("problems at %v, want %v (%v)", got, tc.want, a.Err())
			}
			if err := a.Err(); err != nil && !strings.Contains(err.Error(), "shop/web") {
				t.Errorf("the error does not name the Service: %v", err)
			}
		})
	}
}

func TestParseSpecPlaceAndNetwork(t *testing.T) {
	cfg := LoadBalancerConfig{Location: "fsn1"}
	cases := []struct {
		name           string
		ann            map[string]string
		net            int64
		location, zone string
		notes          []string
	}{
		{"config", nil, 7, "fsn1", "", nil},
		{"annotation wins", map[string]string{AnnLocation: "hel1"}, 7, "hel1", "", nil},
		// An empty location drops the configured one, as in hcloud CCM.
		{"zone instead", map[string]string{AnnLocation: "", AnnNetworkZone: "us-east"}, 7, "", "us-east", nil},
		{"location wins", map[string]string{AnnNetworkZone: "us-east"}, 7, "fsn1", "", nil},
		{"private settings without a network", map[string]string{AnnPrivateIPv4: "10.0.0.5", AnnPrivateSubnet: "10.0.0.0/24"}, 0, "fsn1", "", []string{AnnPrivateIPv4, AnnPrivateSubnet}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, a := parse(t, testService(tc.ann), cfg, tc.net)
			if err := a.Err(); err != nil {
				t.Fatal(err)
			}
			if s.location != tc.location || s.networkZone != tc.zone {
				t.Errorf("location %q zone %q, want %q %q", s.location, s.networkZone, tc.location, tc.zone)
			}
			if got := noteKeys(a); !slices.Equal(got, tc.notes) {
				t.Errorf("notes at %v, want %v", got, tc.notes)
			}
		})
	}
	s, _ := parse(t, testService(map[string]string{AnnPrivateIPv4: "10.0.0.5"}), LoadBalancerConfig{PrivateSubnetIPRange: "10.0.0.0/24"}, 7)
	if !s.privateIP.Equal(net.ParseIP("10.0.0.5")) || s.ipRange == nil || s.ipRange.String() != "10.0.0.0/24" {
		t.Errorf("private IP %v range %v", s.privateIP, s.ipRange)
	}
}

func TestParseSpecSwitches(t *testing.T) {
	on, off := true, false
	cases := []struct {
		name          string
		ann           map[string]string
		cfg           LoadBalancerConfig
		public, proxy *bool
	}{
		{"unset leaves them", nil, LoadBalancerConfig{}, nil, nil},
		{"config turns on", nil, LoadBalancerConfig{DisablePublicNetwork: true, UsesProxyProtocol: true}, &off, &on},
		{"annotation wins", map[string]string{AnnDisablePublicNetwork: "false", AnnProxyProtocol: "false"}, LoadBalancerConfig{DisablePublicNetwork: true, UsesProxyProtocol: true}, &on, &off},
	}
	str := func(b *bool) string {
		if b == nil {
			return "unset"
		}
		return show(*b)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := parse(t, testService(tc.ann), tc.cfg, 7)
			if str(s.publicIface) != str(tc.public) || str(s.svc.proxyProtocol) != str(tc.proxy) {
				t.Errorf("public interface %s proxy protocol %s, want %s %s", str(s.publicIface), str(s.svc.proxyProtocol), str(tc.public), str(tc.proxy))
			}
		})
	}
}

func TestParseSpecHTTP(t *testing.T) {
	s, a := parse(t, testService(map[string]string{
		AnnProtocol: "HTTPS", AnnHTTPCertificates: "12, wildcard", AnnRedirectHTTP: "true", AnnStickySessions: "true",
		AnnCookieName: "SRV", AnnCookieLifetime: "5m", AnnTimeoutIdle: "90",
	}, tcpPort(443, 30443)), defaultLoadBalancerConfig(), 7)
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	h := s.svc.http
	if s.svc.protocol != protoHTTPS || h == nil || !h.certsSet || !slices.Equal(s.certRefs, []string{"12", "wildcard"}) {
		t.Fatalf("protocol %q http %+v refs %v", s.svc.protocol, h, s.certRefs)
	}
	if *h.cookieName != "SRV" || *h.cookieLifetime != 5*time.Minute || *h.timeoutIdle != 90*time.Second || !*h.redirect || !*h.sticky {
		t.Errorf("http %+v", h)
	}

	// tcp: the http settings do not apply, and a Normal event says so.
	s, a = parse(t, testService(map[string]string{AnnRedirectHTTP: "true", AnnCertificateType: "managed"}), defaultLoadBalancerConfig(), 7)
	if s.svc.http != nil || s.managed != nil || a.Err() != nil {
		t.Errorf("tcp service got http %+v managed %+v (%v)", s.svc.http, s.managed, a.Err())
	}
	if got := noteKeys(a); !slices.Equal(got, []string{AnnCertificateType, AnnRedirectHTTP}) {
		t.Errorf("notes at %v", got)
	}

	// http: certificates and the redirect are for https services only.
	s, a = parse(t, testService(map[string]string{AnnProtocol: "http", AnnHTTPCertificates: "12", AnnRedirectHTTP: "true", AnnStickySessions: "true"}), defaultLoadBalancerConfig(), 7)
	if h := s.svc.http; h == nil || h.certsSet || h.redirect != nil || h.sticky == nil || a.Err() != nil {
		t.Errorf("http service got %+v (%v)", h, a.Err())
	}
	if got := noteKeys(a); !slices.Equal(got, []string{AnnHTTPCertificates, AnnRedirectHTTP}) {
		t.Errorf("notes at %v", got)
	}

	// managed: a default name, the uploaded list not applied.
	s, a = parse(t, testService(map[string]string{AnnProtocol: "https", AnnCertificateType: "managed", AnnHTTPCertificates: "12",
		AnnManagedCertDomains: "example.com,*.example.com", AnnManagedCertName: " "}), defaultLoadBalancerConfig(), 7)
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	if s.managed == nil || s.managed.name != "ccm-managed-certificate-"+testUID || len(s.managed.domains) != 2 || s.certRefs != nil {
		t.Errorf("managed %+v refs %v", s.managed, s.certRefs)
	}
	if got := noteKeys(a); !slices.Equal(got, []string{AnnHTTPCertificates, AnnManagedCertName}) {
		t.Errorf("notes at %v", got)
	}
}

func TestParseSpecHealthCheck(t *testing.T) {
	sec := func(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }
	cases := []struct {
		name     string
		ann      map[string]string
		cfg      HealthCheckConfig
		protocol string
		port     int
		interval *time.Duration
		http     bool
		notes    []string
	}{
		{"not customized: tcp on the node port, path not applied", map[string]string{AnnProtocol: "http", AnnHCPath: "/healthz"}, HealthCheckConfig{}, protoTCP, 30080, nil, false, []string{AnnHCPath}},
		{"a port customizes: the service's protocol", map[string]string{AnnProtocol: "http", AnnHCPort: "10256", AnnHCPath: "/healthz"}, HealthCheckConfig{}, protoHTTP, 10256, nil, true, nil},
		{"config customizes", map[string]string{AnnProtocol: "http"}, HealthCheckConfig{Interval: 5 * time.Second}, protoHTTP, 30080, sec(5), true, nil},
		{"annotation beats config", map[string]string{AnnHCInterval: "20s"}, HealthCheckConfig{Interval: 5 * time.Second}, protoTCP, 30080, sec(20), false, nil},
		{"tcp check: http settings not applied", map[string]string{AnnHCProtocol: "tcp", AnnHCPath: "/", AnnHCStatusCodes: "200"}, HealthCheckConfig{}, protoTCP, 30080, nil, false, []string{AnnHCPath, AnnHCStatusCodes}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, a := parse(t, testService(tc.ann), LoadBalancerConfig{HealthCheck: tc.cfg}, 7)
			if err := a.Err(); err != nil {
				t.Fatal(err)
			}
			sv := s.services()[0]
			if sv.hc.protocol != tc.protocol || sv.hcPort() != tc.port || (sv.hc.http != nil) != tc.http {
				t.Errorf("health check %s on %d (http %v), want %s on %d (http %v)", sv.hc.protocol, sv.hcPort(), sv.hc.http != nil, tc.protocol, tc.port, tc.http)
			}
			if show(sv.hc.interval) != show(tc.interval) && (sv.hc.interval == nil || tc.interval == nil || *sv.hc.interval != *tc.interval) {
				t.Errorf("interval %v, want %v", sv.hc.interval, tc.interval)
			}
			if got := noteKeys(a); !slices.Equal(got, tc.notes) {
				t.Errorf("notes at %v, want %v", got, tc.notes)
			}
		})
	}
}

func TestParseSpecPortsAndTargets(t *testing.T) {
	svc := testService(map[string]string{AnnNodeSelector: "pool=lb"}, tcpPort(80, 30080), v1.ServicePort{Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053}, tcpPort(443, 0))
	s, a := parse(t, svc, defaultLoadBalancerConfig(), 7)
	if got := problemKeys(a); !slices.Equal(got, []string{"spec.ports[2].nodePort"}) {
		t.Errorf("problems at %v, want the port without a node port", got)
	}
	if !slices.Equal(s.unsupported, []string{"53/UDP"}) || len(s.ports) != 1 {
		t.Errorf("unsupported %v ports %v", s.unsupported, s.ports)
	}
	if !slices.Equal(s.servers, []int64{11}) {
		t.Errorf("servers %v, want only the one the selector matches", s.servers)
	}
}

func TestParseSpecNotesWhatHetznerCannotDo(t *testing.T) {
	svc := testService(nil)
	svc.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
	svc.Spec.LoadBalancerIP = "203.0.113.9"
	_, a := parse(t, svc, defaultLoadBalancerConfig(), 7)
	if got := noteKeys(a); a.Err() != nil || !slices.Equal(got, []string{"spec.loadBalancerIP", "spec.loadBalancerSourceRanges"}) {
		t.Errorf("notes at %v (%v)", got, a.Err())
	}
}

func TestUnknownAnnotationIsAWarning(t *testing.T) {
	a := LBAnnotations.Parse(testService(map[string]string{annPrefix + "healthcheck-port": "8080"}))
	if a.Err() != nil || len(a.Warnings()) != 1 || !strings.Contains(a.Warnings()[0].Msg, AnnHCPort) {
		t.Errorf("warnings %v, error %v: want one, suggesting %s", a.Warnings(), a.Err(), AnnHCPort)
	}
}

func TestAnnotationsDeclareEveryUpstreamKey(t *testing.T) {
	// Every load-balancer.hetzner.cloud/* key hcloud CCM v1.35.0 defines.
	upstream := []string{"ipv4", "ipv4-rdns", "ipv6", "ipv6-rdns", "ipv6-disabled", "name", "disable-public-network",
		"disable-private-ingress", "use-private-ip", "private-ipv4", "private-subnet-ip-range", "hostname", "protocol",
		"algorithm-type", "type", "location", "network-zone", "node-selector", "uses-proxyprotocol", "http-cookie-name",
		"http-cookie-lifetime", "http-timeout-idle", "certificate-type", "http-certificates", "http-managed-certificate-name",
		"http-managed-certificate-acme-staging", "http-managed-certificate-domains", "http-redirect-http", "http-sticky-sessions",
		"health-check-protocol", "health-check-port", "health-check-interval", "health-check-timeout", "health-check-retries",
		"health-check-http-domain", "health-check-http-path", "health-check-http-validate-certificate", "http-status-codes", "id"}
	declared := map[string]bool{}
	for _, sp := range LBAnnotations.Specs() {
		declared[sp.Key] = true
	}
	for _, k := range upstream {
		if !declared[annPrefix+k] {
			t.Errorf("%s%s is not declared", annPrefix, k)
		}
	}
	if len(declared) != len(upstream) {
		t.Errorf("%d annotations declared, hcloud CCM has %d", len(declared), len(upstream))
	}
}

func TestSeconds(t *testing.T) {
	for in, want := range map[string]time.Duration{"15": 15 * time.Second, "15s": 15 * time.Second, "2m": 2 * time.Minute, " 30 ": 30 * time.Second} {
		if got, err := seconds(in); err != nil || got != want {
			t.Errorf("seconds(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "1.5s", "500ms", "soon"} {
		if _, err := seconds(in); err == nil {
			t.Errorf("seconds(%q) accepted", in)
		}
	}
}
